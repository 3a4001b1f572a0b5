// Element-type traits for GPU kernels: DType -> C++ type, fp32 conversions, and a runtime
// switch that turns a DType into a template argument (the only place a macro is used for it).
#pragma once

#include <stdexcept>

#include "dtype.h"
#include "port.h"

namespace aiter_lite {

template <DType T> struct DTypeToType;
template <> struct DTypeToType<DType::kFloat32> { using type = float; };
template <> struct DTypeToType<DType::kFloat16> { using type = half_t; };
template <> struct DTypeToType<DType::kBFloat16> { using type = bfloat16_t; };

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(half_t v) { return __half2float(v); }
__device__ __forceinline__ float to_float(bfloat16_t v) { return __bfloat162float(v); }

template <typename T> __device__ __forceinline__ T from_float(float v);
template <> __device__ __forceinline__ float from_float<float>(float v) { return v; }
template <> __device__ __forceinline__ half_t from_float<half_t>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ bfloat16_t from_float<bfloat16_t>(float v) { return __float2bfloat16_rn(v); }

// Reads one element of a runtime-typed buffer as fp32 (weights and bias: read once per thread,
// so the switch costs nothing and saves a template dimension).
__device__ __forceinline__ float load_as_float(const void* ptr, DType t, int64_t idx) {
  switch (t) {
    case DType::kFloat16: return to_float(static_cast<const half_t*>(ptr)[idx]);
    case DType::kBFloat16: return to_float(static_cast<const bfloat16_t*>(ptr)[idx]);
    default: return static_cast<const float*>(ptr)[idx];
  }
}

}  // namespace aiter_lite

// Calls the lambda-like body with `scalar_t` bound to the C++ type of `dtype`.
#define AITER_LITE_DISPATCH_DTYPE(dtype, ...)                                              \
  [&] {                                                                                  \
    switch (dtype) {                                                                     \
      case ::aiter_lite::DType::kFloat32: { using scalar_t = float; return __VA_ARGS__(); }      \
      case ::aiter_lite::DType::kFloat16: { using scalar_t = half_t; return __VA_ARGS__(); }     \
      case ::aiter_lite::DType::kBFloat16: { using scalar_t = bfloat16_t; return __VA_ARGS__(); } \
    }                                                                                    \
    throw std::invalid_argument("aiter_lite: unsupported dtype");                        \
  }()
