// Shared pieces of the matmul kernels: typed kernel arguments, the grouped tile order, and packing
// of 16-bit elements for vector loads and stores. CUDA and HIP.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "dtype_traits.cuh"
#include "matmul_epilogue_math.h"
#include "matmul_params.h"
#include "port.h"

namespace aiter_lite {
namespace matmul_detail {

// How the SIMT kernel reads one operand tile (chosen on the host from strides and alignment).
enum class SimtLoad : int32_t {
  kVecK = 0,     // K contiguous: packs of 4 along K as one vector load each
  kVecMN = 1,    // M (for A) / N (for B) contiguous: packs of 4 along M/N as one vector load
  kScalarK = 2,  // any strides: packs of 4 along K, 4 scalar loads (K has the smaller stride)
  kScalarMN = 3, // any strides: packs of 4 along M/N, 4 scalar loads
};

// Kernel arguments: MatmulParams with typed pointers, sizes narrowed to int32 (checked on the host)
// and per-launch decisions. Element (b, m, k) of A is a[b * a_batch_stride + m * a_row_stride +
// k * a_col_stride]; B is [batch, k, n] and out [batch, m, n] likewise. Strides of size-1 dims are 0.
// a, b and out never alias (checked in Python), so the kernels read a and b through __restrict__.
template <typename T>
struct GemmArgs {
  const T* a;
  const T* b;
  T* out;  // float* in truth under epi.out_fp32 (16-bit T): see with_out_type
  int64_t batch;  // entries in this launch (gridDim.z); the host slices larger batches
  int64_t a_batch_stride, a_row_stride, a_col_stride;
  int64_t b_batch_stride, b_row_stride, b_col_stride;
  int64_t out_batch_stride, out_row_stride, out_col_stride;
  int32_t m, n, k;
  int32_t tiles_m, tiles_n;  // block tiles along M and N (blockIdx.x covers tiles_m * tiles_n)
  int32_t work_items;        // tensor-core kernel only: tiles_m * tiles_n * batch (< 2^31), its loop bound
  SimtLoad a_load, b_load;   // SIMT kernel only
  bool out_vec;              // out rows contiguous and aligned for the epilogue's vector stores
  bool epi_active;           // epi is not the identity: apply_epilogue runs on every output
  MatmulEpilogue epi;        // bias, activation, residual (residual in T, may be out itself)
};

// The value stored at out[z][row][col] for the fp32 accumulator v: act(alpha v + bias) + beta residual,
// in fp32 (MatmulEpilogue). The residual is read by the thread that then writes the same element.
template <typename T>
__device__ __forceinline__ float apply_epilogue(const MatmulEpilogue& e, float v, int64_t z, int64_t row,
                                                int64_t col) {
  v *= e.alpha;
  if (e.bias != nullptr) v += load_as_float(e.bias, e.bias_dtype, col * e.bias_stride);
  v = matmul_activation(e.activation, v);
  if (e.residual != nullptr) {
    const int64_t at = z * e.residual_batch_stride + row * e.residual_row_stride + col * e.residual_col_stride;
    // The residual has out's dtype: fp32 under out_fp32 (16-bit kernels only), else T.
    const float r = sizeof(T) == 2 && e.out_fp32 ? static_cast<const float*>(e.residual)[at]
                                                 : to_float(static_cast<const T*>(e.residual)[at]);
    v = fmaf(e.beta, r, v);
  }
  return v;
}

// The element type of out in a kernel of input type T: T, or float for out_fp32 (16-bit T only).
// with_out_type(T kernel's args, f) calls f with a pointer to out of the right type, so a store loop is
// written once for both: f(static_cast<T*>) or f(static_cast<float*>).
template <typename T, typename F>
__device__ __forceinline__ void with_out_type(T* out, bool out_fp32, F&& f) {
  if constexpr (sizeof(T) == 2) {
    if (out_fp32) {
      f(reinterpret_cast<float*>(out));
      return;
    }
  }
  f(out);
}

// Block tile -> (m0, n0) in a grouped order: kGroupM consecutive blocks walk down M before moving
// along N, so blocks running together share A row-panels and B column-panels in L2.
struct TileOrigin {
  int32_t m0, n0;
};

template <int kBM, int kBN>
__device__ __forceinline__ TileOrigin grouped_tile_origin(int32_t tile, int32_t tiles_m, int32_t tiles_n) {
  constexpr int32_t kGroupM = 8;
  const int32_t group_size = kGroupM * tiles_n;
  const int32_t group = tile / group_size;
  const int32_t first_m = group * kGroupM;
  const int32_t group_m = min(tiles_m - first_m, kGroupM);
  const int32_t local = tile - group * group_size;
  return {(first_m + local % group_m) * kBM, (local / group_m) * kBN};
}

// ---- element packing -----------------------------------------------------------------------------

template <typename T>
__device__ __forceinline__ uint16_t bits16(T v) {
  static_assert(sizeof(T) == 2, "16-bit types only");
  uint16_t u;
  memcpy(&u, &v, 2);
  return u;
}

template <typename T>
__device__ __forceinline__ float bits16_to_float(uint32_t bits);
template <>
__device__ __forceinline__ float bits16_to_float<half_t>(uint32_t bits) {
  const uint16_t u = static_cast<uint16_t>(bits);
  half_t h;
  memcpy(&h, &u, 2);
  return to_float(h);
}
template <>
__device__ __forceinline__ float bits16_to_float<bfloat16_t>(uint32_t bits) {
  return __uint_as_float(bits << 16);  // bf16 is the top half of an fp32
}

// Four consecutive elements, as one 16-byte (fp32) or 8-byte (fp16/bf16) register pack.
template <typename T>
struct Pack4 {
  using type = uint2;  // 4 x 16-bit
  static_assert(sizeof(T) == 2, "");
  __device__ static type zero() { return make_uint2(0u, 0u); }
  __device__ static type load(const T* p) { return *reinterpret_cast<const uint2*>(p); }
  __device__ static float get(const type& v, int j) {
    const uint32_t w = j < 2 ? v.x : v.y;
    return bits16_to_float<T>((j & 1) ? (w >> 16) : (w & 0xffffu));
  }
  __device__ static void set(type& v, int j, T e) {
    const uint32_t u = bits16(e);
    uint32_t& w = j < 2 ? v.x : v.y;
    w = (j & 1) ? ((w & 0x0000ffffu) | (u << 16)) : ((w & 0xffff0000u) | u);
  }
};

template <>
struct Pack4<float> {
  using type = float4;
  __device__ static type zero() { return make_float4(0.f, 0.f, 0.f, 0.f); }
  __device__ static type load(const float* p) { return *reinterpret_cast<const float4*>(p); }
  __device__ static float get(const type& v, int j) { return j == 0 ? v.x : j == 1 ? v.y : j == 2 ? v.z : v.w; }
  __device__ static void set(type& v, int j, float e) {
    if (j == 0) v.x = e; else if (j == 1) v.y = e; else if (j == 2) v.z = e; else v.w = e;
  }
};

// ---- output stores -------------------------------------------------------------------------------

template <typename T>
__device__ __forceinline__ uint32_t pack2(float x, float y) {
  return static_cast<uint32_t>(bits16(from_float<T>(x))) | (static_cast<uint32_t>(bits16(from_float<T>(y))) << 16);
}

// Two consecutive outputs; p aligned to 2 elements.
template <typename T>
__device__ __forceinline__ void store2(T* p, float x, float y) {
  *reinterpret_cast<uint32_t*>(p) = pack2<T>(x, y);
}
template <>
__device__ __forceinline__ void store2<float>(float* p, float x, float y) {
  *reinterpret_cast<float2*>(p) = make_float2(x, y);
}

// Four consecutive outputs; p aligned to 4 elements.
template <typename T>
__device__ __forceinline__ void store4(T* p, float x, float y, float z, float w) {
  *reinterpret_cast<uint2*>(p) = make_uint2(pack2<T>(x, y), pack2<T>(z, w));
}
template <>
__device__ __forceinline__ void store4<float>(float* p, float x, float y, float z, float w) {
  *reinterpret_cast<float4*>(p) = make_float4(x, y, z, w);
}

}  // namespace matmul_detail
}  // namespace aiter_lite
