// Inline-PTX wrappers for Ampere-style tensor-core kernels (sm_80+, also run on sm_90):
// cp.async (16-byte global->shared copies with zero fill), ldmatrix (8x8 b16 matrices from shared
// memory into mma fragments) and mma.sync (m16n8k16 fp16/bf16, m16n8k8 tf32; fp32 accumulators).
//
// CUDA only: on HIP this header declares nothing and the matmul falls back to its SIMT kernel.
#pragma once

#include <cstdint>

#include "port.h"

#if defined(AITER_LITE_CUDA)

namespace aiter_lite {
namespace mma {

// Shared-memory address of a generic pointer, as the 32-bit operand that ldmatrix/cp.async take.
__device__ __forceinline__ uint32_t smem_u32(const void* ptr) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(ptr));
}

// ---- cp.async --------------------------------------------------------------------------------

// Copies 16 bytes from global `src` to shared `dst` (both 16-byte aligned). `.cg` caches in L2 only
// (each tile is read once per block).
__device__ __forceinline__ void cp_async_16(uint32_t dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src) : "memory");
}

// As cp_async_16, reading only the first `src_bytes` (0..16) and zero-filling the rest:
// out-of-range chunks pass 0 and any valid address.
__device__ __forceinline__ void cp_async_16_zfill(uint32_t dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes)
               : "memory");
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

// Waits until at most kPending of this thread's committed groups are still in flight.
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

// ---- ldmatrix --------------------------------------------------------------------------------
// Lane l supplies the address of row (l % 8) of matrix (l / 8); each row is 16 contiguous bytes.
// Without .trans lane t receives row t/4, b16 columns 2(t%4)..+1 of each matrix (the A-row /
// B-column fragment layout of mma.sync); with .trans it receives that element of the transpose.

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// One 32-bit shared-memory load at a 32-bit shared address (volatile: stays behind barriers).
__device__ __forceinline__ uint32_t lds_b32(uint32_t addr) {
  uint32_t v;
  asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(v) : "r"(addr));
  return v;
}

// ---- mma.sync --------------------------------------------------------------------------------
// Fragments (g = lane / 4, t = lane % 4), row-major A (16 x K), column-major B (K x 8):
//   m16n8k16: a0 (g, 2t..2t+1) a1 (g+8, 2t..) a2 (g, 2t+8..) a3 (g+8, 2t+8..); b0 (k 2t.., n g) b1 (k 2t+8..)
//   m16n8k8 tf32: a0 (g, t) a1 (g+8, t) a2 (g, t+4) a3 (g+8, t+4); b0 (k t, n g) b1 (k t+4, n g)
//   accumulators: c0 (g, 2t) c1 (g, 2t+1) c2 (g+8, 2t) c3 (g+8, 2t+1)

// Element type tags of the 16-bit mma: fp16 and bf16 share fragment layouts.
struct F16Tag {};
struct BF16Tag {};

__device__ __forceinline__ void mma_m16n8k16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2],
                                             F16Tag) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

__device__ __forceinline__ void mma_m16n8k16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2],
                                             BF16Tag) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// Operands hold fp32 bit patterns already rounded to tf32 (see to_tf32).
__device__ __forceinline__ void mma_m16n8k8_tf32(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// fp32 bits -> an mma tf32 operand rounded to nearest (without it the tensor core truncates the low
// 13 mantissa bits, which doubles the error of the product). Two forms:
//   sm_90+ (default there): cvt.rn.tf32.f32, one F2FP.TF32 (round to nearest even; infinities and
//     NaNs stay what they are). On the H100 it converts 52.4 elements per SM and clock, against 39.2
//     for the two-instruction form below and 28.6 for cvt.rna (bench/lab/tf32_round_rate.cu).
//   sm_80/86/89 (cvt.rn.tf32 needs sm_90), or AITER_LITE_TF32_ROUND_F2FP=0: round to nearest, ties
//     away from zero, as cvt.rna.tf32.f32 gives it, in two instructions: FSETP and a predicated IADD
//     of half a tf32 ulp (bit 12) to finite values, updating the loaded register in place (cvt.rna
//     is three: its final mask of the low 13 bits is redundant in front of mma, which drops them
//     itself). Infinities and NaNs pass unchanged (a NaN whose payload is only in the low 13 bits
//     reads as an infinity either way). An unconditional add would be one instruction, but it
//     carries NaNs with a full payload (0x7fffffff, the GPU's default NaN) into the sign bit: -0.
// Ties to even and ties away differ only on exact ties; their error statistics are the same.
#if !defined(AITER_LITE_TF32_ROUND_F2FP)
#define AITER_LITE_TF32_ROUND_F2FP 1
#endif
__device__ __forceinline__ uint32_t to_tf32(uint32_t fp32_bits) {
#if AITER_LITE_TF32_ROUND_F2FP && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  uint32_t out;
  asm("cvt.rn.tf32.f32 %0, %1;\n" : "=r"(out) : "f"(__uint_as_float(fp32_bits)));
  return out;
#else
  asm("{\n"
      "  .reg .pred finite;\n"
      "  .reg .f32 mag;\n"
      "  mov.b32 mag, %0;\n"
      "  abs.f32 mag, mag;\n"
      "  setp.lt.f32 finite, mag, 0f7F800000;\n"
      "  @finite add.u32 %0, %0, 4096;\n"
      "}\n"
      : "+r"(fp32_bits));
  return fp32_bits;
#endif
}

}  // namespace mma
}  // namespace aiter_lite

#endif  // AITER_LITE_CUDA
