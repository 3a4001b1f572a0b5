// Experiment (AITER_LITE_WGMMA_EXPERIMENT_TIMELINE = 1; module_matmul_timeline in
// bench/lab/jit_experiments.json, read by bench/lab/wgmma_timeline.py): where a persistent wgmma CTA
// spends its time. Lane 0 of consumer warpgroup 0's first warp records SM clock stamps (clock64, one counter
// per SM) of its events into a per-CTA row of a device array, which print_rows prints afterwards:
//   entry (taken by the producer thread at kernel entry), then per tile: first k-tile's data in
//   shared memory, last wgmma done, epilogue done (up to kTimelineTiles tiles), then exit; plus the
//   globaltimer (ns, GPU-wide) at entry and exit, to line the CTAs up against each other.
// Only that build includes this header; csrc/kernels/matmul_wgmma.cuh has no-op hooks for every other.
#pragma once

#include <cstdint>
#include <cstdio>

#include "sm90.cuh"  // globaltimer_ns

#ifndef AITER_LITE_WGMMA_EXPERIMENT_TIMELINE
#define AITER_LITE_WGMMA_EXPERIMENT_TIMELINE 0
#endif

namespace aiter_lite {
namespace wgmma_timeline {

constexpr bool kOn = AITER_LITE_WGMMA_EXPERIMENT_TIMELINE != 0;
constexpr int kTimelineTiles = 5;
// Row layout: [0] entry clock, [1] entry globaltimer, [2 + 3t .. 4 + 3t] tile t's events,
// [2 + 3 kTimelineTiles] exit clock, [3 + 3 kTimelineTiles] exit globaltimer.
constexpr int kRow = 4 + 3 * kTimelineTiles;
constexpr int kMaxCtas = 1024;

enum Event : int { kData = 0, kMainloopDone = 1, kEpilogueDone = 2 };

#if AITER_LITE_WGMMA_EXPERIMENT_TIMELINE
__device__ unsigned long long g_rows[kMaxCtas][kRow];
#endif

__device__ __forceinline__ bool recorder(int consumer) {
  return kOn && consumer == 0 && threadIdx.x % 128 == 0 && blockIdx.x < kMaxCtas;
}

// The producer thread (threadIdx.x == 0), first thing in the kernel.
__device__ __forceinline__ void entry() {
#if AITER_LITE_WGMMA_EXPERIMENT_TIMELINE
  if (threadIdx.x == 0 && blockIdx.x < kMaxCtas) {
    g_rows[blockIdx.x][0] = clock64();
    g_rows[blockIdx.x][1] = sm90::globaltimer_ns();
    for (int i = 2; i < kRow; ++i) g_rows[blockIdx.x][i] = 0;
  }
#endif
}

__device__ __forceinline__ void event(int consumer, int tile, Event e) {
#if AITER_LITE_WGMMA_EXPERIMENT_TIMELINE
  if (recorder(consumer) && tile < kTimelineTiles) g_rows[blockIdx.x][2 + 3 * tile + e] = clock64();
#endif
}

// Consumer 0 at its end: stamps the exit.
__device__ __forceinline__ void stamp_exit(int consumer) {
#if AITER_LITE_WGMMA_EXPERIMENT_TIMELINE
  if (!recorder(consumer)) return;
  g_rows[blockIdx.x][2 + 3 * kTimelineTiles] = clock64();
  g_rows[blockIdx.x][3 + 3 * kTimelineTiles] = sm90::globaltimer_ns();
#endif
}

#if AITER_LITE_WGMMA_EXPERIMENT_TIMELINE
// Prints the rows of the matmul kernel launched just before on the same stream (one thread). A
// kernel of its own: a printf call inside the matmul kernel makes ptxas serialize every wgmma there
// (C7510, "wgmma pipeline crossing function boundary"), which an early version of this experiment
// did, and so timed a different mainloop.
static __global__ void print_rows(int ctas) {
  static_assert(kTimelineTiles == 5, "the printf below has one group of three per recorded tile");
  for (int cta = 0; cta < ctas && cta < kMaxCtas; ++cta) {
    const unsigned long long* r = g_rows[cta];
    const unsigned long long c0 = r[0];
    auto d = [&](int i) { return r[i] ? static_cast<long long>(r[i] - c0) : -1ll; };
    printf("TL %d %llu %llu %lld | %lld %lld %lld | %lld %lld %lld | %lld %lld %lld | %lld %lld %lld | %lld %lld %lld\n",
           cta, r[1], r[3 + 3 * kTimelineTiles], d(2 + 3 * kTimelineTiles), d(2), d(3), d(4), d(5), d(6), d(7), d(8),
           d(9), d(10), d(11), d(12), d(13), d(14), d(15), d(16));
  }
}
#endif

// Host, right after the matmul kernel's launch: queues print_rows behind it (nothing when off).
inline void after_launch(int ctas, cudaStream_t stream) {
#if AITER_LITE_WGMMA_EXPERIMENT_TIMELINE
  print_rows<<<1, 1, 0, stream>>>(ctas);
#else
  (void)ctas;
  (void)stream;
#endif
}

}  // namespace wgmma_timeline
}  // namespace aiter_lite
