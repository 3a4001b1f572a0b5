// Plain parameter structs and launcher declarations for causal depthwise conv1d.
// No torch and no CUDA headers: the binding fills these from Python integers, and each backend
// (CUDA/HIP kernels, CPU kernels) implements the launchers below.
#pragma once
#include <cstdint>

#include "dtype.h"

namespace aiter_lite {

// Kernel variants, selectable for op_tests; kAuto lets the backend choose.
enum class ConvVariant : int32_t { kAuto = 0, kNaive = 1, kShared = 2, kVectorized = 3 };

// out[b, d, t] = act(bias[d] + sum_{j<width} w[d, j] * x[b, d, t - (width-1) + j]), x[.., <0] = 0.
// All strides are in elements. out has x's dtype; bias (if any) and weight share w_dtype.
struct CausalConv1dFwdParams {
  const void* x;
  const void* weight;
  const void* bias;  // nullptr: no bias
  void* out;         // never aliases x (checked in Python)

  int64_t batch, dim, seqlen, width;
  int64_t x_batch_stride, x_dim_stride, x_seq_stride;
  int64_t w_dim_stride, w_width_stride;
  int64_t bias_stride;
  int64_t out_batch_stride, out_dim_stride, out_seq_stride;

  DType x_dtype;
  DType w_dtype;
  bool silu;
  ConvVariant variant;

  // ---- States and packed sequences (every pointer may be nullptr: the feature is off) ----
  // Per-row state tensors are [rows, dim, state_len] with state_len >= width-1, x's dtype, any strides.
  // "slot(b)" is the state row of batch row b: state_indices ? state_indices[b] : b.
  //
  // initial_states: the window of row b before t = 0 reads initial_states[slot(b), d, state_len-(W-1)+k]
  //   (its last W-1 entries) for x positions -(W-1)+k, k < W-1; nullptr reads zeros.
  // has_initial_state (bool [batch]): when set, row b reads its initial state only where it is true
  //   (zeros elsewhere).
  // final_states: row b writes final_states[slot(b), d, :] = the last state_len entries of
  //   cat(initial window (or zeros), x[b, d, :L_b]) (zeros where neither reaches). It MAY alias
  //   initial_states (a serving engine's state pool): a row's final state is written only after every read of
  //   that row's initial state.
  // seq_idx (int32 [batch, seqlen]): the window of t reads position s only if seq_idx[b, s] == seq_idx[b, t].
  //   A token with seq_idx[b, t] < 0 is padding (causal-conv1d's convention): its output is written as 0 (and
  //   its gradient is 0 in the backward). Python checks that the non-negative entries never decrease and
  //   rejects final states whose row ends in padding.
  //   Initial states continue the row's first segment (read only where seq_idx[b, t] == seq_idx[b, 0]);
  //   final states are those of the row's last segment (positions s whose seq_idx differs from
  //   seq_idx[b, L-1] read as zeros; the initial window counts only if the last segment is also the first).
  // cu_seqlens (int32 [batch+1], varlen mode): x and out hold one packed row (batch stride unused);
  //   row b is positions cu_seqlens[b] .. cu_seqlens[b+1]-1 of it, convolved alone, L_b its length.
  //   seq_idx is never set together with cu_seqlens. The outputs of positions after the last row, and of rows
  //   whose slot is padding, are not specified (the GPU's plain kernels may write them; vLLM reads none).
  // state_indices (int32 [batch]): a row whose slot equals pad_slot_id (or is < 0) is skipped: no state read
  //   or written, and (without cu_seqlens) no output written. Slots are checked against state_rows on the host
  //   (CPU) or treated as padding when out of range (GPU).
  const void* initial_states;
  void* final_states;
  const int32_t* seq_idx;
  const int32_t* cu_seqlens;
  const int32_t* state_indices;
  const bool* has_initial_state;
  int32_t pad_slot_id;
  int64_t state_len;   // last dim of initial_states/final_states (width-1 when they are not a pool)
  int64_t state_rows;  // first dim of initial_states/final_states
  int64_t init_batch_stride, init_dim_stride, init_seq_stride;
  int64_t final_batch_stride, final_dim_stride, final_seq_stride;
  int64_t seq_idx_batch_stride, seq_idx_seq_stride;
  // Device scratch for seq_idx on the GPU: the marks of causal_conv1d_seq_marks.cuh, batch * seq_marks_stride(seqlen)
  // 8-byte words (aiter_lite/ops/_conv_launch.py allocates them), or nullptr: the kernels that need it are then not
  // chosen. Unused on the CPU.
  void* workspace;
};

// Backward of the forward above (without varlen mode and state_indices): given dout, computes
//   dx (x's dtype), dweight ([dim, width], fp32, contiguous, overwritten), dbias ([dim], fp32, overwritten),
//   dinitial_states ([batch, dim, width-1], x's dtype), with SiLU recomputed from x.
// dfinal_states ([batch, dim, width-1], x's dtype, may be nullptr): the gradient of the final states output;
//   it flows into dx and dinitial_states. Every output pointer may be nullptr (not wanted: not computed).
// deterministic: dweight/dbias are reduced in a fixed order (no float atomics): bitwise reproducible.
// workspace: at least causal_conv1d_bwd_workspace_bytes(params) bytes on the device (may be nullptr when that is 0).
struct CausalConv1dBwdParams {
  const void* x;
  const void* weight;
  const void* bias;  // nullptr: no bias
  const void* dout;
  const void* initial_states;  // nullptr: zeros
  const int32_t* seq_idx;      // nullptr: one sequence per row
  const void* dfinal_states;   // nullptr: no gradient on the final states
  void* dx;
  float* dweight;
  float* dbias;
  void* dinitial_states;
  void* workspace;

  int64_t batch, dim, seqlen, width;
  int64_t x_batch_stride, x_dim_stride, x_seq_stride;
  int64_t w_dim_stride, w_width_stride;
  int64_t bias_stride;
  int64_t dout_batch_stride, dout_dim_stride, dout_seq_stride;
  int64_t dx_batch_stride, dx_dim_stride, dx_seq_stride;
  int64_t init_batch_stride, init_dim_stride, init_seq_stride;
  int64_t dfinal_batch_stride, dfinal_dim_stride, dfinal_seq_stride;
  int64_t dinit_batch_stride, dinit_dim_stride, dinit_seq_stride;
  int64_t seq_idx_batch_stride, seq_idx_seq_stride;

  DType x_dtype;
  DType w_dtype;
  bool silu;
  bool deterministic;
};

// States of packed sequences: states[b, d, k] = x[cu_seqlens[b+1] - state_len + k, d] where that position is
// inside sequence b (>= cu_seqlens[b]), else 0. x: [total, dim] (any strides), states: [batch, dim, state_len].
struct CausalConv1dVarlenStatesParams {
  const void* x;
  const int32_t* cu_seqlens;
  void* states;
  int64_t batch, dim, total, state_len;
  int64_t x_seq_stride, x_dim_stride;
  int64_t states_batch_stride, states_dim_stride, states_seq_stride;
  DType dtype;
};

// Decode step: x holds `seqlen` new tokens per sequence; conv_state (dtype of x) holds the
// previous tokens and is updated in place.
// - cache_seqlens == nullptr: conv_state is a shift register; its last `state_len` entries of
//   cat(conv_state, x) are kept.
// - cache_seqlens != nullptr (int32[batch]): conv_state is a circular buffer; the new tokens are
//   written at (cache_seqlens[b] + t) % state_len, the window reads the width-1 entries before.
// - conv_state_indices != nullptr (int32[batch]): row b uses conv_state[indices[b]]; a negative
//   index marks a padded slot: its output is zero and no state is touched.
struct CausalConv1dUpdateParams {
  const void* x;
  void* conv_state;
  const void* weight;
  const void* bias;                   // nullptr: no bias
  const int32_t* cache_seqlens;       // nullptr: not circular
  const int32_t* conv_state_indices;  // nullptr: row b uses state b
  void* out;

  int64_t batch, dim, seqlen, width, state_len;
  int64_t state_batch;  // rows in the conv_state pool: an index at or past it is treated as padding
  int64_t x_batch_stride, x_dim_stride, x_seq_stride;
  int64_t state_batch_stride, state_dim_stride, state_seq_stride;
  int64_t w_dim_stride, w_width_stride;
  int64_t bias_stride;
  int64_t out_batch_stride, out_dim_stride, out_seq_stride;

  DType x_dtype;
  DType w_dtype;
  bool silu;
};

// Implemented once per backend. `stream` is a cudaStream_t/hipStream_t (ignored on the CPU).
// Errors are reported by throwing std::runtime_error / std::invalid_argument.
void causal_conv1d_fwd(const CausalConv1dFwdParams& params, void* stream);
void causal_conv1d_update(const CausalConv1dUpdateParams& params, void* stream);
int64_t causal_conv1d_bwd_workspace_bytes(const CausalConv1dBwdParams& params);
void causal_conv1d_bwd(const CausalConv1dBwdParams& params, void* stream);
void causal_conv1d_varlen_states(const CausalConv1dVarlenStatesParams& params, void* stream);

}  // namespace aiter_lite
