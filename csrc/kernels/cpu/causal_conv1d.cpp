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

// conv_row() works in blocks of kBlock outputs held in registers (8 ymm / 4 zmm), so its
// buffers are padded to whole blocks.
constexpr int64_t kBlock = 64;
inline int64_t round_up_block(int64_t n) { return (n + kBlock - 1) / kBlock * kBlock; }

// out[t] = act(bias + sum_{j<width} w[j] * xs[t + j]) for t < round_up_block(n): one channel,
// xs starting width-1 positions before the first output and readable up to the padded end
// (values past n are don't-cares). Used by the forward and the decode update.
void conv_row(const float* xs, const float* w, int64_t width, float bias, bool silu, int64_t n,
              float* __restrict out) {
  for (int64_t t0 = 0; t0 < n; t0 += kBlock) {
    float acc[kBlock];
    for (int64_t i = 0; i < kBlock; ++i) acc[i] = bias;
    for (int64_t j = 0; j < width; ++j) {
      const float wj = w[j];
      const float* xj = xs + t0 + j;
      for (int64_t i = 0; i < kBlock; ++i) acc[i] += wj * xj[i];
    }
    if (silu) silu_inplace(acc, kBlock);
    for (int64_t i = 0; i < kBlock; ++i) out[t0 + i] = acc[i];
  }
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
  const int64_t tile_seq = channel_last ? 64 : 8 * kBlock;
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

template <typename T>
void update_impl(const CausalConv1dUpdateParams& p, const std::vector<float>& w, const std::vector<float>& bias) {
  const T* x = static_cast<const T*>(p.x);
  T* state = static_cast<T*>(p.conv_state);
  T* out = static_cast<T*>(p.out);
  const int64_t halo = p.width - 1;
  const int64_t len = p.seqlen;
  const int64_t slen = p.state_len;
  const int64_t sstride = p.state_seq_stride;
  const bool circular = p.cache_seqlens != nullptr;

#pragma omp parallel if (p.batch * p.dim * (len + halo) >= (1 << 15))
  {
    std::vector<float> xs(halo + round_up_block(len)), ys(round_up_block(len));
#pragma omp for schedule(static)
    for (int64_t row = 0; row < p.batch * p.dim; ++row) {
      const int64_t b = row / p.dim;
      const int64_t d = row % p.dim;
      T* out_row = out + b * p.out_batch_stride + d * p.out_dim_stride;
      const int64_t slot = p.conv_state_indices ? p.conv_state_indices[b] : b;
      if (slot < 0 || slot >= p.state_batch) {  // padded entry: zero output, state untouched
        for (int64_t t = 0; t < len; ++t) out_row[t * p.out_seq_stride] = from_float<T>(0.f);
        continue;
      }
      T* st = state + slot * p.state_batch_stride + d * p.state_dim_stride;
      const T* x_row = x + b * p.x_batch_stride + d * p.x_dim_stride;
      const int64_t start = circular ? p.cache_seqlens[b] : 0;

      // Window: the width-1 state entries before the new tokens, then the new tokens.
      for (int64_t i = 0; i < halo; ++i) {
        const int64_t pos = circular ? wrap(start - halo + i, slen) : slen - halo + i;
        xs[i] = to_float(st[pos * sstride]);
      }
      load_row(x_row, p.x_seq_stride, xs.data() + halo, len);
      conv_row(xs.data(), w.data() + d * p.width, p.width, bias[d], p.silu, len, ys.data());
      store_row(ys.data(), out_row, p.out_seq_stride, len);

      // State update (after the window was read). x and state share a dtype: copy raw values.
      if (slen == 0) continue;
      if (circular) {
        for (int64_t t = 0; t < len; ++t) st[wrap(start + t, slen) * sstride] = x_row[t * p.x_seq_stride];
      } else {  // keep the last slen entries of cat(state, x); ascending s reads before it writes
        const int64_t keep = std::max<int64_t>(0, slen - len);
        for (int64_t s = 0; s < keep; ++s) st[s * sstride] = st[(s + len) * sstride];
        for (int64_t s = keep; s < slen; ++s) st[s * sstride] = x_row[(len - slen + s) * p.x_seq_stride];
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
  const auto w = to_float_matrix(p.weight, p.w_dtype, p.dim, p.width, p.w_dim_stride, p.w_width_stride);
  const auto bias = to_float_matrix(p.bias, p.w_dtype, p.dim, 1, p.bias_stride, 1);
  dispatch_dtype(p.x_dtype, "causal_conv1d_update", [&](auto tag) {
    update_impl<typename decltype(tag)::type>(p, w, bias);
  });
}

}  // namespace aiter_lite
