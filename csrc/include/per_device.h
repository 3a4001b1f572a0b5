// Values read once per GPU (attributes, occupancy): cache[d] for the current device d, from read(d)
// the first time. Each caller keeps its own static cache; 0 marks "not read yet", so a read that
// gives 0 is read again next time. Host code, CUDA and HIP.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <stdexcept>

#include "port.h"

namespace aiter_lite {

inline constexpr int kMaxCachedDevices = 64;

template <typename V, typename Read>
V per_device(std::atomic<V> (&cache)[kMaxCachedDevices], Read read) {
  int dev = 0;
  AITER_LITE_GPU_CHECK(gpuGetDevice(&dev));
  if (dev < 0 || dev >= kMaxCachedDevices) throw std::invalid_argument("aiter_lite: device index out of range");
  V v = cache[dev].load(std::memory_order_relaxed);
  if (v == 0) {
    v = read(dev);
    cache[dev].store(v, std::memory_order_relaxed);
  }
  return v;
}

// Blocks of `kernel` (`threads` per block, `smem_bytes` of dynamic shared memory) that device `dev`
// runs at once: SMs x blocks per SM, at least 1. A read function for per_device.
template <typename Kernel>
int64_t resident_blocks_on(int dev, Kernel kernel, int threads, size_t smem_bytes) {
  int sms = 0, per_sm = 0;
  AITER_LITE_GPU_CHECK(gpuDeviceGetAttribute(&sms, gpuDevAttrMultiProcessorCount, dev));
  AITER_LITE_GPU_CHECK(gpuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem_bytes));
  return std::max<int64_t>(1, int64_t{sms} * per_sm);
}

}  // namespace aiter_lite
