// Asynchronous global -> shared copies (CUDA cp.async, sm_80+) behind one interface; on HIP a plain load
// and store with the same meaning, so one kernel source serves both. Device code only.
#pragma once

#include <cstdint>

#include "port.h"

#if defined(__CUDACC__) || defined(__HIPCC__)
namespace aiter_lite {

// 16 bytes from global src to shared dst, or 16 zero bytes when !valid (src is then not read, but must
// still be a valid address expression: pass the tensor's base).
__device__ __forceinline__ void copy16_to_shared_async(void* dst, const void* src, bool valid) {
#if defined(AITER_LITE_CUDA)
  const uint32_t d = static_cast<uint32_t>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src), "r"(valid ? 16 : 0)
               : "memory");
#else
  *static_cast<uint4*>(dst) = valid ? *static_cast<const uint4*>(src) : uint4{0, 0, 0, 0};
#endif
}

// 4 bytes from global src to shared dst (both 4-byte aligned), or 4 zero bytes when !valid.
__device__ __forceinline__ void copy4_to_shared_async(void* dst, const void* src, bool valid) {
#if defined(AITER_LITE_CUDA)
  const uint32_t d = static_cast<uint32_t>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(d), "l"(src), "r"(valid ? 4 : 0) : "memory");
#else
  *static_cast<uint32_t*>(dst) = valid ? *static_cast<const uint32_t*>(src) : 0u;
#endif
}

// Closes this thread's current group of copies.
__device__ __forceinline__ void copy_to_shared_commit() {
#if defined(AITER_LITE_CUDA)
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

// Waits until at most kPending of this thread's committed groups are still in flight. Other lanes' copies
// become visible to this thread only after a barrier (warp_sync) that follows their own wait.
template <int kPending>
__device__ __forceinline__ void copy_to_shared_wait() {
#if defined(AITER_LITE_CUDA)
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
#endif
}

}  // namespace aiter_lite
#endif
