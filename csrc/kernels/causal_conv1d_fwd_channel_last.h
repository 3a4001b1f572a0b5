// Interface of the staged channel-last forward kernel (causal_conv1d_fwd_channel_last.cu) for the path
// choice in causal_conv1d_fwd.cu. Its own translation unit, so a cold JIT build compiles it in parallel.
#pragma once

#include "causal_conv1d_common.cuh"
#include "causal_conv1d_params.h"
#include "port.h"

namespace aiter_lite {
namespace conv1d {

// Whether the staged kernel can take a plain call: x and out with dim stride 1 whose rows of channels start
// on 16-byte boundaries, fp32 x and W <= 4 (the only plain calls it serves; causal_conv1d_fwd.cu says when).
bool fwd_channel_last_staged_takes(const CausalConv1dFwdParams& p);

void fwd_channel_last_staged_run(const CausalConv1dFwdParams& p, const WeightArgs& w, gpuStream_t stream);

// The forward with states and seq_idx on the same kernel (causal_conv1d_fwd_features.cu calls it): writes the
// outputs, and the final states when fuse_final (the caller checked they cannot alias the initial states and
// state_len = width - 1), and returns true; or returns false without launching when the layout does not fit it
// or the call is varlen (cu_seqlens: the staged kernel's varlen mode is not yet checked on a GPU, so those calls
// keep the register feature kernel).
bool fwd_channel_last_staged_features_run(const CausalConv1dFwdParams& p, const WeightArgs& w, bool fuse_final,
                                          gpuStream_t stream);

}  // namespace conv1d
}  // namespace aiter_lite
