// CUDA/HIP portability for kernel sources (.cu). Include this, never cuda_runtime.h or
// hip_runtime.h directly, so that one source compiles with nvcc and hipcc.
#pragma once

#include <stdexcept>
#include <string>

#if defined(__HIPCC__) || defined(__HIP_PLATFORM_AMD__)
#include <hip/hip_fp16.h>
#include <hip/hip_runtime.h>
#define AITER_LITE_HIP 1
using gpuStream_t = hipStream_t;
using gpuError_t = hipError_t;
using half_t = __half;
#if __has_include(<hip/hip_bf16.h>)  // ROCm 6: CUDA-style __hip_bfloat16 and its conversions
#include <hip/hip_bf16.h>
using bfloat16_t = __hip_bfloat16;
#else  // ROCm 5.x: only the hip_bfloat16 struct; the two conversions the kernels use, CUDA-named
#include <hip/hip_bfloat16.h>
using bfloat16_t = hip_bfloat16;
__host__ __device__ inline float __bfloat162float(hip_bfloat16 v) { return static_cast<float>(v); }
__host__ __device__ inline hip_bfloat16 __float2bfloat16_rn(float v) { return hip_bfloat16(v); }  // nearest even
__host__ __device__ inline hip_bfloat16 __ushort_as_bfloat16(unsigned short bits) {
  hip_bfloat16 v;
  v.data = bits;
  return v;
}
#endif
#define gpuSuccess hipSuccess
#define gpuGetLastError hipGetLastError
#define gpuGetErrorString hipGetErrorString
#define gpuFuncSetAttribute hipFuncSetAttribute
#define gpuFuncAttributeMaxDynamicSharedMemorySize hipFuncAttributeMaxDynamicSharedMemorySize
#define gpuGetDevice hipGetDevice
#define gpuDeviceGetAttribute hipDeviceGetAttribute
#define gpuDevAttrMultiProcessorCount hipDeviceAttributeMultiprocessorCount
#define gpuOccupancyMaxActiveBlocksPerMultiprocessor hipOccupancyMaxActiveBlocksPerMultiprocessor
#define kWarpSize 64
#else
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#define AITER_LITE_CUDA 1
using gpuStream_t = cudaStream_t;
using gpuError_t = cudaError_t;
using half_t = __half;
using bfloat16_t = __nv_bfloat16;
#define gpuSuccess cudaSuccess
#define gpuGetLastError cudaGetLastError
#define gpuGetErrorString cudaGetErrorString
#define gpuFuncSetAttribute cudaFuncSetAttribute
#define gpuFuncAttributeMaxDynamicSharedMemorySize cudaFuncAttributeMaxDynamicSharedMemorySize
#define gpuGetDevice cudaGetDevice
#define gpuDeviceGetAttribute cudaDeviceGetAttribute
#define gpuDevAttrMultiProcessorCount cudaDevAttrMultiProcessorCount
#define gpuOccupancyMaxActiveBlocksPerMultiprocessor cudaOccupancyMaxActiveBlocksPerMultiprocessor
#define kWarpSize 32
#endif

namespace aiter_lite {

[[noreturn]] inline void throw_gpu_error(gpuError_t err, const char* what, const char* file, int line) {
  throw std::runtime_error(std::string(what) + " failed: " + gpuGetErrorString(err) + " (" + file + ":" +
                           std::to_string(line) + ")");
}

}  // namespace aiter_lite

// Checks a runtime call; throws with file and line so the Python caller gets a RuntimeError.
#define AITER_LITE_GPU_CHECK(expr)                                                   \
  do {                                                                               \
    gpuError_t aiter_lite_err_ = (expr);                                             \
    if (aiter_lite_err_ != gpuSuccess)                                               \
      ::aiter_lite::throw_gpu_error(aiter_lite_err_, #expr, __FILE__, __LINE__);     \
  } while (0)

// After a launch: a bad configuration surfaces here, not at the next sync.
#define AITER_LITE_LAUNCH_CHECK() AITER_LITE_GPU_CHECK(gpuGetLastError())

// ---- Warp-level shims (device code only). Kernels use these instead of __shfl_sync / __shfl so that
// one source compiles for both; all lanes of the warp must call them (full mask on CUDA).
#if defined(__CUDACC__) || defined(__HIPCC__)
namespace aiter_lite {

__device__ __forceinline__ int lane_id() { return static_cast<int>(threadIdx.x) & (kWarpSize - 1); }

// Value of `v` held by lane `src_lane` (0..kWarpSize-1) of the calling warp.
__device__ __forceinline__ unsigned int warp_shfl(unsigned int v, int src_lane) {
#if defined(AITER_LITE_HIP)
  return __shfl(v, src_lane, kWarpSize);
#else
  return __shfl_sync(0xffffffffu, v, src_lane, kWarpSize);
#endif
}

// True on every lane when `pred` holds on every lane of the warp.
__device__ __forceinline__ bool warp_all(bool pred) {
#if defined(AITER_LITE_HIP)
  return __all(pred) != 0;
#else
  return __all_sync(0xffffffffu, pred) != 0;
#endif
}

// Orders the shared-memory accesses of the lanes of one warp (a barrier for that warp only).
__device__ __forceinline__ void warp_sync() {
#if defined(AITER_LITE_HIP)
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "wavefront");
  __builtin_amdgcn_wave_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "wavefront");
#else
  __syncwarp();
#endif
}

// A hint that the memory at `ptr` will be read soon: its line is fetched into L2 (CUDA; nothing on HIP). No fault
// where ptr is outside any allocation, but callers keep it inside.
__device__ __forceinline__ void prefetch_l2(const void* ptr) {
#if defined(AITER_LITE_HIP)
  (void)ptr;
#else
  asm volatile("prefetch.global.L2 [%0];" ::"l"(ptr));
#endif
}

}  // namespace aiter_lite
#endif

// ---- Device attributes read by the matmul launcher (config choice).
#if defined(AITER_LITE_HIP)
using gpuDeviceAttr_t = hipDeviceAttribute_t;
#define gpuDevAttrMaxSharedMemoryPerBlockOptin hipDeviceAttributeSharedMemPerBlockOptin
#else
using gpuDeviceAttr_t = cudaDeviceAttr;
#define gpuDevAttrMaxSharedMemoryPerBlockOptin cudaDevAttrMaxSharedMemoryPerBlockOptin
#endif
