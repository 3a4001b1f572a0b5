// Interface of the dense forward with states and packed sequences (causal_conv1d_fwd_dense_features.cu) for
// the path choice in causal_conv1d_fwd.cu: x and out dense [B, D, L] contiguous, read as one flat array of
// 16-byte vectors. Varlen calls never come here, nor seq_idx calls of 2^20 elements or more (fwd_states_split
// takes them), nor rows of whole 16-byte vectors (the rows kernel takes them first: fwd_rows_features_plan).
#pragma once

#include "causal_conv1d_common.cuh"
#include "causal_conv1d_params.h"
#include "port.h"

namespace aiter_lite {
namespace conv1d {

struct FwdDenseFeaturesPlan {
  bool takes = false;       // the dense kernel takes the call
  bool fuse_final = false;  // it writes the final states itself (else a second launch does, after it)
};

// Takes calls with features (fwd_has_features) whose x and out are dense and 16-byte aligned, with a
// compile-time width and rows shorter than 2^30. The final states are written by the main kernel unless
// they may alias the initial states (a pool updated in place): then every read of an
// initial state must come before any write, which only a second launch orders.
FwdDenseFeaturesPlan fwd_dense_features_plan(const CausalConv1dFwdParams& p);

void fwd_dense_features_run(const CausalConv1dFwdParams& p, const FwdDenseFeaturesPlan& plan, const WeightArgs& w,
                            gpuStream_t stream);

}  // namespace conv1d
}  // namespace aiter_lite
