// How fast can an mma.sync m16n8k16 main loop go on this GPU, and what does filling its tiles from L2
// cost it? (issue 5: the portable fp16/bf16 kernel, csrc/kernels/matmul_tc.cuh, stays near 440 TFLOP/s on an
// H100 at 4096^3; this measures the ceilings above it.) Standalone:
//   nvcc -std=c++17 -O3 -arch=sm_90a -Icsrc/include -o /tmp/mma_sync_ceiling bench/lab/mma_sync_ceiling.cu
// Every SM runs one block of 8 warps (the occupancy of configs 5-7), each warp a 64x64 tile of fp32
// accumulators (4 x 8 mma tiles, as the kernel's warp tile), fp16 inputs. Per k-step of 16, forms:
//   mma        32 mma.sync from fixed register fragments: the tensor pipe's own rate
//   ldsm_mma   + the fragments from shared memory: 4 ldmatrix.x4 (A, 64x16) and 4 ldmatrix.x4.trans
//              (B, 16x64) per warp, double-buffered in registers as the kernel does
//   +cp        + the kernel's shared-memory fill: 12 KB of cp.async per block and k-step (a 128x256
//              tile with BK = 64 is 48 KB per k-tile of 4 k-steps) from an L2-resident buffer, with a
//              wait and a barrier every 4 k-steps
//   +cp*3/4, +cp/2   the same with 9 and 6 KB per k-step: the L2 bytes per mma of 192x256 and
//              256x256 block tiles
//   +bulk      the 12 KB as one cp.async.bulk (sm_90 TMA, 1-D) per k-step, completing on an mbarrier
//              that every thread waits on (+bulk 1w: only the issuing thread, the rest at the barrier)
//   +ldg/sts   the 12 KB through registers (16-byte ld.global.cg, st.shared a k-step later)
//   cp only, bulk only, ldg/sts only   the fills alone: L2 -> shared bandwidth
// The SM clock during each run comes from clock64 against globaltimer on SM 0, so the per-clock
// rates are the hardware's, whatever clock the GPU chose under that load.
#include <cstdint>
#include <cstdio>

#include <cuda_runtime.h>

#include "cuda_check.h"

#define AITER_LITE_CUDA 1
#include "mma.cuh"
#include "sm90.cuh"

using namespace aiter_lite;

// What a form does per k-step: ldmatrix fragments, mma, and which shared-memory fill.
// kCpAsync34 / kCpAsyncHalf: the cp.async fill on 3 of 4 / every other k-step (9 / 6 KB per 256 mma:
// the L2 bytes per mma of a 192x256 / 256x256 block tile).
// kBulkOneWaiter: as kBulk, but only the issuing thread waits on the mbarrier; the others wait at
// the block barrier after it.
// kLdgSts: the 12 KB through registers instead (16-byte ld.global.cg, stored to shared memory one
// k-step later), the pre-cp.async way.
enum Fill { kNoFill = 0, kCpAsync = 1, kCpAsyncHalf = 2, kBulk = 3, kCpAsync34 = 4, kBulkOneWaiter = 5, kLdgSts = 6 };

constexpr int kWarps = 8, kThreads = kWarps * 32, kMTiles = 4, kNTiles = 8;
constexpr int kFragBytes = 16 * 1024;                 // per warp: 8 ldmatrix.x4 x 512 B x 4 rotating k-steps
constexpr int kFillBytes = 48 * 1024;                 // fill target (one k-tile of A + B)
constexpr int kStepFill = 12 * 1024;                  // fill per k-step (kCpAsync, kBulk, kLdgSts)
constexpr int kSmemBytes = kWarps * kFragBytes + kFillBytes + 16;  // + 2 mbarriers

__host__ __device__ constexpr bool is_cp_async(int fill) {
  return fill == kCpAsync || fill == kCpAsyncHalf || fill == kCpAsync34;
}
__host__ __device__ constexpr bool is_bulk(int fill) { return fill == kBulk || fill == kBulkOneWaiter; }
// Bytes a block fills per k-step, on average over the k-steps that skip it.
constexpr int fill_bytes_per_kstep(int fill) {
  return fill == kNoFill ? 0 : fill == kCpAsyncHalf ? kStepFill / 2 : fill == kCpAsync34 ? kStepFill * 3 / 4 : kStepFill;
}

__device__ __forceinline__ void bulk_copy(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
               ::"r"(dst), "l"(src), "r"(bytes), "r"(bar) : "memory");
}

template <bool kLdsm, bool kMma, int kFill>
__global__ void __launch_bounds__(kThreads, 1)
    ceiling_kernel(const uint4* __restrict__ fill_src, int fill_src_chunks, float* sink, int ksteps,
                   unsigned long long* clocks) {
  extern __shared__ __align__(128) unsigned char smem[];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  // The thread that issues the bulk copies and waits for them.
  const bool bulk_thread = threadIdx.x == 0;
  // Non-zero fp16 contents (fragments and shared memory).
  uint32_t a[2][kMTiles][4], b[2][kNTiles][2];
#pragma unroll
  for (int s = 0; s < 2; ++s) {
#pragma unroll
    for (int i = 0; i < kMTiles; ++i)
#pragma unroll
      for (int j = 0; j < 4; ++j) a[s][i][j] = 0x1c001c00u + (threadIdx.x * 7 + i * 4 + j) % 64;
#pragma unroll
    for (int i = 0; i < kNTiles; ++i)
#pragma unroll
      for (int j = 0; j < 2; ++j) b[s][i][j] = 0x1c001c00u + (threadIdx.x * 5 + i * 2 + j) % 64;
  }
  for (int i = threadIdx.x; i < (kSmemBytes - 16) / 4; i += blockDim.x)
    reinterpret_cast<uint32_t*>(smem)[i] = 0x1c001c00u + i % 61;
  const uint32_t fill_base = mma::smem_u32(smem) + kWarps * kFragBytes;
  const uint32_t bars = fill_base + kFillBytes;
  if (is_bulk(kFill) && bulk_thread) {
    sm90::mbar_init(bars, 1);
    sm90::mbar_init(bars + 8, 1);
    sm90::fence_mbarrier_init();
  }
  __syncthreads();
  float acc[kMTiles][kNTiles][4];
#pragma unroll
  for (int i = 0; i < kMTiles; ++i)
#pragma unroll
    for (int j = 0; j < kNTiles; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r) acc[i][j][r] = 0.001f * (r + 1);

  // Each ldmatrix.x4 reads 512 contiguous bytes (lane l: bytes 16 l .. 16 l + 15): no bank conflicts.
  const uint32_t frag_base = mma::smem_u32(smem) + warp * kFragBytes + lane * 16;
  auto load_frags = [&](int buf, int kstep) {
    const uint32_t base = frag_base + (kstep & 3) * 4096;
#pragma unroll
    for (int i = 0; i < kMTiles; ++i) mma::ldmatrix_x4(a[buf][i], base + i * 512);
#pragma unroll
    for (int j = 0; j < kNTiles; j += 2) {
      uint32_t r[4];
      mma::ldmatrix_x4_trans(r, base + 2048 + j * 256);
      b[buf][j][0] = r[0], b[buf][j][1] = r[1], b[buf][j + 1][0] = r[2], b[buf][j + 1][1] = r[3];
    }
  };
  // cp.async: 3 chunks of 16 B per thread and k-step (12 KB per block), skipped on some k-steps for
  // kCpAsync34 / kCpAsyncHalf.
  // kBulk: thread 0 copies the k-step's 12 KB with one bulk copy that completes on the group's
  // mbarrier (a group is 4 k-steps, one k-tile of BK = 64).
  uint4 staged[3];  // kLdgSts: the previous k-step's loads
  // Where chunk `chunk` of k-tile `group` comes from: each block and k-tile a different 48 KB window.
  auto src_chunk = [&](int group, int chunk, int window_chunks) -> int {
    return (blockIdx.x * 3072 + group * 977 + chunk) % window_chunks;
  };
  auto fill = [&](int kstep) {
    const int q = kstep & 3, group = kstep >> 2;
    if constexpr (is_cp_async(kFill)) {
      if (kFill == kCpAsyncHalf && (kstep & 1)) return;
      if (kFill == kCpAsync34 && q == 3) return;
#pragma unroll
      for (int c = 0; c < 3; ++c) {
        const int chunk = (q * 3 + c) * kThreads + threadIdx.x;  // 0 .. 3071 (48 KB)
        mma::cp_async_16(fill_base + chunk * 16, fill_src + src_chunk(group, chunk, fill_src_chunks));
      }
    } else if constexpr (kFill == kLdgSts) {
#pragma unroll
      for (int c = 0; c < 3; ++c) {
        const int chunk = (q * 3 + c) * kThreads + threadIdx.x;
        if (kstep > 0)
          asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};" ::"r"(fill_base + chunk * 16), "r"(staged[c].x),
                       "r"(staged[c].y), "r"(staged[c].z), "r"(staged[c].w) : "memory");
        asm volatile("ld.global.cg.v4.u32 {%0, %1, %2, %3}, [%4];"
                     : "=r"(staged[c].x), "=r"(staged[c].y), "=r"(staged[c].z), "=r"(staged[c].w)
                     : "l"(fill_src + src_chunk(group, chunk, fill_src_chunks)));
      }
    } else if constexpr (is_bulk(kFill)) {
      if (bulk_thread) {
        const uint32_t bar = bars + (group & 1) * 8;
        if (q == 0) sm90::mbar_arrive_expect_tx(bar, 4 * kStepFill);
        // one contiguous 12 KB copy (768 chunks) that must not run past the buffer
        bulk_copy(fill_base + q * kStepFill, fill_src + src_chunk(group, q * 768, fill_src_chunks - 768), kStepFill, bar);
      }
    }
  };
  // End of a group of 4 k-steps: wait for the previous group's fill, then a block barrier.
  auto group_end = [&](int kstep) {
    const int group = kstep >> 2;
    if constexpr (is_cp_async(kFill)) mma::cp_async_wait<2>();
    if constexpr (is_bulk(kFill))  // kBulk: all threads wait; kBulkOneWaiter: thread 0, then the barrier
      if (group >= 1 && (kFill == kBulk || bulk_thread))
        sm90::mbar_wait(bars + ((group - 1) & 1) * 8, ((group - 1) >> 1) & 1);
    __syncthreads();
  };

  if (kLdsm) load_frags(0, 0);
  const unsigned long long c0 = clock64();
  const uint64_t t0 = sm90::globaltimer_ns();
  for (int k = 0; k < ksteps; k += 2) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int cur = half, nxt = half ^ 1;
      if (kLdsm) load_frags(nxt, k + half + 1);
      if (kFill != kNoFill) {
        fill(k + half);
        if (is_cp_async(kFill)) mma::cp_async_commit();
      }
      if (kMma) {
#pragma unroll
        for (int i = 0; i < kMTiles; ++i)
#pragma unroll
          for (int jj = 0; jj < kNTiles; ++jj) {
            const int j = (i & 1) ? kNTiles - 1 - jj : jj;  // serpentine, as the kernel
            mma::mma_m16n8k16(acc[i][j], a[cur][i], b[cur][j], mma::F16Tag{});
          }
      }
      if (kFill != kNoFill && half == 1 && (k & 3) == 2) group_end(k + half);  // every 4 k-steps (BK = 64)
    }
  }
  if constexpr (is_cp_async(kFill)) mma::cp_async_wait<0>();
  if constexpr (is_bulk(kFill)) {
    const int last = (ksteps - 1) >> 2;
    sm90::mbar_wait(bars + (last & 1) * 8, (last >> 1) & 1);
  }
  const uint64_t t1 = sm90::globaltimer_ns();
  const unsigned long long c1 = clock64();
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < kMTiles; ++i)
#pragma unroll
    for (int j = 0; j < kNTiles; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r) s += acc[i][j][r];
  if (s == 1234.5f) sink[0] = s;  // practically never: keeps the work alive
  if (kLdsm) {
    uint32_t x = 0;
#pragma unroll
    for (int i = 0; i < kMTiles; ++i) x ^= a[0][i][0] ^ a[1][i][3];
#pragma unroll
    for (int j = 0; j < kNTiles; ++j) x ^= b[0][j][0] ^ b[1][j][1];
    if (x == 0x12345678u) sink[1] = 1.f;
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    clocks[0] = c1 - c0;
    clocks[1] = t1 - t0;
  }
}

template <bool kLdsm, bool kMma, int kFill>
int time_form(const char* name, int sms, const uint4* src, int src_chunks, float* sink, unsigned long long* clocks) {
  auto kernel = ceiling_kernel<kLdsm, kMma, kFill>;
  CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes));
  const int ksteps = 16384;
  kernel<<<sms, kThreads, kSmemBytes>>>(src, src_chunks, sink, 64, clocks);
  CHECK(cudaDeviceSynchronize());
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  float best = 1e30f;
  double mhz = 0;
  for (int rep = 0; rep < 7; ++rep) {
    CHECK(cudaEventRecord(e0));
    kernel<<<sms, kThreads, kSmemBytes>>>(src, src_chunks, sink, ksteps, clocks);
    CHECK(cudaEventRecord(e1));
    CHECK(cudaEventSynchronize(e1));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, e0, e1));
    unsigned long long h[2];
    CHECK(cudaMemcpy(h, clocks, sizeof h, cudaMemcpyDeviceToHost));
    if (ms < best) best = ms, mhz = double(h[0]) / double(h[1]) * 1e3;
  }
  const double steps = double(sms) * ksteps, secs = best * 1e-3;
  const double mma = kMma ? steps * kWarps * kMTiles * kNTiles : 0.0;
  const double fill_bytes = steps * fill_bytes_per_kstep(kFill);
  std::printf("| %-10s | %8.3f | %6.0f | %7.1f | %6.3f | %6.2f | %6.1f |\n", name, best, mhz, mma * 4096.0 / secs / 1e12,
              mma / sms / (secs * mhz * 1e6), fill_bytes / secs / 1e12, fill_bytes / sms / (secs * mhz * 1e6));
  CHECK(cudaEventDestroy(e0));
  CHECK(cudaEventDestroy(e1));
  return 0;
}

int main() {
  int dev = 0, sms = 0;
  CHECK(cudaGetDevice(&dev));
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, dev));
  const int src_chunks = (8 << 20) / 16;  // 8 MB: L2-resident, as the kernel's operands mostly are
  uint4* src = nullptr;
  float* sink = nullptr;
  unsigned long long* clocks = nullptr;
  CHECK(cudaMalloc(&src, size_t(src_chunks) * 16));
  CHECK(cudaMemset(src, 0x3c, size_t(src_chunks) * 16));
  CHECK(cudaMalloc(&sink, 4));
  CHECK(cudaMalloc(&clocks, 16));
  std::printf("mma.sync m16n8k16 fp16 ceilings on %s (%d SMs; 1 block x 8 warps per SM, 64x64 warp tiles)\n",
              prop.name, sms);
  std::printf("| form | ms (best of 7) | SM MHz | TFLOP/s | mma/SM/clk | fill TB/s | fill B/SM/clk |\n"
              "| --- | --- | --- | --- | --- | --- | --- |\n");
  if (time_form<false, true, kNoFill>("mma", sms, src, src_chunks, sink, clocks)) return 1;
  if (time_form<true, true, kNoFill>("ldsm_mma", sms, src, src_chunks, sink, clocks)) return 1;
  if (time_form<true, true, kCpAsync>("+cp", sms, src, src_chunks, sink, clocks)) return 1;
  if (time_form<true, true, kCpAsync34>("+cp*3/4", sms, src, src_chunks, sink, clocks)) return 1;
  if (time_form<true, true, kCpAsyncHalf>("+cp/2", sms, src, src_chunks, sink, clocks)) return 1;
  if (time_form<true, true, kBulk>("+bulk", sms, src, src_chunks, sink, clocks)) return 1;
  if (time_form<true, true, kBulkOneWaiter>("+bulk 1w", sms, src, src_chunks, sink, clocks)) return 1;
  if (time_form<false, false, kCpAsync>("cp only", sms, src, src_chunks, sink, clocks)) return 1;
  if (time_form<false, false, kBulk>("bulk only", sms, src, src_chunks, sink, clocks)) return 1;
  if (time_form<true, true, kLdgSts>("+ldg/sts", sms, src, src_chunks, sink, clocks)) return 1;
  if (time_form<false, false, kLdgSts>("ldg/sts only", sms, src, src_chunks, sink, clocks)) return 1;
  return 0;
}
