// What the forward kernels with states and packed sequences (causal_conv1d_fwd_features.cu and
// causal_conv1d_fwd_dense_features.cu) read about a sequence: its state slot, its seq_idx entries, its
// initial-state entries, and in varlen mode which sequence holds a position. Args is either kernel's argument
// struct (they name these fields alike); Seq is its sequence record (slot, active, has_init). CUDA and HIP.
#pragma once

#include <cstdint>

#include "dtype_traits.cuh"
#include "port.h"

namespace aiter_lite {
namespace conv1d {

// The state slot of batch row (or varlen sequence) b, whether it runs at all (a padded slot does not: no
// output, no state read or written) and whether it reads an initial state.
template <class Args, class Seq>
__device__ __forceinline__ void set_slot(const Args& a, int64_t b, Seq& s) {
  if (a.state_indices != nullptr) {
    s.slot = a.state_indices[b];
    s.active = s.slot != a.pad_slot_id && s.slot >= 0 && s.slot < a.state_rows;
  } else {
    s.slot = static_cast<decltype(s.slot)>(b);
    s.active = true;
  }
  s.has_init = s.active && a.init != nullptr && (a.has_initial_state == nullptr || a.has_initial_state[b]);
}

// seq_idx[row, t].
template <class Args>
__device__ __forceinline__ int32_t seq_id_at(const Args& a, int64_t row, int64_t t) {
  return a.seq_idx[row * a.seq_idx_batch_stride + t * a.seq_idx_seq_stride];
}

// Initial-state entry k (of state_len) of channel d in slot `slot`, as fp32.
template <typename T, class Args>
__device__ __forceinline__ float init_at(const Args& a, int64_t slot, int64_t d, int64_t k) {
  return to_float(static_cast<const T*>(a.init)[slot * a.init_batch_stride + d * a.init_dim_stride +
                                                  k * a.init_seq_stride]);
}

// Varlen: the last b in [lo, batch) with cu_seqlens[b] <= t, by bisection (cu_seqlens[lo] <= t).
__device__ __forceinline__ int64_t last_sequence_starting_by(const int32_t* __restrict__ cu, int64_t lo,
                                                             int64_t batch, int64_t t) {
  int64_t hi = batch - 1;
  while (lo < hi) {
    const int64_t mid = (lo + hi + 1) >> 1;
    if (cu[mid] <= t) lo = mid; else hi = mid - 1;
  }
  return lo;
}

}  // namespace conv1d
}  // namespace aiter_lite
