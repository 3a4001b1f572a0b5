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

// Whether the plain kernels plus a fix-up can take the call (fwd_states_split_out_len), on a layout that is not
// channel-last (whose feature kernels are already as fast as the plain ones) and that the rows kernel with its
// features does not take first (causal_conv1d_fwd.cu; dense rows of whole 16-byte vectors go there): only initial_states and/or
// final_states are set, or the call is varlen (packed sequences, with or without a state pool), or it has
// seq_idx (with or without initial/final states; never with a pool or varlen).
// Varlen: the plain kernels see one row of `tokens` positions per channel, exact from each sequence's
// width-1-th position on; their outputs at padded sequences and past the last one are not specified (vLLM's
// convention: nobody reads them). On an H100 (2026-11-27) the dense varlen kernel this replaced ran 64 prompts
// of 1-4096 tokens at 0.68 of a copy, bound by instruction issue on the sequence tracking.
// Rows shorter than the filter (not varlen) are all head: the plain pass would compute outputs the fix-up rewrites
// every one of (68 us for 8 x 4096 rows of 3 tokens on an H200: the heads a context-parallel rank recomputes with
// its halo), so the features kernel takes them alone.
inline bool fwd_states_split(const CausalConv1dFwdParams& p) {
  // A pool (state_indices, has_initial_state) only with varlen; seq_idx never with it (causal_conv1d_params.h).
  const bool features_split = p.cu_seqlens != nullptr ? p.seq_idx == nullptr
                                                      : p.state_indices == nullptr && p.has_initial_state == nullptr;
  const bool channel_last = p.dim == 1 || (p.x_dim_stride == 1 && p.out_dim_stride == 1);
  const bool all_head = p.cu_seqlens == nullptr && p.seqlen < p.width;
  return features_split && !channel_last && p.seqlen > 0 && !all_head;
}

// fwd_features_run's out_len for a split call with seq_idx: rewrite the outputs whose window meets a change of
// seq_idx, the padding tokens (seq_idx < 0) and, with initial states, positions t < width-1 (found on the GPU).
constexpr int64_t kFwdSeqIdxFixup = -2;

// The outputs a plain launch (feature pointers null) gets wrong for such a call: positions
// t < min(width-1, length) of every row when initial_states is set (zeros are what it reads), in varlen
// mode the first width-1 positions of every sequence (the window crosses the sequence's start), and with
// seq_idx those of kFwdSeqIdxFixup.
inline int64_t fwd_states_split_out_len(const CausalConv1dFwdParams& p) {
  if (p.seq_idx != nullptr) return kFwdSeqIdxFixup;
  if (p.cu_seqlens != nullptr) return p.width - 1;
  if (p.initial_states == nullptr) return 0;
  return p.width - 1 < p.seqlen ? p.width - 1 : p.seqlen;
}

// Whether fwd_features_run(p, ..., out_len) writes only some positions (the heads of the rows, or in varlen mode
// of the sequences) rather than every output.
inline bool fwd_features_heads_only(const CausalConv1dFwdParams& p, int64_t out_len) {
  return out_len >= 0 && (p.cu_seqlens != nullptr || out_len < p.seqlen);
}

// Whether final_states may share memory with initial_states (a pool updated in place): then every read of
// an initial state must come before any final-state write, which only a second launch orders. Compares the
// byte ranges the two [state_rows, dim, state_len] views span.
inline bool fwd_final_may_alias_init(const CausalConv1dFwdParams& p) {
  if (p.initial_states == nullptr || p.final_states == nullptr) return false;
  const int64_t elt = p.x_dtype == DType::kFloat32 ? 4 : 2;
  auto last_byte = [&](const void* ptr, int64_t bs, int64_t ds, int64_t ss) {
    const int64_t far = (p.state_rows - 1) * bs + (p.dim - 1) * ds + (p.state_len - 1) * ss;
    return reinterpret_cast<uintptr_t>(ptr) + static_cast<uintptr_t>((far + 1) * elt) - 1;
  };
  const uintptr_t i0 = reinterpret_cast<uintptr_t>(p.initial_states), f0 = reinterpret_cast<uintptr_t>(p.final_states);
  const uintptr_t i1 = last_byte(p.initial_states, p.init_batch_stride, p.init_dim_stride, p.init_seq_stride);
  const uintptr_t f1 = last_byte(p.final_states, p.final_batch_stride, p.final_dim_stride, p.final_seq_stride);
  return i0 <= f1 && f0 <= i1;
}

// Runs the forward with its features: the outputs, then (when final_states is set) the final states in a
// second launch, so a state pool updated in place is read completely before any of it is written.
// out_len >= 0: just positions t < out_len of each row are written, in varlen mode positions start .. start +
// out_len - 1 of each sequence (0: none, only the final states); kFwdSeqIdxFixup: the outputs a plain launch
// got wrong under seq_idx; -1: all of them.
void fwd_features_run(const CausalConv1dFwdParams& p, const WeightArgs& w, gpuStream_t stream,
                      int64_t out_len = -1);

}  // namespace conv1d
}  // namespace aiter_lite
