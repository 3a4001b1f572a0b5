// Inline-PTX wrappers for Hopper (sm_90 / sm_90a) kernels: mbarriers, bulk tensor copies (TMA),
// thread-block clusters, proxy fences and setmaxnreg. Device code only; no host API.
//
// Addresses of shared memory are 32-bit shared-window offsets (smem_u32), as the PTX takes them.
// Everything here is sm_90+ PTX; the callers (csrc/kernels/matmul_wgmma.cuh) guard their kernel
// bodies so that nothing is emitted for other targets. setmaxnreg and the multicast copy need the
// arch-specific target (sm_90a).
//
// Ordering rules these helpers rely on (PTX ISA, "asynchronous operations"):
//   - an mbarrier initialized by ordinary stores must be published with fence_mbarrier_init()
//     plus a CTA (or cluster) barrier before the copy engine or another CTA signals it;
//   - a TMA load completes on an mbarrier (complete_tx); a thread that observes that phase
//     complete (mbar_wait) may read the data, with the tensor cores (wgmma) or ordinary loads;
//   - wgmma reads shared memory through the async proxy: a stage may be refilled once the wgmma
//     groups reading it have completed (wgmma_wait) and the consumer has arrived on its barrier.
#pragma once

#include <cstdint>

#include "port.h"

#if defined(AITER_LITE_CUDA)

// A thread that waits on an mbarrier for longer than this traps (the kernel fails with an
// illegal-instruction error) instead of hanging the GPU: a pipeline bug then costs one failed
// launch, not a hung process. 0 disables the check. Read only after a failed try_wait.
#ifndef AITER_LITE_MBARRIER_TIMEOUT_NS
#define AITER_LITE_MBARRIER_TIMEOUT_NS 20000000000ull
#endif

namespace aiter_lite {
namespace sm90 {

__device__ __forceinline__ uint32_t smem_u32(const void* ptr) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(ptr));
}

__device__ __forceinline__ uint64_t globaltimer_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// ---- mbarriers ---------------------------------------------------------------------------------

__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(arrivals) : "memory");
}

// Makes the mbarrier inits of this thread visible to the async proxy and to the other CTAs of the
// cluster; follow it with __syncthreads() or cluster_sync().
__device__ __forceinline__ void fence_mbarrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

// One arrival that also raises the phase's expected transaction count by `bytes` (the producer,
// before the copies that will complete those bytes on this barrier).
__device__ __forceinline__ void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}

__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}

// Arrives on the mbarrier at the same shared offset in CTA `cta_rank` of the cluster (the own CTA
// included). Default (.release.cta) semantics: the arrival only has to follow the completion of
// the caller's wgmma reads (wgmma_wait), not make ordinary memory operations visible cluster-wide;
// .release.cluster would put a GPU-wide memory barrier (MEMBAR.ALL.GPU) into every k-tile.
__device__ __forceinline__ void mbar_arrive_cluster(uint32_t bar, uint32_t cta_rank) {
  asm volatile(
      "{\n\t.reg .b32 remote;\n\t"
      "mapa.shared::cluster.u32 remote, %0, %1;\n\t"
      "mbarrier.arrive.shared::cluster.b64 _, [remote];\n\t}"
      ::"r"(bar), "r"(cta_rank) : "memory");
}

// True once the phase with parity `parity` has completed (try_wait may suspend the thread for a
// short, hardware-chosen time before it gives up).
__device__ __forceinline__ bool mbar_try_wait(uint32_t bar, uint32_t parity) {
  uint32_t done;
  asm volatile(
      "{\n\t.reg .pred p;\n\t"
      "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
      "selp.b32 %0, 1, 0, p;\n\t}"
      : "=r"(done)
      : "r"(bar), "r"(parity)
      : "memory");
  return done != 0;
}

// Waits for the phase with parity `parity`. A fresh barrier is in phase 0, and waiting for parity 1
// returns at once (the "previous" phase counts as complete): producers start their empty-slot
// waits with parity 1 so that the first pass over the ring does not block.
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  if (mbar_try_wait(bar, parity)) return;
#if AITER_LITE_MBARRIER_TIMEOUT_NS > 0
  const uint64_t t0 = globaltimer_ns();
  while (!mbar_try_wait(bar, parity))
    if (globaltimer_ns() - t0 > AITER_LITE_MBARRIER_TIMEOUT_NS) __trap();
#else
  while (!mbar_try_wait(bar, parity)) {
  }
#endif
}

// ---- named barriers -----------------------------------------------------------------------------

// Named CTA barrier `id` (1-15; 0 is __syncthreads) over `threads` threads (a multiple of 32), whole
// warps only. sync waits for the barrier; arrive counts the calling warp and goes on.
__device__ __forceinline__ void named_bar_sync(uint32_t id, uint32_t threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

__device__ __forceinline__ void named_bar_arrive(uint32_t id, uint32_t threads) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

// ---- bulk tensor copies (TMA), global -> shared --------------------------------------------------

// Hints the tensor map (a __grid_constant__ kernel parameter) into the descriptor cache.
__device__ __forceinline__ void prefetch_tensormap(const void* tmap) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(tmap)) : "memory");
}

// The box of `tmap` at coordinates (c0 innermost, c1, c2) into shared `dst`, completing its bytes
// on mbarrier `bar` of this CTA. Out-of-bounds elements are filled with zeros (the tensor map's
// OOB fill mode) and still count towards the completed bytes.
__device__ __forceinline__ void tma_load_3d(uint32_t dst, const void* tmap, int32_t c0, int32_t c1, int32_t c2,
                                            uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];"
      ::"r"(dst), "l"(reinterpret_cast<uint64_t>(tmap)), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
      : "memory");
}

// As tma_load_3d, written to the same shared offset `dst` in every CTA of `cta_mask` (bit i: CTA
// rank i of the cluster), each completing on its own mbarrier at offset `bar` (sm_90a).
__device__ __forceinline__ void tma_load_3d_multicast(uint32_t dst, const void* tmap, int32_t c0, int32_t c1,
                                                      int32_t c2, uint32_t bar, uint16_t cta_mask) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%2, %3, %4}], [%5], %6;"
      ::"r"(dst), "l"(reinterpret_cast<uint64_t>(tmap)), "r"(c0), "r"(c1), "r"(c2), "r"(bar), "h"(cta_mask)
      : "memory");
}

// ---- shared-memory matrix stores and vector loads ------------------------------------------------

// Four 8x8 matrices of 16-bit elements from registers to shared memory. Register i holds matrix
// i's row (lane / 4), columns 2 * (lane % 4) .. +1 (the mma / wgmma accumulator layout, packed);
// lanes 8i .. 8i+7 give the shared addresses of matrix i's rows 0..7 (16 bytes each).
__device__ __forceinline__ void stmatrix_x4(uint32_t addr, uint32_t r0, uint32_t r1, uint32_t r2, uint32_t r3) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};" ::"r"(addr), "r"(r0), "r"(r1),
               "r"(r2), "r"(r3)
               : "memory");
}

__device__ __forceinline__ uint4 lds_128(uint32_t addr) {
  uint4 v;
  asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(addr)
               : "memory");
  return v;
}

__device__ __forceinline__ void sts_f32x2(uint32_t addr, float a, float b) {
  asm volatile("st.shared.v2.f32 [%0], {%1, %2};" ::"r"(addr), "f"(a), "f"(b) : "memory");
}

__device__ __forceinline__ void sts_f32x4(uint32_t addr, float a, float b, float c, float d) {
  asm volatile("st.shared.v4.f32 [%0], {%1, %2, %3, %4};" ::"r"(addr), "f"(a), "f"(b), "f"(c), "f"(d) : "memory");
}

// ---- clusters ------------------------------------------------------------------------------------

// The address of this CTA's shared offset `addr` in CTA `cta_rank` of the cluster (for the
// ld/st.shared::cluster forms below; distributed shared memory).
__device__ __forceinline__ uint32_t mapa_shared(uint32_t addr, uint32_t cta_rank) {
  uint32_t r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(addr), "r"(cta_rank));
  return r;
}

// 16 bytes of another CTA's shared memory (addr from mapa_shared). The writes it should see must be
// ordered before it by a cluster barrier (cluster_sync) or an acquire at cluster scope.
__device__ __forceinline__ float4 ld_cluster_f32x4(uint32_t addr) {
  float4 v;
  asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "r"(addr)
               : "memory");
  return v;
}

__device__ __forceinline__ uint32_t cluster_ctarank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}

// Barrier over every thread of every CTA of the cluster (all threads must call it, convergent).
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}

// ---- register reallocation between warpgroups (sm_90a) -------------------------------------------
// Every thread of the warpgroup must execute it; the kernel needs a register cap at entry
// (__launch_bounds__(threads, 1)), else ptxas ignores it (warning C7508).

template <int kRegs>
__device__ __forceinline__ void setmaxnreg_inc() {
  static_assert(kRegs % 8 == 0 && kRegs >= 24 && kRegs <= 256, "setmaxnreg takes a multiple of 8 in [24, 256]");
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(kRegs));
}

template <int kRegs>
__device__ __forceinline__ void setmaxnreg_dec() {
  static_assert(kRegs % 8 == 0 && kRegs >= 24 && kRegs <= 256, "setmaxnreg takes a multiple of 8 in [24, 256]");
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(kRegs));
}

}  // namespace sm90
}  // namespace aiter_lite

#endif  // AITER_LITE_CUDA
