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

// The final state of row b (not varlen; state_len == kHalo; dim stride 1) for channels d0 .. d0 + kV - 1, written
// by the outputs' kernel itself (the staged kernel's item holding the row's end, before its walk; the chunks kernel
// after its walks): entry i is the input at t = L - kHalo + i (before t = 0 the initial state's entry, or zero),
// zero where its seq_idx differs from the last token's (the initial window carries seq_idx[b, 0]). It reads x
// again (cache hits) rather than a walk's window registers. The caller makes sure final_states cannot alias
// initial_states (fwd_final_may_alias_init): nothing orders these writes after other threads' initial-state reads.
template <typename T, int kV, int kHalo, class Args>
__device__ __forceinline__ void write_final_state(const Args& a, int64_t b, int64_t slot, bool has_init, int64_t d0) {
  const T* __restrict__ xp = static_cast<const T*>(a.x) + b * a.x_batch_stride + d0;
  T* __restrict__ fp = static_cast<T*>(a.final_states) + slot * a.final_batch_stride + d0 * a.final_dim_stride;
  const bool use_ids = a.seq_idx != nullptr;
  const int32_t last_id = use_ids ? seq_id_at(a, b, a.seqlen - 1) : 0;
#pragma unroll
  for (int i = 0; i < kHalo; ++i) {
    const int64_t t = a.seqlen - kHalo + i;
    const bool keep = !use_ids || seq_id_at(a, b, t >= 0 ? t : 0) == last_id;
#pragma unroll
    for (int c = 0; c < kV; ++c) {
      T v = from_float<T>(0.f);
      if (keep && t >= 0) {
        v = xp[t * a.x_seq_stride + c];
      } else if (keep && has_init) {
        v = static_cast<const T*>(a.init)[slot * a.init_batch_stride + (d0 + c) * a.init_dim_stride +
                                          (a.state_len + t) * a.init_seq_stride];
      }
      fp[c * a.final_dim_stride + i * a.final_seq_stride] = v;
    }
  }
}

}  // namespace conv1d
}  // namespace aiter_lite
