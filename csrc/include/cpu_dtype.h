// Element types for the CPU kernels: fp16/bf16 storage types, their fp32 conversions (round to
// nearest even on the way back, inf/NaN preserved), bulk row conversions, and dispatch_dtype(),
// which turns a runtime DType into a template argument. Torch-free, like every kernel header.
#pragma once

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>

#ifdef __F16C__
#include <immintrin.h>
#endif

#include "dtype.h"

namespace aiter_lite {

// 16-bit storage types. Distinct structs (not bare uint16_t) so that overloads and templates can
// tell fp16 from bf16.
struct Half { uint16_t bits; };
struct BFloat16 { uint16_t bits; };

template <DType T> struct CpuType;
template <> struct CpuType<DType::kFloat32> { using type = float; };
template <> struct CpuType<DType::kFloat16> { using type = Half; };
template <> struct CpuType<DType::kBFloat16> { using type = BFloat16; };

inline uint32_t float_to_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

inline float bits_to_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// ---- scalar conversions -------------------------------------------------------------------

inline float to_float(float v) { return v; }

inline float to_float(BFloat16 v) { return bits_to_float(uint32_t(v.bits) << 16); }

inline float to_float(Half v) {
#ifdef __F16C__
  return _cvtsh_ss(v.bits);
#else
  const uint32_t sign = uint32_t(v.bits & 0x8000u) << 16;
  const uint32_t exp = (v.bits >> 10) & 0x1fu;
  const uint32_t mant = v.bits & 0x3ffu;
  if (exp == 0x1f) return bits_to_float(sign | 0x7f800000u | (mant << 13) | (mant ? 0x400000u : 0u));  // inf / quiet NaN
  if (exp == 0) {                                                            // zero / subnormal
    const float mag = float(mant) * 5.9604644775390625e-8f;                  // mant * 2^-24, exact
    return sign ? -mag : mag;
  }
  return bits_to_float(sign | ((exp + 112) << 23) | (mant << 13));  // rebias 15 -> 127
#endif
}

template <typename T> T from_float(float v);

template <> inline float from_float<float>(float v) { return v; }

template <> inline BFloat16 from_float<BFloat16>(float v) {
  const uint32_t u = float_to_bits(v);
  if ((u & 0x7fffffffu) > 0x7f800000u) return BFloat16{uint16_t((u >> 16) | 0x40u)};  // quiet NaN
  return BFloat16{uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16)};  // round to nearest even
}

template <> inline Half from_float<Half>(float v) {
#ifdef __F16C__
  return Half{uint16_t(_cvtss_sh(v, _MM_FROUND_TO_NEAREST_INT))};
#else
  uint32_t u = float_to_bits(v);
  const uint16_t sign = uint16_t((u >> 16) & 0x8000u);
  u &= 0x7fffffffu;
  if (u > 0x7f800000u) return Half{uint16_t(sign | 0x7e00u | ((u >> 13) & 0x3ffu))};  // quiet NaN
  if (u >= 0x477ff000u) return Half{uint16_t(sign | 0x7c00u)};  // >= 65520 rounds to inf
  if (u < 0x38800000u) {
    // Below the smallest normal (2^-14): adding 0.5 makes the FPU round |v| to a multiple of
    // 2^-24 (the fp16 subnormal step) with round-to-nearest-even; the low mantissa bits are it.
    const float shifted = bits_to_float(u) + 0.5f;
    return Half{uint16_t(sign | (float_to_bits(shifted) - 0x3f000000u))};
  }
  // Normal: rebias the exponent (127 -> 15) and round the mantissa to 10 bits, ties to even;
  // a carry out of the mantissa correctly bumps the exponent.
  u += 0xc8000fffu + ((u >> 13) & 1u);
  return Half{uint16_t(sign | (u >> 13))};
#endif
}

// ---- row conversions ----------------------------------------------------------------------
// dst[i] = float(src[i * stride]) / dst[i * stride] = T(src[i]) for i < n. The stride-1 loops
// are the hot ones; they vectorize (fp16 through F16C where available).

template <typename T>
inline void load_row(const T* src, int64_t stride, float* dst, int64_t n) {
  int64_t i = 0;
  if (stride == 1) {
#ifdef __F16C__
    if constexpr (std::is_same_v<T, Half>) {
      for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
    }
#endif
    for (; i < n; ++i) dst[i] = to_float(src[i]);
  } else {
    for (; i < n; ++i) dst[i] = to_float(src[i * stride]);
  }
}

template <typename T>
inline void store_row(const float* src, T* dst, int64_t stride, int64_t n) {
  int64_t i = 0;
  if (stride == 1) {
#ifdef __F16C__
    if constexpr (std::is_same_v<T, Half>) {
      for (; i + 8 <= n; i += 8)
        _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
    }
#endif
    for (; i < n; ++i) dst[i] = from_float<T>(src[i]);
  } else {
    for (; i < n; ++i) dst[i * stride] = from_float<T>(src[i]);
  }
}

// ---- runtime -> compile-time dtype --------------------------------------------------------

template <typename T> struct TypeTag { using type = T; };

// Calls f(TypeTag<T>{}) with T the storage type of `dtype`; use it with a generic lambda:
//   dispatch_dtype(p.dtype, "matmul", [&](auto tag) { using T = typename decltype(tag)::type; ... });
template <typename F>
decltype(auto) dispatch_dtype(DType dtype, const char* op, F&& f) {
  switch (dtype) {
    case DType::kFloat32: return f(TypeTag<float>{});
    case DType::kFloat16: return f(TypeTag<Half>{});
    case DType::kBFloat16: return f(TypeTag<BFloat16>{});
  }
  throw std::invalid_argument(std::string("aiter_lite: ") + op + ": unsupported dtype " +
                              std::to_string(static_cast<int32_t>(dtype)));
}

}  // namespace aiter_lite
