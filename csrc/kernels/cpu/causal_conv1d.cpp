// CPU causal depthwise conv1d forward (see causal_conv1d_params.h for every field's meaning):
// plain rows, initial/final states, packed sequences (seq_idx), varlen rows (cu_seqlens) and a
// state pool (state_indices, has_initial_state, pad_slot_id).
// Tiles of x are staged in contiguous fp32 (this absorbs any stride and dtype), convolved with loops
// that GCC vectorizes, and converted back on the store. OpenMP over tiles; then, after the barrier
// (every read of an initial state is done, so final states may overwrite them), one pass writes the
// final states.
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "causal_conv1d_cpu.h"

namespace aiter_lite {
namespace {

using cpu_conv::conv_channels;
using cpu_conv::conv_row;

// Where row b of the forward lives and which state row it uses.
struct Row {
  int64_t x_offset = 0, out_offset = 0;  // elements to position 0 of the row
  int64_t len = 0;
  int64_t slot = 0;         // state row
  bool skip = false;        // padded entry of a serving batch: nothing read or written
  bool reads_init = false;  // the window before t = 0 reads the initial state (else zeros)
};

std::vector<Row> describe_rows(const CausalConv1dFwdParams& p) {
  std::vector<Row> rows(p.batch);
  for (int64_t b = 0; b < p.batch; ++b) {
    Row& r = rows[b];
    if (p.cu_seqlens != nullptr) {
      r.x_offset = p.cu_seqlens[b] * p.x_seq_stride;
      r.out_offset = p.cu_seqlens[b] * p.out_seq_stride;
      r.len = p.cu_seqlens[b + 1] - p.cu_seqlens[b];
    } else {
      r.x_offset = b * p.x_batch_stride;
      r.out_offset = b * p.out_batch_stride;
      r.len = p.seqlen;
    }
    r.slot = p.state_indices != nullptr ? p.state_indices[b] : b;
    if (p.state_indices != nullptr && (r.slot == p.pad_slot_id || r.slot < 0)) {
      r.skip = true;
      continue;
    }
    const bool has_states = p.initial_states != nullptr || p.final_states != nullptr;
    if (has_states && r.slot >= p.state_rows)
      throw std::invalid_argument("aiter_lite: causal_conv1d_fwd: state index " + std::to_string(r.slot) +
                                  " of row " + std::to_string(b) + " is past the " + std::to_string(p.state_rows) +
                                  " state rows");
    if (r.len < 0) throw std::invalid_argument("aiter_lite: causal_conv1d_fwd: cu_seqlens decreases");
    r.reads_init = p.initial_states != nullptr && (p.has_initial_state == nullptr || p.has_initial_state[b]);
  }
  return rows;
}

// mask[j * ld + i] = 1 where tap j of output t0 + i reads its position (same sequence), else 0;
// seq holds the sequence index of staged positions t0 - halo ... t0 + n - 1.
void build_mask(const int32_t* seq, int64_t width, int64_t n, int64_t ld, float* mask) {
  const int64_t halo = width - 1;
  for (int64_t j = 0; j < width; ++j)
    for (int64_t i = 0; i < n; ++i) mask[j * ld + i] = seq[i + j] == seq[i + halo] ? 1.f : 0.f;
}

// Forward tiles are staged with x's contiguous direction innermost: [channel][position] and
// conv_row() normally, [position][channel] and conv_channels() when x is channel-last. w is
// [dim][width] in the first case and [width][dim] in the second.
template <typename T>
void fwd_tiles(const CausalConv1dFwdParams& p, const std::vector<Row>& row_info, bool channel_last,
               const std::vector<float>& w, const std::vector<float>& bias) {
  const T* x = static_cast<const T*>(p.x);
  const T* init = static_cast<const T*>(p.initial_states);
  T* out = static_cast<T*>(p.out);
  const int64_t halo = p.width - 1;
  const int64_t tile_rows = channel_last ? 128 : 16;
  const int64_t tile_seq = channel_last ? 64 : 512;
  int64_t max_len = 0;
  for (const Row& r : row_info) max_len = std::max(max_len, r.len);
  const int64_t dim_blocks = (p.dim + tile_rows - 1) / tile_rows;
  const int64_t seq_blocks = (max_len + tile_seq - 1) / tile_seq;
  const int64_t items = p.batch * dim_blocks * seq_blocks;
  const bool masked = p.seq_idx != nullptr;

#pragma omp parallel if (worth_threads(p.batch * p.dim * max_len * p.width))
  {
    std::vector<float> xs(tile_rows * (tile_seq + halo)), ys(tile_rows * tile_seq);
    std::vector<float> mask(masked ? p.width * tile_seq : 0);
    std::vector<int32_t> seq(masked ? tile_seq + halo : 0);
#pragma omp for schedule(static)
    for (int64_t item = 0; item < items; ++item) {
      const int64_t b = item / (dim_blocks * seq_blocks);
      const int64_t d0 = (item / seq_blocks) % dim_blocks * tile_rows;
      const int64_t t0 = item % seq_blocks * tile_seq;
      const Row& row = row_info[b];
      if (row.skip || t0 >= row.len) continue;
      const int64_t rows = std::min(tile_rows, p.dim - d0);
      const int64_t n = std::min(tile_seq, row.len - t0);
      // Staged positions are t0 - halo .. t0 + n - 1; the first `pad` are before the row's start:
      // initial-state entries state_len + position, or zeros.
      const int64_t pad = std::max<int64_t>(0, halo - t0);
      const T* src = x + row.x_offset + d0 * p.x_dim_stride + (t0 - halo + pad) * p.x_seq_stride;
      const T* init_src = row.reads_init ? init + row.slot * p.init_batch_stride + d0 * p.init_dim_stride +
                                               (p.state_len + t0 - halo) * p.init_seq_stride
                                         : nullptr;
      T* dst = out + row.out_offset + d0 * p.out_dim_stride + t0 * p.out_seq_stride;
      if (masked) {  // positions before the start continue the row's first sequence
        const int32_t* s = p.seq_idx + b * p.seq_idx_batch_stride;
        for (int64_t i = 0; i < n + halo; ++i) seq[i] = s[std::max<int64_t>(0, t0 - halo + i) * p.seq_idx_seq_stride];
        build_mask(seq.data(), p.width, n, tile_seq, mask.data());
      }

      if (!channel_last) {
        const int64_t ld = tile_seq + halo;
        for (int64_t r = 0; r < rows; ++r) {
          float* xr = xs.data() + r * ld;
          if (init_src != nullptr)
            load_row(init_src + r * p.init_dim_stride, p.init_seq_stride, xr, pad);
          else
            std::fill_n(xr, pad, 0.f);
          load_row(src + r * p.x_dim_stride, p.x_seq_stride, xr + pad, n + halo - pad);
          const float* wr = w.data() + (d0 + r) * p.width;
          float* yr = ys.data() + r * tile_seq;
          if (masked)
            conv_row<true>(xr, wr, p.width, bias[d0 + r], p.silu, n, mask.data(), tile_seq, yr);
          else
            conv_row<false>(xr, wr, p.width, bias[d0 + r], p.silu, n, nullptr, 0, yr);
          if (masked)
            for (int64_t i = 0; i < n; ++i) yr[i] = seq[i + halo] < 0 ? 0.f : yr[i];  // padding tokens
          store_row(yr, dst + r * p.out_dim_stride, p.out_seq_stride, n);
        }
      } else {
        const int64_t ld = tile_rows;
        for (int64_t t = 0; t < pad; ++t) {
          if (init_src != nullptr)
            load_row(init_src + t * p.init_seq_stride, p.init_dim_stride, xs.data() + t * ld, rows);
          else
            std::fill_n(xs.data() + t * ld, rows, 0.f);
        }
        for (int64_t t = pad; t < n + halo; ++t)
          load_row(src + (t - pad) * p.x_seq_stride, p.x_dim_stride, xs.data() + t * ld, rows);
        conv_channels(xs.data(), ld, w.data() + d0, p.dim, bias.data() + d0, p.width, p.silu, n, rows, ys.data(),
                      masked ? mask.data() : nullptr, tile_seq);
        if (masked)
          for (int64_t t = 0; t < n; ++t)
            if (seq[t + halo] < 0) std::fill_n(ys.data() + t * ld, rows, 0.f);  // padding tokens
        for (int64_t t = 0; t < n; ++t)
          store_row(ys.data() + t * ld, dst + t * p.out_seq_stride, p.out_dim_stride, rows);
      }
    }
  }
}

// final_states[slot, d, k] = position L - state_len + k of cat(initial window or zeros, x[b, d, :L]),
// zeros where neither reaches; with seq_idx, only positions of the row's last sequence count.
// Ascending k reads index L + k >= k of the initial state before writing index k, so final_states may
// alias initial_states. Values are copied raw (states share x's dtype).
template <typename T>
void write_final_states(const CausalConv1dFwdParams& p, const std::vector<Row>& row_info) {
  const T* x = static_cast<const T*>(p.x);
  const T* init = static_cast<const T*>(p.initial_states);
  T* fin = static_cast<T*>(p.final_states);
  const int64_t halo = p.width - 1;
  const T zero = from_float<T>(0.f);
#pragma omp parallel for schedule(static) if (worth_threads(p.batch * p.dim * p.state_len))
  for (int64_t item = 0; item < p.batch * p.dim; ++item) {
    const int64_t b = item / p.dim, d = item % p.dim;
    const Row& row = row_info[b];
    if (row.skip) continue;
    const int64_t len = row.len;
    const T* xr = x + row.x_offset + d * p.x_dim_stride;
    const int32_t* seq = p.seq_idx != nullptr && len > 0 ? p.seq_idx + b * p.seq_idx_batch_stride : nullptr;
    const int64_t ss = p.seq_idx_seq_stride;
    const int32_t last = seq != nullptr ? seq[(len - 1) * ss] : 0;
    const bool init_counts = row.reads_init && (seq == nullptr || seq[0] == last);
    const T* ir = init_counts ? init + row.slot * p.init_batch_stride + d * p.init_dim_stride : nullptr;
    T* fr = fin + row.slot * p.final_batch_stride + d * p.final_dim_stride;
    for (int64_t k = 0; k < p.state_len; ++k) {
      const int64_t pos = len - p.state_len + k;
      T v = zero;
      if (pos >= 0) {
        if (seq == nullptr || seq[pos * ss] == last) v = xr[pos * p.x_seq_stride];
      } else if (pos >= -halo && ir != nullptr) {
        v = ir[(p.state_len + pos) * p.init_seq_stride];
      }
      fr[k * p.final_seq_stride] = v;
    }
  }
}

}  // namespace

// p.variant selects GPU kernels; every value runs the same code here.
void causal_conv1d_fwd(const CausalConv1dFwdParams& p, void* /*stream: CPU*/) {
  if (p.width < 1) throw std::invalid_argument("aiter_lite: causal_conv1d_fwd: width must be >= 1");
  const bool has_states = p.initial_states != nullptr || p.final_states != nullptr;
  if (has_states && p.state_len < p.width - 1)
    throw std::invalid_argument("aiter_lite: causal_conv1d_fwd: state_len must be >= width - 1");
  if (p.seq_idx != nullptr && p.cu_seqlens != nullptr)
    throw std::invalid_argument("aiter_lite: causal_conv1d_fwd: seq_idx and cu_seqlens cannot be combined");
  if (p.batch <= 0 || p.dim <= 0) return;
  if (p.seqlen <= 0 && p.cu_seqlens == nullptr && p.final_states == nullptr) return;
  const auto row_info = describe_rows(p);  // throws on a bad slot before anything is written
  const bool channel_last = p.x_dim_stride < p.x_seq_stride && p.dim > 1;
  const auto w = channel_last ? cpu_conv::to_float_matrix(p.weight, p.w_dtype, p.width, p.dim, p.w_width_stride,
                                                          p.w_dim_stride)
                              : cpu_conv::to_float_matrix(p.weight, p.w_dtype, p.dim, p.width, p.w_dim_stride,
                                                          p.w_width_stride);
  const auto bias = cpu_conv::to_float_matrix(p.bias, p.w_dtype, p.dim, 1, p.bias_stride, 1);
  dispatch_dtype(p.x_dtype, "causal_conv1d_fwd", [&](auto tag) {
    using T = typename decltype(tag)::type;
    fwd_tiles<T>(p, row_info, channel_last, w, bias);
    if (p.final_states != nullptr) write_final_states<T>(p, row_info);
  });
}

}  // namespace aiter_lite
