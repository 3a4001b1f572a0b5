// CPU causal depthwise conv1d decode update (see causal_conv1d_params.h): the window is staged in
// fp32 as [position][channel] and convolved across channels; the state is updated in place after.
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "causal_conv1d_cpu.h"

namespace aiter_lite {
namespace {

using cpu_conv::conv_channels;
using cpu_conv::wrap;

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

#pragma omp parallel if (worth_threads(p.batch * p.dim * (len + halo) * p.width))
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

void causal_conv1d_update(const CausalConv1dUpdateParams& p, void* /*stream: CPU*/) {
  if (p.width < 1) throw std::invalid_argument("aiter_lite: causal_conv1d_update: width must be >= 1");
  if (p.state_len < p.width - 1)
    throw std::invalid_argument("aiter_lite: causal_conv1d_update: state_len must be >= width - 1");
  if (p.batch <= 0 || p.dim <= 0 || p.seqlen <= 0) return;
  const auto w = cpu_conv::to_float_matrix(p.weight, p.w_dtype, p.width, p.dim, p.w_width_stride, p.w_dim_stride);
  const auto bias = cpu_conv::to_float_matrix(p.bias, p.w_dtype, p.dim, 1, p.bias_stride, 1);
  dispatch_dtype(p.x_dtype, "causal_conv1d_update", [&](auto tag) {
    update_impl<typename decltype(tag)::type>(p, w, bias);
  });
}

}  // namespace aiter_lite
