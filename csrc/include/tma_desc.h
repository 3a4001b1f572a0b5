// Host side of the bulk tensor copies (TMA): building CUtensorMap descriptors.
//
// cuTensorMapEncodeTiled is a CUDA *driver* function. The module links only the (static) CUDA
// runtime, so the function is looked up once through cudaGetDriverEntryPointByVersion instead of
// linking libcuda (no -lcuda); <cuda.h> is included for the types and enums only.
//
// Encoding is pure host work (no GPU call, well under a microsecond), but a matmul encodes two maps
// per call, so the last few encodings are kept in a small per-thread cache keyed on every input.
//
// TMA's requirements (cuTensorMapEncodeTiled): global address 16-byte aligned; every stride but the
// innermost (which is 1 element) a multiple of 16 bytes and below 2^40; dims in [1, 2^32]; box dims
// in [1, 256], the inner one a multiple of 16 bytes and, with the 128-byte swizzle, at most 128 bytes.
// encode_tiled() returns false (and leaves the map undefined) when the driver rejects the request.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>

namespace aiter_lite {
namespace tma {

using EncodeTiledFn = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                   const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                   CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

// The driver's cuTensorMapEncodeTiled (CUDA 12.0 ABI), or nullptr if the driver lacks it.
inline EncodeTiledFn encode_tiled_fn() {
  static const EncodeTiledFn fn = [] {
    void* ptr = nullptr;
    cudaDriverEntryPointQueryResult status = cudaDriverEntryPointSymbolNotFound;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &ptr, 12000, cudaEnableDefault, &status) !=
            cudaSuccess ||
        status != cudaDriverEntryPointSuccess) {
      (void)cudaGetLastError();  // don't leave a sticky-looking error for the next launch check
      return static_cast<EncodeTiledFn>(nullptr);
    }
    return reinterpret_cast<EncodeTiledFn>(ptr);
  }();
  return fn;
}

// A 3-D tiled map: dims/box innermost first, strides in bytes of dims 1 and 2. 128-byte swizzle,
// zero fill out of bounds, 256-byte L2 promotion.
struct TiledMap3d {
  CUtensorMapDataType dtype;
  const void* address;
  uint64_t dims[3];
  uint64_t strides[2];
  uint32_t box[3];

  bool operator==(const TiledMap3d& o) const { return std::memcmp(this, &o, sizeof(*this)) == 0; }
};

inline bool encode_uncached(CUtensorMap* map, const TiledMap3d& k) {
  const EncodeTiledFn fn = encode_tiled_fn();
  if (fn == nullptr) return false;
  const cuuint32_t elem_strides[3] = {1, 1, 1};
  const CUresult r = fn(map, k.dtype, 3, const_cast<void*>(k.address), k.dims, k.strides, k.box, elem_strides,
                        CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return r == CUDA_SUCCESS;
}

// Encodes `k` into `map`, from the calling thread's cache of the last kSlots encodings when it can.
inline bool encode_tiled(CUtensorMap* map, TiledMap3d k) {
  constexpr int kSlots = 8;
  struct Slot {
    TiledMap3d key;
    CUtensorMap map;
    bool used;
  };
  thread_local Slot slots[kSlots] = {};
  thread_local int next = 0;
  // Padding bytes take part in operator== (memcmp): give them a fixed value.
  TiledMap3d key;
  std::memset(&key, 0, sizeof(key));
  key.dtype = k.dtype;
  key.address = k.address;
  std::memcpy(key.dims, k.dims, sizeof(key.dims));
  std::memcpy(key.strides, k.strides, sizeof(key.strides));
  std::memcpy(key.box, k.box, sizeof(key.box));
  for (Slot& s : slots) {
    if (s.used && s.key == key) {
      *map = s.map;
      return true;
    }
  }
  if (!encode_uncached(map, key)) return false;
  slots[next] = Slot{key, *map, true};
  next = (next + 1) % kSlots;
  return true;
}

}  // namespace tma
}  // namespace aiter_lite
