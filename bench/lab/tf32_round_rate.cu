// Throughput of the ways to round fp32 mma operands to tf32 (`bench/gpu.sh lab/tf32_round_rate.cu` builds and runs
// this; standalone: nvcc -O3 -arch=sm_90a -o /tmp/tf32_round_rate bench/lab/tf32_round_rate.cu).
//
// The mma.sync tf32 kernel rounds every fragment element it loads (csrc/include/mma.cuh, to_tf32):
// one element per thread for every HMMA.1688 a warp issues in the default configs, so the rounding's
// issue and pipe cost matter. Forms timed, each on 32 independent registers per thread, 8 warps per
// SM, every SM busy:
//   add      the loop's own integer add alone (baseline)
//   rna      cvt.rna.tf32.f32: FSETP + predicated IADD + LOP3 (the kernel before this change)
//   setp_add finite ? bits + 0x1000 : bits (FSETP + predicated IADD; the kernel below sm_90, or with
//            -DAITER_LITE_TF32_ROUND_F2FP=0)
//   rn       cvt.rn.tf32.f32 (sm_90+): one F2FP.TF32 (the kernel's default on sm_90; 52.4 vs 39.2 for
//            setp_add per SM and clock on an H100)
// Prints ns per warp-instruction-slot and element conversions per SM per clock: if rn is at least as
// fast per element as setp_add, the F2FP form is the better default on this GPU.
#include <cstdint>
#include <cstdio>

#include <cuda_runtime.h>

#include "cuda_check.h"

enum Mode { kAdd = 0, kRna = 1, kSetpAdd = 2, kRn = 3 };

template <int kMode>
__device__ __forceinline__ uint32_t round_tf32(uint32_t x) {
  if constexpr (kMode == kRna) {
    uint32_t out;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(out) : "f"(__uint_as_float(x)));
    return out;
  } else if constexpr (kMode == kSetpAdd) {
    asm("{\n .reg .pred p;\n .reg .f32 m;\n mov.b32 m, %0;\n abs.f32 m, m;\n setp.lt.f32 p, m, 0f7F800000;\n"
        " @p add.u32 %0, %0, 4096;\n}" : "+r"(x));
    return x;
  } else if constexpr (kMode == kRn) {
#if __CUDA_ARCH__ >= 900
    uint32_t out;
    asm("cvt.rn.tf32.f32 %0, %1;" : "=r"(out) : "f"(__uint_as_float(x)));
    return out;
#else
    return x;
#endif
  } else {
    return x;
  }
}

// Each iteration: v[j] = round(v[j] + step) for 32 independent j (the add keeps the compiler from
// folding repeated rounding of the same value).
template <int kMode>
__global__ void __launch_bounds__(256) rate_kernel(uint32_t* sink, int iters) {
  uint32_t v[32];
#pragma unroll
  for (int j = 0; j < 32; ++j) v[j] = 0x3f800000u + (threadIdx.x * 32 + j) * 0x10001u;
  const uint32_t step = 0x1235u + blockIdx.x;
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int j = 0; j < 32; ++j) v[j] = round_tf32<kMode>(v[j] + step);
  }
  uint32_t acc = 0;
#pragma unroll
  for (int j = 0; j < 32; ++j) acc ^= v[j];
  if (acc == 0x12345678u) sink[0] = acc;  // practically never: keeps the loop alive
}

template <int kMode>
int time_mode(const char* name, int sms, int clock_khz, uint32_t* sink) {
  const int iters = 4096, blocks = sms * 8;  // 8 blocks of 8 warps per SM (the kernel's warps per SM: 8)
  rate_kernel<kMode><<<blocks, 256>>>(sink, 16);
  CHECK(cudaDeviceSynchronize());
  cudaEvent_t t0, t1;
  CHECK(cudaEventCreate(&t0));
  CHECK(cudaEventCreate(&t1));
  float best = 1e30f;
  for (int rep = 0; rep < 5; ++rep) {
    CHECK(cudaEventRecord(t0));
    rate_kernel<kMode><<<blocks, 256>>>(sink, iters);
    CHECK(cudaEventRecord(t1));
    CHECK(cudaEventSynchronize(t1));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, t0, t1));
    if (ms < best) best = ms;
  }
  const double elems = double(blocks) * 256 * 32 * iters;
  const double clocks = double(best) * 1e-3 * clock_khz * 1e3;
  std::printf("  %-9s %8.3f ms  %7.1f conversions/clk/SM (incl. the add)\n", name, best, elems / clocks / sms);
  return 0;
}

int main() {
  int dev = 0, sms = 0, clock_khz = 0, major = 0;
  CHECK(cudaGetDevice(&dev));
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, dev));
  CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
  uint32_t* sink = nullptr;
  CHECK(cudaMalloc(&sink, 4));
  std::printf("tf32 rounding throughput (%d SMs, %d MHz max clock; per-clock rates assume that clock)\n", sms,
              clock_khz / 1000);
  if (time_mode<kAdd>("add", sms, clock_khz, sink)) return 1;
  if (time_mode<kRna>("rna", sms, clock_khz, sink)) return 1;
  if (time_mode<kSetpAdd>("setp_add", sms, clock_khz, sink)) return 1;
  if (major >= 9 && time_mode<kRn>("rn", sms, clock_khz, sink)) return 1;
  CHECK(cudaFree(sink));
  return 0;
}
