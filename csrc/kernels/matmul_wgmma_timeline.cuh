// Experiment (AITER_LITE_WGMMA_EXPERIMENT_TIMELINE = 1; module_matmul_timeline in
// bench/jit_experiments.json, read by bench/wgmma_timeline.py): where a persistent wgmma CTA spends
// its time. Lane 0 of consumer warpgroup 0's first warp records SM clock stamps (clock64, one counter
// per SM) of its events into a per-CTA row of a device array, and prints the row when the CTA ends:
//   entry (taken by the producer thread at kernel entry), then per tile: first k-tile's data in
//   shared memory, last wgmma done, epilogue done (up to kTimelineTiles tiles), then exit; plus the
//   globaltimer (ns, GPU-wide) at entry and exit, to line the CTAs up against each other.
// With the macro 0 (every shipped build) every call here compiles to nothing.
#pragma once

#include <cstdint>
#include <cstdio>

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

__device__ __forceinline__ unsigned long long now_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ bool recorder(int consumer) {
  return kOn && consumer == 0 && threadIdx.x % 128 == 0 && blockIdx.x < kMaxCtas;
}

// The producer thread (threadIdx.x == 0), first thing in the kernel.
__device__ __forceinline__ void entry() {
#if AITER_LITE_WGMMA_EXPERIMENT_TIMELINE
  if (threadIdx.x == 0 && blockIdx.x < kMaxCtas) {
    g_rows[blockIdx.x][0] = clock64();
    g_rows[blockIdx.x][1] = now_ns();
    for (int i = 2; i < kRow; ++i) g_rows[blockIdx.x][i] = 0;
  }
#endif
}

__device__ __forceinline__ void event(int consumer, int tile, Event e) {
#if AITER_LITE_WGMMA_EXPERIMENT_TIMELINE
  if (recorder(consumer) && tile < kTimelineTiles) g_rows[blockIdx.x][2 + 3 * tile + e] = clock64();
#endif
}

// Consumer 0 at its end: stamps the exit and prints the row (entry was written by another thread of
// this CTA before the kernel's first __syncthreads / cluster barrier, so it is visible here).
__device__ __forceinline__ void exit_and_print(int consumer) {
#if AITER_LITE_WGMMA_EXPERIMENT_TIMELINE
  if (!recorder(consumer)) return;
  unsigned long long* r = g_rows[blockIdx.x];
  r[2 + 3 * kTimelineTiles] = clock64();
  r[3 + 3 * kTimelineTiles] = now_ns();
  unsigned smid;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
  const unsigned long long c0 = r[0];
  auto d = [&](int i) { return r[i] ? static_cast<long long>(r[i] - c0) : -1ll; };
  printf("TL %d %u %llu %llu %lld | %lld %lld %lld | %lld %lld %lld | %lld %lld %lld | %lld %lld %lld | %lld %lld %lld\n",
         static_cast<int>(blockIdx.x), smid, r[1], r[3 + 3 * kTimelineTiles], d(2 + 3 * kTimelineTiles), d(2), d(3),
         d(4), d(5), d(6), d(7), d(8), d(9), d(10), d(11), d(12), d(13), d(14), d(15), d(16));
#endif
}

}  // namespace wgmma_timeline
}  // namespace aiter_lite
