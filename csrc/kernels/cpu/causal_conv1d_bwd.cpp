// CPU causal depthwise conv1d backward (see CausalConv1dBwdParams in causal_conv1d_params.h).
//
// Per (row b, channel d), with ext = cat(initial window (or zeros), x[b, d, :]) (halo = width-1 entries
// before t = 0) and m(t, j) = 1 when tap j of output t reads its own sequence (seq_idx), else 0:
//   pre[t]   = bias + sum_j w[j] ext[t + j] m(t, j),    g[t] = dout[t] * act'(pre[t])  (0 for padding tokens)
//   dext[p]  = sum_j w[j] g[p - j] m(p - j, j)          (dx = dext[halo:], dinitial_states = dext[:halo])
//   dext[L + k] += dfinal[k] where that position belongs to the final state (last sequence of the row)
//   dweight[j] = sum_{b,t} g[t] ext[t + j] m(t, j),     dbias = sum_{b,t} g[t]
// SiLU is recomputed from x. A work item is (row, block of channels); dweight/dbias partial sums are
// kept per row and reduced over rows in ascending order afterwards, every sum in a fixed order, so
// the result is bitwise the same for any thread count (deterministic by construction; no atomics).
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "causal_conv1d_cpu.h"

namespace aiter_lite {
namespace {

constexpr int64_t kRows = 16;   // channels per work item
constexpr int64_t kLanes = 16;  // independent partial sums of a reduction (vectorizes; fixed order)

// sum_t a[t] * b[t] (* keep[t] != 0) for t < n, in a fixed order.
inline float dot(const float* a, const float* b, const uint8_t* keep, int64_t n) {
  float part[kLanes] = {};
  int64_t t = 0;
  for (; t + kLanes <= n; t += kLanes)
    for (int64_t l = 0; l < kLanes; ++l) part[l] += keep == nullptr || keep[t + l] ? a[t + l] * b[t + l] : 0.f;
  float sum = 0.f;
  for (; t < n; ++t) sum += keep == nullptr || keep[t] ? a[t] * b[t] : 0.f;
  for (int64_t l = 0; l < kLanes; ++l) sum += part[l];
  return sum;
}

// sum_t a[t] for t < n, in a fixed order.
inline float sum(const float* a, int64_t n) {
  float part[kLanes] = {};
  int64_t t = 0;
  for (; t + kLanes <= n; t += kLanes)
    for (int64_t l = 0; l < kLanes; ++l) part[l] += a[t + l];
  float total = 0.f;
  for (; t < n; ++t) total += a[t];
  for (int64_t l = 0; l < kLanes; ++l) total += part[l];
  return total;
}

struct Buffers {
  std::vector<float> ext, g, dext;
  std::vector<uint8_t> keep;  // keep[j * len + t] = m(t, j)
  std::vector<int32_t> seq;   // sequence index of ext positions
  explicit Buffers(int64_t width, int64_t len, bool masked)
      : ext(width - 1 + len), g(len), dext(width - 1 + len), keep(masked ? width * len : 0),
        seq(masked ? width - 1 + len : 0) {}
};

template <typename T>
void bwd_impl(const CausalConv1dBwdParams& p, const std::vector<float>& w, const std::vector<float>& bias,
              std::vector<float>& dw_rows, std::vector<float>& db_rows) {
  const int64_t halo = p.width - 1, len = p.seqlen, width = p.width;
  const int64_t dim_blocks = (p.dim + kRows - 1) / kRows;
  const bool masked = p.seq_idx != nullptr && len > 0;
  const bool want_dext = p.dx != nullptr || p.dinitial_states != nullptr;
  const bool want_dw = p.dweight != nullptr || p.dbias != nullptr;

#pragma omp parallel if (worth_threads(p.batch * p.dim * (len + halo) * width))
  {
    Buffers buf(width, len, masked);
#pragma omp for schedule(static)
    for (int64_t item = 0; item < p.batch * dim_blocks; ++item) {
      const int64_t b = item / dim_blocks;
      const int64_t d0 = item % dim_blocks * kRows;
      const int64_t rows = std::min(kRows, p.dim - d0);
      const uint8_t* keep = nullptr;
      int32_t last_seq = 0;
      if (masked) {  // positions before t = 0 continue the row's first sequence
        const int32_t* s = p.seq_idx + b * p.seq_idx_batch_stride;
        for (int64_t i = 0; i < halo + len; ++i)
          buf.seq[i] = s[std::max<int64_t>(0, i - halo) * p.seq_idx_seq_stride];
        for (int64_t j = 0; j < width; ++j)
          for (int64_t t = 0; t < len; ++t) buf.keep[j * len + t] = buf.seq[t + j] == buf.seq[t + halo];
        keep = buf.keep.data();
        last_seq = buf.seq[halo + len - 1];
      }
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t d = d0 + r;
        const float* wd = w.data() + d * width;
        float* ext = buf.ext.data();
        float* g = buf.g.data();
        // ext and g
        if (p.initial_states != nullptr)
          load_row(static_cast<const T*>(p.initial_states) + b * p.init_batch_stride + d * p.init_dim_stride,
                   p.init_seq_stride, ext, halo);
        else
          std::fill_n(ext, halo, 0.f);
        load_row(static_cast<const T*>(p.x) + b * p.x_batch_stride + d * p.x_dim_stride, p.x_seq_stride, ext + halo,
                 len);
        load_row(static_cast<const T*>(p.dout) + b * p.dout_batch_stride + d * p.dout_dim_stride, p.dout_seq_stride,
                 g, len);
        if (masked)  // padding tokens (seq_idx < 0) output a constant 0: no gradient flows through them
          for (int64_t t = 0; t < len; ++t) g[t] = buf.seq[t + halo] < 0 ? 0.f : g[t];
        if (p.silu) {
          float* pre = buf.dext.data();  // scratch until dext is computed
          std::fill_n(pre, len, bias[d]);
          for (int64_t j = 0; j < width; ++j)
            for (int64_t t = 0; t < len; ++t) {
              const float term = wd[j] * ext[t + j];
              pre[t] += keep == nullptr || keep[j * len + t] ? term : 0.f;
            }
          for (int64_t t = 0; t < len; ++t) {
            const float s = cpu_conv::sigmoid(pre[t]);
            g[t] *= s * (1.f + pre[t] * (1.f - s));
          }
        }
        // dx and dinitial_states
        if (want_dext) {
          float* dext = buf.dext.data();
          std::fill_n(dext, halo + len, 0.f);
          for (int64_t j = 0; j < width; ++j)
            for (int64_t t = 0; t < len; ++t) {
              const float term = wd[j] * g[t];
              dext[t + j] += keep == nullptr || keep[j * len + t] ? term : 0.f;
            }
          if (p.dfinal_states != nullptr) {
            const T* df = static_cast<const T*>(p.dfinal_states) + b * p.dfinal_batch_stride + d * p.dfinal_dim_stride;
            for (int64_t k = 0; k < halo; ++k) {
              const int64_t e = len + k;  // ext index of final-state entry k
              if (!masked || buf.seq[e] == last_seq) dext[e] += to_float(df[k * p.dfinal_seq_stride]);
            }
          }
          if (p.dx != nullptr)
            store_row(dext + halo, static_cast<T*>(p.dx) + b * p.dx_batch_stride + d * p.dx_dim_stride,
                      p.dx_seq_stride, len);
          if (p.dinitial_states != nullptr)
            store_row(dext, static_cast<T*>(p.dinitial_states) + b * p.dinit_batch_stride + d * p.dinit_dim_stride,
                      p.dinit_seq_stride, halo);
        }
        // this row's share of dweight and dbias
        if (want_dw) {
          float* dw = dw_rows.data() + (b * p.dim + d) * width;
          for (int64_t j = 0; j < width; ++j) dw[j] = dot(g, ext + j, keep == nullptr ? nullptr : keep + j * len, len);
          db_rows[b * p.dim + d] = sum(g, len);
        }
      }
    }
    // Reduce the per-row partial sums over rows, ascending, one channel per iteration.
    if (want_dw) {
#pragma omp for schedule(static)
      for (int64_t d = 0; d < p.dim; ++d) {
        for (int64_t j = 0; j < width; ++j) {
          float total = 0.f;
          for (int64_t b = 0; b < p.batch; ++b) total += dw_rows[(b * p.dim + d) * width + j];
          if (p.dweight != nullptr) p.dweight[d * width + j] = total;
        }
        float total = 0.f;
        for (int64_t b = 0; b < p.batch; ++b) total += db_rows[b * p.dim + d];
        if (p.dbias != nullptr) p.dbias[d] = total;
      }
    }
  }
}

}  // namespace

int64_t causal_conv1d_bwd_workspace_bytes(const CausalConv1dBwdParams& /*params: the CPU allocates its own*/) {
  return 0;
}

void causal_conv1d_bwd(const CausalConv1dBwdParams& p, void* /*stream: CPU*/) {
  if (p.width < 1) throw std::invalid_argument("aiter_lite: causal_conv1d_bwd: width must be >= 1");
  if (p.batch < 0 || p.dim < 0 || p.seqlen < 0)
    throw std::invalid_argument("aiter_lite: causal_conv1d_bwd: sizes must be >= 0");
  if (p.dim == 0) return;
  if (p.batch == 0) {  // nothing to reduce: the weight and bias gradients are zero
    if (p.dweight != nullptr) std::fill_n(p.dweight, p.dim * p.width, 0.f);
    if (p.dbias != nullptr) std::fill_n(p.dbias, p.dim, 0.f);
    return;
  }
  const auto w = cpu_conv::to_float_matrix(p.weight, p.w_dtype, p.dim, p.width, p.w_dim_stride, p.w_width_stride);
  const auto bias = cpu_conv::to_float_matrix(p.bias, p.w_dtype, p.dim, 1, p.bias_stride, 1);
  const bool want_dw = p.dweight != nullptr || p.dbias != nullptr;
  std::vector<float> dw_rows(want_dw ? p.batch * p.dim * p.width : 0), db_rows(want_dw ? p.batch * p.dim : 0);
  dispatch_dtype(p.x_dtype, "causal_conv1d_bwd", [&](auto tag) {
    bwd_impl<typename decltype(tag)::type>(p, w, bias, dw_rows, db_rows);
  });
}

}  // namespace aiter_lite
