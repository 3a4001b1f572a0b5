// Pieces shared by the causal conv1d backward kernels (causal_conv1d_bwd*.cu): the gradient of SiLU,
// the per-block partial sums of dweight/dbias, and the launchers of each kernel for the path choice in
// causal_conv1d_bwd.cu. Each kernel lives in its own translation unit so a cold JIT build compiles
// them in parallel.
//
// Notation (x extended to negative positions by the initial states):
//   pre[t]  = bias + sum_{j<W} w[j] * x[t - H + j]          (H = W - 1, taps masked by seq_idx)
//   dpre[t] = dout[t] * act'(pre[t])                          (SiLU recomputed from x)
//   dx[s]   = sum_{j<W} w[j] * dpre[s + H - j]  (+ dfinal[s - (L - H)] for s >= L - H)
//   dinit[k] = dx[k - H] for k < H (the same formula at negative positions)
//   dw[j]   = sum_t dpre[t] * x[t - H + j],  dbias = sum_t dpre[t]
// dweight/dbias never use atomics: every block writes its fp32 sums to one row of a partials matrix
// [P][D * (W + 1)] in the workspace, and a second kernel adds the P rows in a fixed order.
#pragma once

#include <cstdint>
#include <type_traits>

#include "causal_conv1d_common.cuh"
#include "causal_conv1d_params.h"
#include "port.h"

namespace aiter_lite {
namespace conv1d {

// Partial sums of dweight and dbias: row p, column d * (W + 1) + j (j == W: dbias). nullptr when
// neither dweight nor dbias is wanted.
struct BwdPartials {
  float* rows;
  int64_t cols;  // D * (W + 1)
};

// State tensors of the backward ([batch, dim, W - 1], any strides; each pointer may be nullptr).
struct BwdStateArgs {
  const void* init;
  const void* dfinal;
  void* dinit;
  int64_t init_batch_stride, init_dim_stride, init_seq_stride;
  int64_t dfinal_batch_stride, dfinal_dim_stride, dfinal_seq_stride;
  int64_t dinit_batch_stride, dinit_dim_stride, dinit_seq_stride;
};

inline BwdStateArgs make_state_args(const CausalConv1dBwdParams& p) {
  BwdStateArgs s{};
  s.init = p.initial_states;
  s.dfinal = p.dfinal_states;
  s.dinit = p.dinitial_states;
  s.init_batch_stride = p.init_batch_stride;
  s.init_dim_stride = p.init_dim_stride;
  s.init_seq_stride = p.init_seq_stride;
  s.dfinal_batch_stride = p.dfinal_batch_stride;
  s.dfinal_dim_stride = p.dfinal_dim_stride;
  s.dfinal_seq_stride = p.dfinal_seq_stride;
  s.dinit_batch_stride = p.dinit_batch_stride;
  s.dinit_dim_stride = p.dinit_dim_stride;
  s.dinit_seq_stride = p.dinit_seq_stride;
  return s;
}

#if defined(__CUDACC__) || defined(__HIPCC__)
// dout * d act(pre) / d pre. SiLU: s = sigmoid(pre), silu' = s * (1 + pre * (1 - s)), taken as gs + gs * (pre - pre * s)
// with gs = g * s: three instructions after the sigmoid, not four (pre - pre * s is one fused multiply-add, exact
// where 1 - s would round).
__device__ __forceinline__ float act_grad(float pre, float g, bool use_silu) {
  if (!use_silu) return g;
  const float s = 1.0f / (1.0f + __expf(-pre));
  const float gs = g * s;
  return fmaf(gs, fmaf(-pre, s, pre), gs);
}

// f(std::true_type{}) with SiLU, f(std::false_type{}) without: one branch a vector where f loops over its elements
// with act_grad(pre, g, kSilu) (a constant: no pre computed without SiLU), not one an element.
template <typename F>
__device__ __forceinline__ void with_silu(bool use_silu, F&& f) {
  if (use_silu) f(std::true_type{});
  else f(std::false_type{});
}

// Sum over the lanes of a warp (butterfly: every lane gets the sum, in the same order every run).
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int off = kWarpSize / 2; off > 0; off /= 2)
    v += __uint_as_float(warp_shfl(__float_as_uint(v), lane_id() ^ off));
  return v;
}

// Element k of state tensor `ptr` (x's dtype T) for (b, d).
template <typename T>
__device__ __forceinline__ float load_state(const void* ptr, int64_t b, int64_t d, int64_t k, int64_t bs, int64_t ds,
                                            int64_t ss) {
  return to_float(static_cast<const T*>(ptr)[b * bs + d * ds + k * ss]);
}
#endif

// Workspace partial rows each path writes (0: the path writes dweight/dbias itself).
struct BwdRowsPlan {
  int vecs_per_lane = 0;  // 0: the rows kernel does not take this call; else 1 or 2 (2: aligned rows only)
  bool shifted = false;   // rows off the 16-byte grid (odd L)
  bool seq = false;       // seq_idx: masks only where a sequence starts
  int64_t partial_rows = 0;
  int64_t seq_start_words = 0;  // seq: 32-bit words of sequence marks in the workspace (after the partials)
};
BwdRowsPlan bwd_rows_plan(const CausalConv1dBwdParams& p);
void bwd_rows_run(const CausalConv1dBwdParams& p, const BwdRowsPlan& plan, const WeightArgs& w,
                  const BwdPartials& partials, uint32_t* seq_starts, gpuStream_t stream);
// seq_idx on the rows path: per-block flags of the marks kernel, set where seq_idx is not non-decreasing (an id
// recurs across another within the width); when any is set, the reduce kernel recomputes the backward by the
// reference's rule (causal_conv1d_bwd.cu). At most kSeqMarksBlocks flags (causal_conv1d_seq_marks.cuh).
struct BwdRecurFlags {
  const uint32_t* words = nullptr;
  int count = 0;
};
BwdRecurFlags bwd_rows_recur_flags(const CausalConv1dBwdParams& p, const BwdRowsPlan& plan, uint32_t* seq_starts);

struct BwdChannelLastPlan {
  int vec = 0;          // channels per thread: a 4-byte group (2 or 1), or 1
  bool staged = false;  // the cp.async ring kernel (16-byte aligned rows of channels), else direct loads
  int64_t chunk_len = 0, n_chunks = 0;
  int64_t partial_rows = 0;
};
BwdChannelLastPlan bwd_channel_last_plan(const CausalConv1dBwdParams& p, bool vec);
void bwd_channel_last_run(const CausalConv1dBwdParams& p, const BwdChannelLastPlan& plan, const WeightArgs& w,
                          const BwdPartials& partials, gpuStream_t stream);

struct BwdTilePlan {
  int64_t tile_len = 0, rows_per_block = 0, n_tiles = 0, n_row_groups = 0;
  int64_t partial_rows = 0;
};
BwdTilePlan bwd_tile_plan(const CausalConv1dBwdParams& p);
void bwd_tile_run(const CausalConv1dBwdParams& p, const BwdTilePlan& plan, const WeightArgs& w,
                  const BwdPartials& partials, gpuStream_t stream);

}  // namespace conv1d
}  // namespace aiter_lite
