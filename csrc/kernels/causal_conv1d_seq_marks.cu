// The seq_idx marks kernel (causal_conv1d_seq_marks.cuh says what the bits mean), shared by the rows kernels of the
// forward and the backward. CUDA and HIP.
#include <algorithm>
#include <atomic>
#include <cstdint>

#include "causal_conv1d_common.cuh"
#include "causal_conv1d_seq_marks.cuh"
#include "per_device.h"
#include "port.h"

namespace aiter_lite {
namespace conv1d {
namespace {

// One thread a position; each 32 lanes gather their bits by shuffles (n: a multiple of 32, whole words).
__global__ void __launch_bounds__(256)
    causal_conv1d_seq_marks_kernel(const int32_t* __restrict__ seq, int64_t batch_stride, int64_t seq_stride,
                                   int64_t L, int halo, int64_t words, int64_t n, uint2* __restrict__ out,
                                   uint32_t* __restrict__ recur_flags) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;");  // a dependent launched programmatically may start now
#endif
  const int lane = lane_id();
  bool any_recur = false;
  for (int64_t base = static_cast<int64_t>(blockIdx.x) * blockDim.x; base < n;
       base += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t idx = base + threadIdx.x, word = idx >> 5;
    uint32_t start = 0u, pad = 0u;
    if (idx < n) {
      const int64_t b = word / words;
      const int64_t t = (word - b * words) * 32 + (idx & 31);
      if (t < L) {
        const int32_t* row = seq + b * batch_stride;
        const int32_t id = row[t * seq_stride];
        pad = id < 0 ? 1u : 0u;
        bool seen = false, crossed = false, recur = false;  // crossed: a token of another id in (t - j, t)
#pragma unroll
        for (int j = 1; j < kMaxTemplateWidth; ++j) {
          if (j > halo || id < 0) break;
          const int32_t earlier = row[(t - j > 0 ? t - j : 0) * seq_stride];
          if (earlier < 0) continue;
          if (!seen) start = earlier != id ? 1u : 0u;
          seen = true;
          recur = recur || (crossed && earlier == id);
          crossed = crossed || earlier != id;
        }
        if (recur) start = pad = 1u;
        any_recur = any_recur || recur;
      }
    }
    uint32_t starts = start << (idx & 31), pads = pad << (idx & 31);
#pragma unroll
    for (int off = 1; off < 32; off <<= 1) {
      starts |= warp_shfl(starts, lane ^ off);
      pads |= warp_shfl(pads, lane ^ off);
    }
    if ((idx & 31) == 0 && idx < n) {
      const int64_t b = word / words, k = word - b * words;
      uint2* row = out + b * (words + 2) + 1;
      row[k] = make_uint2(starts, pads);
      if (k == 0) row[-1] = make_uint2(0u, (pads & 1u) != 0u ? ~0u : 0u);  // before 0: the padding bit of id[0]
      if (k == words - 1) row[words] = make_uint2(0u, 0u);
    }
  }
  if (recur_flags == nullptr) return;
  const bool block_recur = __syncthreads_or(any_recur) != 0;
  if (threadIdx.x == 0) recur_flags[blockIdx.x] = block_recur ? 1u : 0u;
}

}  // namespace

// Read once per device (per_device), as the launchers' other device attributes: each seq_idx forward asks.
bool programmatic_launch_supported() {
#if defined(AITER_LITE_HIP)
  return false;
#else
  static std::atomic<int> cache[kMaxCachedDevices] = {};
  return per_device(cache, [](int dev) {
           int major = 0;
           AITER_LITE_GPU_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
           return major >= 9 ? 1 : -1;
         }) > 0;
#endif
}

int seq_marks_blocks(int64_t B, int64_t L) {
  return static_cast<int>(std::min<int64_t>((B * seq_marks_words(L) * 32 + 255) / 256, kSeqMarksBlocks));
}

void seq_marks_run(const int32_t* seq_idx, int64_t batch_stride, int64_t seq_stride, int64_t B, int64_t L, int halo,
                   uint2* marks, uint32_t* recur_flags, gpuStream_t stream) {
  const int64_t words = seq_marks_words(L), n = B * words * 32;
  causal_conv1d_seq_marks_kernel<<<static_cast<unsigned>(seq_marks_blocks(B, L)), 256, 0, stream>>>(
      seq_idx, batch_stride, seq_stride, L, halo, words, n, marks, recur_flags);
  AITER_LITE_LAUNCH_CHECK();
}

}  // namespace conv1d
}  // namespace aiter_lite
