// The channel-last forward's walk over one chunk of time steps for one group of kV channels (dim stride 1, or
// one channel), shared by the plain channel-last kernel (causal_conv1d_fwd.cu) and the chunks kernel of the
// feature path (causal_conv1d_fwd_features.cu), which adds seq_idx masks in the chunks that need them. CUDA and HIP.
#pragma once

#include <cstdint>

#include "causal_conv1d_common.cuh"
#include "dtype_traits.cuh"
#include "port.h"
#include "vec.cuh"

namespace aiter_lite {
namespace conv1d {

// The first loads of a chunk t0 .. t_end - 1 (t0 < t_end), issued before anything else (the weight loads convert
// to fp32 behind a branch on their dtype, and loads issued after them would wait for their round trip): halo[i] =
// the input at t0 - kHalo + i (zeros before t = 0), xv[u] = the input at t0 + u (for t0 + u < t_end).
template <int kHalo, int kUnroll, typename vec_t, typename T>
__device__ __forceinline__ void channel_last_chunk_loads(const T* xp, int64_t stride, int64_t t0,
                                                         int64_t t_end, vec_t (&halo)[kHalo > 0 ? kHalo : 1],
                                                         vec_t (&xv)[kUnroll]) {
#pragma unroll
  for (int i = 0; i < kHalo; ++i) {
    const int64_t tt = t0 - kHalo + i;
    if (tt >= 0) halo[i].load(xp + tt * stride); else halo[i].set_zero();
  }
#pragma unroll
  for (int u = 0; u < kUnroll; ++u)
    if (t0 + u < t_end) xv[u].load(xp + (t0 + u) * stride);
}

// Outputs t0 .. t_end - 1. On entry xv holds the inputs at t0 .. t0 + kUnroll - 1 and win[i] the input at
// t0 - kHalo + i as fp32. The next kUnroll steps are loaded before this step's compute and stores: each thread
// then keeps two groups of loads in flight, where loading after the stores left the memory system idle for a
// round trip per group (ncu, H100: 29% achieved occupancy at 78 registers, so a thread's own loads are what
// hides the latency). kMasked: id_at(t) is the seq id of step t and win_id[i] that of win[i]; a tap reads a window
// entry only for an output of the same id, and outputs of negative ids (padding tokens) are 0. lead: taps
// j < lead are skipped, not multiplied by zero (the runtime-width kernel's filter sits right-aligned in kW taps, so
// an inf outside the real window must not reach the output); 0 for every kernel of its own width.
template <bool kMasked, int kW, int kUnroll, typename vec_t, typename T, int kV, class IdAt>
__device__ __forceinline__ void channel_last_walk(const T* xp, T* op, int64_t x_stride,
                                                  int64_t out_stride, int64_t t0, int64_t t_end, vec_t (&xv)[kUnroll],
                                                  float (&win)[kW > 1 ? kW - 1 : 1][kV],
                                                  int32_t (&win_id)[kW > 1 ? kW - 1 : 1], const float (&w)[kV][kW],
                                                  const float (&bias)[kV], bool silu, IdAt id_at, int lead = 0) {
  constexpr int kHalo = kW - 1;
  constexpr int kHaloAlloc = kHalo > 0 ? kHalo : 1;
  for (int64_t t = t0; t < t_end; t += kUnroll) {
    vec_t xn[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      if (t + kUnroll + u < t_end) xn[u].load(xp + (t + kUnroll + u) * x_stride);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      if (t + u < t_end) {
        const int32_t id = kMasked ? id_at(t + u) : 0;
        float cur[kV];
        vec_t yv;
#pragma unroll
        for (int c = 0; c < kV; ++c) {
          cur[c] = to_float(xv[u].elt[c]);
          float acc = fmaf(w[c][kHalo], cur[c], bias[c]);
#pragma unroll
          for (int j = 0; j < kHalo; ++j)
            if (j >= lead) acc = fmaf(w[c][j], !kMasked || win_id[j] == id ? win[j][c] : 0.f, acc);
          yv.elt[c] = from_float<T>(kMasked && id < 0 ? 0.f : activate(acc, silu));
        }
        yv.store(op + (t + u) * out_stride);
#pragma unroll
        for (int c = 0; c < kV; ++c) {
#pragma unroll
          for (int j = 0; j + 1 < kHalo; ++j) win[j][c] = win[j + 1][c];
          if (kHalo > 0) win[kHaloAlloc - 1][c] = cur[c];
        }
        if (kMasked) {
#pragma unroll
          for (int j = 0; j + 1 < kHalo; ++j) win_id[j] = win_id[j + 1];
          if (kHalo > 0) win_id[kHaloAlloc - 1] = id;
        }
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) xv[u] = xn[u];
  }
}

}  // namespace conv1d
}  // namespace aiter_lite
