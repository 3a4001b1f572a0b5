// 16-byte vector loads and stores for element-wise and streaming kernels. CUDA and HIP.
//
// Vec<T, N> is N elements of T held in registers with the alignment of its byte size, so a load or
// store of a whole Vec is a single 128-bit access (LDG.E.128 / STG.E.128 on NVIDIA) when
// N * sizeof(T) == 16. Element and 32-bit word access use constant indices only, so the compiler keeps
// everything in registers.
#pragma once

#include <cstddef>
#include <cstdint>

#include "port.h"

namespace aiter_lite {

// Bytes moved by one vector access.
constexpr int kVecBytes = 16;

// Elements of T in one 16-byte vector.
template <typename T>
constexpr int kVecElts = kVecBytes / static_cast<int>(sizeof(T));

// Unsigned integer (or CUDA vector) type of exactly kBytes bytes: the type a vector is moved as.
template <int kBytes> struct BytesToType;
template <> struct BytesToType<1> { using type = uint8_t; };
template <> struct BytesToType<2> { using type = uint16_t; };
template <> struct BytesToType<4> { using type = uint32_t; };
template <> struct BytesToType<8> { using type = uint2; };
template <> struct BytesToType<16> { using type = uint4; };

template <typename T, int N>
struct alignas(sizeof(T) * N) Vec {
  static constexpr int kElts = N;
  static constexpr int kBytes = static_cast<int>(sizeof(T)) * N;
  static_assert(kBytes == 1 || kBytes == 2 || kBytes == 4 || kBytes == 8 || kBytes == 16,
                "a Vec must be 1, 2, 4, 8 or 16 bytes");
  using raw_t = typename BytesToType<kBytes>::type;
  static constexpr int kWords = kBytes >= 4 ? kBytes / 4 : 0;  // whole 32-bit words in the vector

  T elt[N];

  __device__ __forceinline__ raw_t& raw() { return *reinterpret_cast<raw_t*>(elt); }
  __device__ __forceinline__ const raw_t& raw() const { return *reinterpret_cast<const raw_t*>(elt); }
  // 32-bit word i (constant i < kWords), e.g. for warp shuffles.
  __device__ __forceinline__ uint32_t& word(int i) { return reinterpret_cast<uint32_t*>(elt)[i]; }
  __device__ __forceinline__ uint32_t word(int i) const { return reinterpret_cast<const uint32_t*>(elt)[i]; }

  __device__ __forceinline__ void set_zero() { raw() = raw_t{}; }
  // ptr must be aligned to kBytes.
  __device__ __forceinline__ void load(const T* ptr) { raw() = *reinterpret_cast<const raw_t*>(ptr); }
  __device__ __forceinline__ void store(T* ptr) const { *reinterpret_cast<raw_t*>(ptr) = raw(); }
};

__host__ __device__ __forceinline__ bool is_aligned(const void* ptr, size_t bytes) {
  return reinterpret_cast<uintptr_t>(ptr) % bytes == 0;
}

}  // namespace aiter_lite
