// CPU causal depthwise conv1d: forward and decode update (see causal_conv1d_params.h).
// Both stage x in contiguous fp32 (this absorbs any stride and dtype), compute with loops that
// GCC vectorizes, and convert back on the store. OpenMP over tiles (forward) or rows (update).
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "causal_conv1d_params.h"
#include "cpu_dtype.h"

namespace aiter_lite {
namespace {

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
template <int64_t kOut>
inline void conv_block(const float* xs, const float* w, int64_t width, float bias, bool silu, float* out) {
  float acc[kOut];
  for (int64_t i = 0; i < kOut; ++i) acc[i] = bias;
  for (int64_t j = 0; j < width; ++j)
    for (int64_t i = 0; i < kOut; ++i) acc[i] += w[j] * xs[j + i];
  if (silu) silu_inplace(acc, kOut);
  for (int64_t i = 0; i < kOut; ++i) out[i] = acc[i];
}

// The same for t < n, one channel: xs starts width-1 positions before the first output. Blocks
// of 64 outputs (8 ymm / 4 zmm registers), then 8, then single ones for the tail.
void conv_row(const float* xs, const float* w, int64_t width, float bias, bool silu, int64_t n,
              float* __restrict out) {
  int64_t t = 0;
  for (; t + 64 <= n; t += 64) conv_block<64>(xs + t, w, width, bias, silu, out + t);
  for (; t + 8 <= n; t += 8) conv_block<8>(xs + t, w, width, bias, silu, out + t);
  for (; t < n; ++t) conv_block<1>(xs + t, w, width, bias, silu, out + t);
}

// The same for a channel-last tile, vectorized across its channels r < rows:
// out[t * ld + r] = act(bias[r] + sum_j w[j * w_ld + r] * xs[(t + j) * ld + r]) for t < n.
void conv_channels(const float* xs, int64_t ld, const float* w, int64_t w_ld, const float* bias, int64_t width,
                   bool silu, int64_t n, int64_t rows, float* __restrict out) {
  for (int64_t t = 0; t < n; ++t) {
    float* y = out + t * ld;
    for (int64_t r = 0; r < rows; ++r) y[r] = bias[r];
    for (int64_t j = 0; j < width; ++j) {
      const float* xj = xs + (t + j) * ld;
      const float* wj = w + j * w_ld;
      for (int64_t r = 0; r < rows; ++r) y[r] += wj[r] * xj[r];
    }
    if (silu) silu_inplace(y, rows);
  }
}

// A [rows, cols] matrix of any dtype as contiguous fp32 (weights and bias are small).
std::vector<float> to_float_matrix(const void* ptr, DType dtype, int64_t rows, int64_t cols,
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

// Forward tiles are staged with x's contiguous direction innermost: [channel][position] and
// conv_row() normally, [position][channel] and conv_channels() when x is channel-last. w is
// [dim][width] in the first case and [width][dim] in the second.
template <typename T>
void fwd_impl(const CausalConv1dFwdParams& p, bool channel_last, const std::vector<float>& w,
              const std::vector<float>& bias) {
  const T* x = static_cast<const T*>(p.x);
  T* out = static_cast<T*>(p.out);
  const int64_t halo = p.width - 1;
  const int64_t tile_rows = channel_last ? 128 : 16;
  const int64_t tile_seq = channel_last ? 64 : 512;
  const int64_t dim_blocks = (p.dim + tile_rows - 1) / tile_rows;
  const int64_t seq_blocks = (p.seqlen + tile_seq - 1) / tile_seq;
  const int64_t items = p.batch * dim_blocks * seq_blocks;

#pragma omp parallel if (p.batch * p.dim * p.seqlen * p.width >= (1 << 15))
  {
    std::vector<float> xs(tile_rows * (tile_seq + halo)), ys(tile_rows * tile_seq);
#pragma omp for schedule(static)
    for (int64_t item = 0; item < items; ++item) {
      const int64_t b = item / (dim_blocks * seq_blocks);
      const int64_t d0 = (item / seq_blocks) % dim_blocks * tile_rows;
      const int64_t t0 = item % seq_blocks * tile_seq;
      const int64_t rows = std::min(tile_rows, p.dim - d0);
      const int64_t n = std::min(tile_seq, p.seqlen - t0);
      // Staged positions are t0 - halo .. t0 + n - 1; the first `pad` are the causal zeros.
      const int64_t pad = std::max<int64_t>(0, halo - t0);
      const T* src = x + b * p.x_batch_stride + d0 * p.x_dim_stride + (t0 - halo + pad) * p.x_seq_stride;
      T* dst = out + b * p.out_batch_stride + d0 * p.out_dim_stride + t0 * p.out_seq_stride;

      if (!channel_last) {
        const int64_t ld = tile_seq + halo;
        for (int64_t r = 0; r < rows; ++r) {
          std::fill_n(xs.data() + r * ld, pad, 0.f);
          load_row(src + r * p.x_dim_stride, p.x_seq_stride, xs.data() + r * ld + pad, n + halo - pad);
          conv_row(xs.data() + r * ld, w.data() + (d0 + r) * p.width, p.width, bias[d0 + r], p.silu, n,
                   ys.data() + r * tile_seq);
          store_row(ys.data() + r * tile_seq, dst + r * p.out_dim_stride, p.out_seq_stride, n);
        }
      } else {
        const int64_t ld = tile_rows;
        std::fill_n(xs.data(), pad * ld, 0.f);
        for (int64_t t = pad; t < n + halo; ++t)
          load_row(src + (t - pad) * p.x_seq_stride, p.x_dim_stride, xs.data() + t * ld, rows);
        conv_channels(xs.data(), ld, w.data() + d0, p.dim, bias.data() + d0, p.width, p.silu, n, rows, ys.data());
        for (int64_t t = 0; t < n; ++t)
          store_row(ys.data() + t * ld, dst + t * p.out_seq_stride, p.out_dim_stride, rows);
      }
    }
  }
}

// Python-style (non-negative) modulo.
inline int64_t wrap(int64_t v, int64_t n) { return ((v % n) + n) % n; }

// Decode update, w as [width][dim]. A work item is (sequence, block of channels): rows are short
// (seqlen is often 1), so the conv runs vectorized across channels, with the tile staged as
// [position][channel] like a channel-last forward tile.
template <typename T>
void update_impl(const CausalConv1dUpdateParams& p, const std::vector<float>& w, const std::vector<float>& bias) {
  constexpr int64_t kRows = 64;
  const T* x = static_cast<const T*>(p.x);
  T* state = static_cast<T*>(p.conv_state);
  T* out = static_cast<T*>(p.out);
  const int64_t halo = p.width - 1;
  const int64_t len = p.seqlen;
  const int64_t slen = p.state_len;
  const int64_t sstride = p.state_seq_stride;
  const bool circular = p.cache_seqlens != nullptr;
  const int64_t dim_blocks = (p.dim + kRows - 1) / kRows;

#pragma omp parallel if (p.batch * p.dim * (len + halo) >= (1 << 15))
  {
    std::vector<float> xs(kRows * (halo + len)), ys(kRows * len);
#pragma omp for schedule(static)
    for (int64_t item = 0; item < p.batch * dim_blocks; ++item) {
      const int64_t b = item / dim_blocks;
      const int64_t d0 = item % dim_blocks * kRows;
      const int64_t rows = std::min(kRows, p.dim - d0);
      T* out_blk = out + b * p.out_batch_stride + d0 * p.out_dim_stride;
      const int64_t slot = p.conv_state_indices ? p.conv_state_indices[b] : b;
      if (slot < 0 || slot >= p.state_batch) {  // padded entry: zero output, state untouched
        for (int64_t t = 0; t < len; ++t)
          for (int64_t r = 0; r < rows; ++r) out_blk[t * p.out_seq_stride + r * p.out_dim_stride] = from_float<T>(0.f);
        continue;
      }
      T* st = state + slot * p.state_batch_stride + d0 * p.state_dim_stride;
      const T* x_blk = x + b * p.x_batch_stride + d0 * p.x_dim_stride;
      const int64_t start = circular ? p.cache_seqlens[b] : 0;

      // Window: the width-1 state entries before the new tokens, then the new tokens.
      for (int64_t i = 0; i < halo; ++i) {
        const int64_t pos = circular ? wrap(start - halo + i, slen) : slen - halo + i;
        load_row(st + pos * sstride, p.state_dim_stride, xs.data() + i * kRows, rows);
      }
      for (int64_t t = 0; t < len; ++t)
        load_row(x_blk + t * p.x_seq_stride, p.x_dim_stride, xs.data() + (halo + t) * kRows, rows);
      conv_channels(xs.data(), kRows, w.data() + d0, p.dim, bias.data() + d0, p.width, p.silu, len, rows, ys.data());
      for (int64_t t = 0; t < len; ++t)
        store_row(ys.data() + t * kRows, out_blk + t * p.out_seq_stride, p.out_dim_stride, rows);

      // State update (after the window was read). x and state share a dtype: copy raw values.
      if (slen == 0) continue;
      for (int64_t r = 0; r < rows; ++r) {
        T* s = st + r * p.state_dim_stride;
        const T* xr = x_blk + r * p.x_dim_stride;
        if (circular) {
          for (int64_t t = 0; t < len; ++t) s[wrap(start + t, slen) * sstride] = xr[t * p.x_seq_stride];
        } else {  // keep the last slen entries of cat(state, x); ascending i reads before it writes
          const int64_t keep = std::max<int64_t>(0, slen - len);
          for (int64_t i = 0; i < keep; ++i) s[i * sstride] = s[(i + len) * sstride];
          for (int64_t i = keep; i < slen; ++i) s[i * sstride] = xr[(len - slen + i) * p.x_seq_stride];
        }
      }
    }
  }
}

}  // namespace

// p.variant selects GPU kernels; every value runs the same code here.
void causal_conv1d_fwd(const CausalConv1dFwdParams& p, void* /*stream: CPU*/) {
  if (p.width < 1) throw std::invalid_argument("aiter_lite: causal_conv1d_fwd: width must be >= 1");
  if (p.batch <= 0 || p.dim <= 0 || p.seqlen <= 0) return;
  const bool channel_last = p.x_dim_stride < p.x_seq_stride && p.dim > 1;
  const auto w = channel_last
                     ? to_float_matrix(p.weight, p.w_dtype, p.width, p.dim, p.w_width_stride, p.w_dim_stride)
                     : to_float_matrix(p.weight, p.w_dtype, p.dim, p.width, p.w_dim_stride, p.w_width_stride);
  const auto bias = to_float_matrix(p.bias, p.w_dtype, p.dim, 1, p.bias_stride, 1);
  dispatch_dtype(p.x_dtype, "causal_conv1d_fwd", [&](auto tag) {
    fwd_impl<typename decltype(tag)::type>(p, channel_last, w, bias);
  });
}

void causal_conv1d_update(const CausalConv1dUpdateParams& p, void* /*stream: CPU*/) {
  if (p.width < 1) throw std::invalid_argument("aiter_lite: causal_conv1d_update: width must be >= 1");
  if (p.state_len < p.width - 1)
    throw std::invalid_argument("aiter_lite: causal_conv1d_update: state_len must be >= width - 1");
  if (p.batch <= 0 || p.dim <= 0 || p.seqlen <= 0) return;
  const auto w = to_float_matrix(p.weight, p.w_dtype, p.width, p.dim, p.w_width_stride, p.w_dim_stride);
  const auto bias = to_float_matrix(p.bias, p.w_dtype, p.dim, 1, p.bias_stride, 1);
  dispatch_dtype(p.x_dtype, "causal_conv1d_update", [&](auto tag) {
    update_impl<typename decltype(tag)::type>(p, w, bias);
  });
}

}  // namespace aiter_lite
