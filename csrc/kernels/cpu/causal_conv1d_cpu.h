// Helpers shared by the CPU causal conv1d kernels (forward, update, backward): the vectorizable
// sigmoid, the fp32 convolution loops, and staging of small matrices as fp32. Torch-free.
#pragma once

#include <cstdint>
#include <vector>

#include "causal_conv1d_params.h"
#include "cpu_dtype.h"
#include "cpu_parallel.h"

namespace aiter_lite {
namespace cpu_conv {

// sigmoid(v) = 1 / (1 + exp(-v)), exp by Cephes range reduction plus a degree-6 polynomial
// (about 1 ulp). Unlike std::exp this vectorizes without -ffast-math. Saturation is a select at
// the end, not a clamp of the input: GCC would otherwise clone the division into each branch.
inline float sigmoid(float v) {
  const float x = -v;
  // Adding 1.5 * 2^23 rounds x / ln2 to an integer n that lands in the low mantissa bits.
  const float shifted = x * 1.44269504088896341f + 12582912.f;
  const float n = shifted - 12582912.f;
  const int32_t n_int = int32_t(float_to_bits(shifted)) - 0x4b400000;
  float r = x - n * 0.693359375f;  // x - n * ln2, with ln2 split in two for precision
  r = r + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float exp_x = (p * r * r + r + 1.f) * bits_to_float(uint32_t(n_int + 127) << 23);
  const float s = 1.f / (1.f + exp_x);
  // Beyond |v| = 80 the fp32 sigmoid is 0 or 1 (and the reduction above is out of range).
  return v > 80.f ? 1.f : (v < -80.f ? 0.f : s);
}

inline void silu_inplace(float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] *= sigmoid(y[i]);
}

// out[t] = act(bias + sum_{j<width} w[j] * xs[t + j]) for t < kOut: a block of outputs held in
// registers while the taps stream past (the fixed count lets GCC fully vectorize it).
// kMasked: tap j of output t counts only where mask[j * ldm + t] is nonzero (packed sequences). It is a
// select, not a product, so an inf or NaN in another sequence cannot leak in.
template <int64_t kOut, bool kMasked>
inline void conv_block(const float* xs, const float* w, int64_t width, float bias, bool silu, const float* mask,
                       int64_t ldm, float* out) {
  float acc[kOut];
  for (int64_t i = 0; i < kOut; ++i) acc[i] = bias;
  for (int64_t j = 0; j < width; ++j)
    for (int64_t i = 0; i < kOut; ++i) {
      const float term = w[j] * xs[j + i];
      acc[i] += kMasked ? (mask[j * ldm + i] != 0.f ? term : 0.f) : term;
    }
  if (silu) silu_inplace(acc, kOut);
  for (int64_t i = 0; i < kOut; ++i) out[i] = acc[i];
}

// The same for t < n, one channel: xs starts width-1 positions before the first output. Blocks
// of 64 outputs (8 ymm / 4 zmm registers), then 8, then single ones for the tail.
template <bool kMasked>
void conv_row(const float* xs, const float* w, int64_t width, float bias, bool silu, int64_t n, const float* mask,
              int64_t ldm, float* __restrict out) {
  auto mask_at = [mask](int64_t t) { return kMasked ? mask + t : mask; };  // no arithmetic on nullptr
  int64_t t = 0;
  for (; t + 64 <= n; t += 64) conv_block<64, kMasked>(xs + t, w, width, bias, silu, mask_at(t), ldm, out + t);
  for (; t + 8 <= n; t += 8) conv_block<8, kMasked>(xs + t, w, width, bias, silu, mask_at(t), ldm, out + t);
  for (; t < n; ++t) conv_block<1, kMasked>(xs + t, w, width, bias, silu, mask_at(t), ldm, out + t);
}

// The same for a channel-last tile, vectorized across its channels r < rows:
// out[t * ld + r] = act(bias[r] + sum_j w[j * w_ld + r] * xs[(t + j) * ld + r]) for t < n.
// mask (may be nullptr): tap j of output t is skipped where mask[j * ldm + t] is zero.
inline void conv_channels(const float* xs, int64_t ld, const float* w, int64_t w_ld, const float* bias,
                          int64_t width, bool silu, int64_t n, int64_t rows, float* __restrict out,
                          const float* mask = nullptr, int64_t ldm = 0) {
  for (int64_t t = 0; t < n; ++t) {
    float* y = out + t * ld;
    for (int64_t r = 0; r < rows; ++r) y[r] = bias[r];
    for (int64_t j = 0; j < width; ++j) {
      if (mask != nullptr && mask[j * ldm + t] == 0.f) continue;
      const float* xj = xs + (t + j) * ld;
      const float* wj = w + j * w_ld;
      for (int64_t r = 0; r < rows; ++r) y[r] += wj[r] * xj[r];
    }
    if (silu) silu_inplace(y, rows);
  }
}

// A [rows, cols] matrix of any dtype as contiguous fp32 (weights and bias are small); zeros for nullptr.
inline std::vector<float> to_float_matrix(const void* ptr, DType dtype, int64_t rows, int64_t cols,
                                          int64_t row_stride, int64_t col_stride) {
  std::vector<float> out(rows * cols, 0.f);
  if (ptr == nullptr) return out;
  dispatch_dtype(dtype, "causal_conv1d weight/bias", [&](auto tag) {
    using W = typename decltype(tag)::type;
    for (int64_t r = 0; r < rows; ++r)
      load_row(static_cast<const W*>(ptr) + r * row_stride, col_stride, out.data() + r * cols, cols);
  });
  return out;
}

// Python-style (non-negative) modulo.
inline int64_t wrap(int64_t v, int64_t n) { return ((v % n) + n) % n; }

}  // namespace cpu_conv
}  // namespace aiter_lite
