// Interface of the "rows" forward kernel (causal_conv1d_fwd_rows.cu) for the path choice in
// causal_conv1d_fwd.cu. It lives in its own translation unit so a cold JIT build compiles it in
// parallel with the other forward kernels.
#pragma once

#include "causal_conv1d_common.cuh"
#include "causal_conv1d_params.h"
#include "port.h"

namespace aiter_lite {
namespace conv1d {

struct FwdRowsPlan {
  int vecs_per_lane = 0;  // 0: the rows kernel does not take this call; else 1 or 4
  bool fuse_final = false;  // features: the kernel writes the final states itself
};

// Whether (and how) the rows kernel takes a dense, 16-byte aligned [B, D, L] call: L must be a
// multiple of the elements in 16 bytes, the width compile-time, and rows long enough that most
// lanes of a tile have work.
FwdRowsPlan fwd_rows_plan(const CausalConv1dFwdParams& p);

void fwd_rows_run(const CausalConv1dFwdParams& p, const FwdRowsPlan& plan, const WeightArgs& w, gpuStream_t stream);

// The same kernel for a call with initial states, final states and/or seq_idx: x and out dense [B, D, L] as above, no
// varlen rows or state pool, and for seq_idx p.workspace set (it receives the marks). Final states that may alias the
// initial ones (!plan.fuse_final) are the caller's second launch.
FwdRowsPlan fwd_rows_features_plan(const CausalConv1dFwdParams& p);
void fwd_rows_features_run(const CausalConv1dFwdParams& p, const FwdRowsPlan& plan, const WeightArgs& w,
                           gpuStream_t stream);

}  // namespace conv1d
}  // namespace aiter_lite
