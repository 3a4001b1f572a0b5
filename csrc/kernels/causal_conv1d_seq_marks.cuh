// seq_idx as bits: the marks kernel (causal_conv1d_seq_marks.cu) turns a [B, L] int32 seq_idx into two bits a
// position, which the rows kernels of the forward and the backward read for a vector's window (window_marks) and
// apply by zeroing the window values a position cannot read, instead of comparing ids tap by tap. CUDA and HIP.
//
// Word k of row b's marks, position t = 32 k + i of row b at bit i (a row of the marks: a guard word, the
// seq_marks_words(L) words, a guard word; seq_marks_row points at the first of the words):
//   .x "a new sequence starts at t": t is not padding and the nearest earlier token that is not, within the halo,
//      has another id;
//   .y "t is padding" (id < 0). Padding is transparent: a window skips it and reads on, as the reference's rule
//      (a tap reads a position when its id equals its output's) does.
// Before 0, positions carry id[0]. Both bits set: t's window meets its own id again across another id (seq_idx that
// decreases, which the op refuses where it can check, but not under graph capture or torch.compile). The starts
// cannot express that: the forward computes such windows by the reference's rule; the backward also gets a flag a
// block (recur_flags, at most kSeqMarksBlocks) and its reduce kernel recomputes the whole call by that rule.
#pragma once

#include <cstdint>

#include "port.h"

namespace aiter_lite {
namespace conv1d {

constexpr int kSeqMarksBlocks = 1024;
inline int64_t seq_marks_words(int64_t L) { return (L + 31) / 32; }
// uint2 words of the marks a row takes, its two guards included; the marks of [B, L] take B of them.
inline int64_t seq_marks_stride(int64_t L) { return seq_marks_words(L) + 2; }
// Blocks of the marks kernel (at most kSeqMarksBlocks): the count of recur flags it writes.
int seq_marks_blocks(int64_t B, int64_t L);
// Programmatic dependent launch (sm_90): a kernel launched with programmatic_launch() after the marks kernel may start
// while the marks kernel runs; before it reads the marks it calls wait_for_marks() (griddepcontrol.wait: the marks
// kernel complete and its writes visible). Without such a launch, and on other GPUs, both are no-ops.
__device__ __forceinline__ void wait_for_marks() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
// Whether the current device can take a programmatic dependent launch (compute capability 9.0 or later, CUDA).
bool programmatic_launch_supported();

// marks: [B, seq_marks_stride(L)]; recur_flags: seq_marks_blocks(B, L) words, or nullptr (not written).
void seq_marks_run(const int32_t* seq_idx, int64_t batch_stride, int64_t seq_stride, int64_t B, int64_t L, int halo,
                   uint2* marks, uint32_t* recur_flags, gpuStream_t stream);

// The marks of a vector's window, positions e - kSeqPad + m of a row at bit m (m < kSeqLen, kSeqPad >= the halo):
// sequence starts (bit 0 and the bits past the row clear: no pair of positions inside the window has a start
// between them there), padding tokens (every bit; before 0 those of id[0]) and recur, the positions whose window
// meets their id across another (both bits set; bit 0 included).
struct WindowMarks {
  uint32_t starts, pads, recur;
};

__host__ __device__ __forceinline__ const uint2* seq_marks_row(const uint2* marks, int64_t b, int64_t words) {
  return marks + b * (words + 2) + 1;
}

// The guards make both loads unconditional: word -1 holds the padding bits of the positions before 0 (those of
// id[0]), word `words` zeros, and a window past the row (a tile's last lanes) reads that one.
template <int kSeqPad, int kSeqLen>
__device__ __forceinline__ WindowMarks window_marks(const uint2* __restrict__ row_marks, int64_t words, int64_t e) {
  static_assert(kSeqLen <= 32 && kSeqPad < 32, "a window's marks span at most two words");
  const int64_t p0 = e - kSeqPad;
  const int last = static_cast<int>(words);
  const int w0 = static_cast<int>(max(min(p0 >> 5, int64_t{last}), int64_t{-1}));  // floor, clamped to the guards
  const uint2 lo = row_marks[w0];
  const uint2 hi = row_marks[min(w0 + 1, last)];
  const int sh = static_cast<int>(p0 & 31);
  constexpr uint32_t kAll = kSeqLen < 32 ? (1u << kSeqLen) - 1u : ~0u;
  auto cut = [&](uint32_t a, uint32_t b) {
    return static_cast<uint32_t>(((static_cast<uint64_t>(b) << 32) | a) >> sh) & kAll;
  };
  const uint32_t starts = cut(lo.x, hi.x), pads = cut(lo.y, hi.y);
  return WindowMarks{starts & ~1u, pads, starts & pads};
}

// All ones where bit `bit` of bits is clear, zero where it is set (a sign-extended bit), and v with its bits ANDed
// with such a mask: walk_cut zeroes without a branch (as `if (bit) v = 0` the compiler branched on every bit: ncu,
// H100, bf16 8 x 5120 x 2048 W = 4, 1.9x the plain forward's instructions).
__device__ __forceinline__ uint32_t keep_mask(uint32_t bits, int bit) {
  return ~static_cast<uint32_t>(static_cast<int32_t>(bits << (31 - bit)) >> 31);
}
__device__ __forceinline__ float masked(float v, uint32_t mask) { return __uint_as_float(__float_as_uint(v) & mask); }

// The window of a vector cut at its sequence starts by zeroing, not masked tap by tap: xs holds x at the positions
// e - kHalo .. e + kLen - kHalo - 1 (the window bit of xs[m] is m + kOff). Padding is zeroed first; a start before
// the vector zeroes the values before it; then, walking positions i = 0 .. kCount - 1 in order, a start at i zeroes
// the kHalo values before it (neither it nor later positions read them) and at(i) runs, so each position's taps
// read its own sequence and zeros. Shared by the forward's and the backward's rows kernels.
template <int kHalo, int kLen, int kOff, int kCount, typename At>
__device__ __forceinline__ void walk_cut(float (&xs)[kLen], uint32_t starts, uint32_t pads, At&& at) {
  if (pads != 0u) {  // rare: a branch
#pragma unroll
    for (int m = 0; m < kLen; ++m) xs[m] = masked(xs[m], keep_mask(pads, m + kOff));
  }
#pragma unroll
  for (int b = 1; b < kHalo; ++b) {  // starts before the vector: position b - kHalo cannot read xs[0 .. b - 1]
    const uint32_t keep = keep_mask(starts, b + kOff);
#pragma unroll
    for (int m = 0; m < b; ++m) xs[m] = masked(xs[m], keep);
  }
#pragma unroll
  for (int i = 0; i < kCount; ++i) {
    const uint32_t keep = keep_mask(starts, i + kHalo + kOff);
#pragma unroll
    for (int m = i; m < i + kHalo; ++m) xs[m] = masked(xs[m], keep);
    at(i);
  }
}

}  // namespace conv1d
}  // namespace aiter_lite
