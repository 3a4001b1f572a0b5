// Interface of the staged channel-last forward kernel (causal_conv1d_fwd_channel_last.cu) for the path
// choice in causal_conv1d_fwd.cu. Its own translation unit, so a cold JIT build compiles it in parallel.
#pragma once

#include "causal_conv1d_common.cuh"
#include "causal_conv1d_params.h"
#include "port.h"

namespace aiter_lite {
namespace conv1d {

// Bytes of channels a lane of the staged kernel owns: 0 when the kernel cannot take the call (it needs
// x and out with dim stride 1, every row of channels 16-byte aligned, and a compile-time width), else 8
// or 16.
int fwd_channel_last_staged_lane_bytes(const CausalConv1dFwdParams& p);

// Experiment switch (read once): AITER_LITE_CONV_CL_CHUNK = N fixes the time steps of a work item of both
// channel-last kernels (0: planned).
int64_t channel_last_forced_chunk_len();

void fwd_channel_last_staged_run(const CausalConv1dFwdParams& p, int lane_bytes, const WeightArgs& w,
                                 gpuStream_t stream);

// The forward with states and packed sequences on the same kernel (causal_conv1d_fwd_features.cu calls it
// first): writes the outputs (not the final states) and returns true, or returns false without launching when
// the layout does not fit it.
bool fwd_channel_last_staged_features_run(const CausalConv1dFwdParams& p, const WeightArgs& w, gpuStream_t stream);

}  // namespace conv1d
}  // namespace aiter_lite
