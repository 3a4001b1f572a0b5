// Interface of the forward with states and packed sequences (causal_conv1d_fwd_features.cu) for the
// path choice in causal_conv1d_fwd.cu. The plain forward (every feature pointer null) never comes here,
// so its kernels and speed stay as they are.
#pragma once

#include "causal_conv1d_common.cuh"
#include "causal_conv1d_params.h"
#include "port.h"

namespace aiter_lite {
namespace conv1d {

// Whether the call uses any of initial_states, final_states, seq_idx, cu_seqlens, state_indices or
// has_initial_state.
inline bool fwd_has_features(const CausalConv1dFwdParams& p) {
  return p.initial_states != nullptr || p.final_states != nullptr || p.seq_idx != nullptr ||
         p.cu_seqlens != nullptr || p.state_indices != nullptr || p.has_initial_state != nullptr;
}

// Runs the forward with its features: the outputs, then (when final_states is set) the final states in a
// second launch, so a state pool updated in place is read completely before any of it is written.
void fwd_features_run(const CausalConv1dFwdParams& p, const WeightArgs& w, gpuStream_t stream);

}  // namespace conv1d
}  // namespace aiter_lite
