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

}  // namespace aiter_lite
