// Causal depthwise conv1d backward, "rows" kernel: dense [B, D, L] x, dout and dx, 16-byte aligned, seq_idx
// on aligned rows. CUDA and HIP.
//
// Aligned rows (L a multiple of the elements in 16 bytes): vectors are counted from the row start.
// Shifted rows (any other L, kShifted): vectors are still counted from the row start, but a row starts on
// its element's alignment only. 16-bit types: the warp loads the tile's flat 16-byte vectors (coalesced) into a
// shared-memory stage at a 5-word stride and each lane reads its row vector's 5 words there (conflict-free) and
// shifts them by a half word where needed; fp32 reads elements; dx is written by 32-bit words or elements; the
// row's last vector is partial (zeros past L). Session 19 (H100, bf16 8 x 5120 x 2047 W = 4): 1.75x faster than
// session 12's form (kFlat), which 16-bit W <= 2 keep: the tensor as one flat array of 16-byte vectors, a row's
// tile covering the vectors that hold its positions -(W-1) .. L-1 and masking the neighbouring rows' elements.
// Tried and dropped: 32-bit loads a lane straight from global memory (9% slower: each touches 16 sectors), whole
// tiles moved by warp shuffles (20% slower than those), dx stored that way (12% slower).
//
// A warp tile is kTileVecs consecutive 16-byte vectors of one row (lane l: vectors l, l + 32, ...),
// as in the forward's rows kernel. Per tile:
//   1. every load is issued first: x and dout vectors, the x words just before the tile (the halo of
//      its first vector; initial states or zeros before the row start) and, for the first lanes, the
//      vector just after the tile with its halo (their dpre is the lookahead of the tile's last dx);
//   2. ascending over the lane's vectors: the x halo comes from the previous lane by warp shuffle,
//      pre and dpre are recomputed, dpre stays in registers, dweight/dbias sums accumulate;
//   3. descending: the width-1 dpre values after a vector come from the next lanes by warp shuffle
//      (the last lanes take them from the next vector step, or from the vector after the tile), and
//      dx is written with one 16-byte store; dfinal and dinit touch only the row's two ends.
// The tile's dweight/dbias sums are reduced over the warp and written to its partial row.
//
// Chunks (session 25): a warp walks a chunk of consecutive tiles of one row from the last down
// (rows_chunking: about 16384 chunks in all, at least 2 tiles each where the row has them), so the row's setup, the
// weights and the partial row come once a chunk, and a tile's lookahead (step 1's vector after it) is the carried
// shuffle of the first vectors of the tile after it (prev_ahead); only the chunk's last tile loads the vector after
// it, before the loop. Why: the kernel issued close to one instruction a cycle on each scheduler (ncu, H200: 9.2
// cycles per instruction at 7.6 warps a scheduler) and the per-tile part was about a fifth of it (SASS: 48 issued
// instructions an element for bf16 W = 4 with 2 vectors a lane, 37 with the loop). H200, bf16 4 x 4096 x 4096 W = 4:
// 139.5 -> 126.4 us (causal-conv1d 115); docs/causal_conv1d.md "Session 25". Shifted rows walk chunks too, with one
// vector a lane (with two, their loop spilled 100-230 bytes at 64 registers, ptxas 13.0); session 26, H200: large odd
// rows 5-19% faster than with two vectors and no loop, rows of one to three tiles 1-6% slower.
// Session 26 also cut instructions in the tile (about 34 an element for bf16 W = 4): bf16 widened by one shift or
// mask (word_float), one SiLU branch a vector (with_silu), and the loop's inner tiles take a copy of the tile
// without the row-end checks (kInnerTiles); bf16 4 x 4096 x 4096 W = 4 126.8 -> 121.5 us, W = 8 176.8 -> 154.1. With
// seq_idx, an inner tile whose windows hold no mark on any lane takes the plain taps (bf16 1 x 4096 x 32768, 64
// sequences: 280 -> 268 us).
//
// seq_idx (kSeq; aligned rows, and shifted rows through row-relative vectors): a first small kernel
// (causal_conv1d_seq_marks.cuh, shared with the forward) writes two bits per position to the workspace, "a new
// sequence starts here" and "padding token" (padding is transparent: a window skips it and reads on, as the
// reference's rule, equal ids are one sequence, does). With the
// other loads, a lane reads the marks of its vectors' windows (two 8-byte words each, shared by every channel of the
// batch row). Every vector cuts its window at the starts by zeroing (dpre_cut, dx_cut: walking the positions, a start
// zeroes the kHalo values before it that later positions would read; padding reads as zeros), so the taps themselves
// are the plain ones. seq_idx that decreases (an id recurring across another, which the op refuses where it can check)
// cannot be cut this way: the marks kernel flags it and the reduce kernel recomputes the backward by the reference's
// rule (causal_conv1d_bwd.cu). Why every vector, not a warp-uniform skip where no window holds a mark: that doubled the
// code and measured slower. H100, session 20 (docs/causal_conv1d.md), 1 x 4096 x 32768 bf16, 64 packed sequences (282
// us without seq_idx): a mask a tap with a per-window ids path 487 us (96 registers, 5 blocks an SM; the ids path alone
// took it from 64 to 96 registers); the cut 451 us at 5 blocks, 414 at 6, 371 at 8 blocks with the ids path moved to
// the reduce kernel (64 registers, 12 bytes spilled).
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "causal_conv1d_bwd.h"
#include "causal_conv1d_common.cuh"
#include "causal_conv1d_params.h"
#include "causal_conv1d_seq_marks.cuh"
#include "dtype_traits.cuh"
#include "env_int.h"
#include "port.h"
#include "vec.cuh"

namespace aiter_lite {
namespace conv1d {
namespace {

// Vectors per lane on large problems (1 on small ones). AITER_LITE_BWD_ROWS_VECS=4 builds the 4-vector
// form for A/B timing (bench/lab/conv_bwd).
#ifdef AITER_LITE_BWD_ROWS_VECS
constexpr int kRowsLargeVecs = AITER_LITE_BWD_ROWS_VECS;
#else
constexpr int kRowsLargeVecs = 2;
#endif
// Rows off the vector grid (kShifted), session 19: row-relative vectors (kUnaligned; 16-bit types read through a
// shared-memory stage and written by 32-bit stores, fp32 by element), except 16-bit W <= 2 without seq_idx, which
// keep session 12's form (kFlat: 16-byte vectors of the flat array, masked at the row ends; H100, session 19: 0.79
// of copy on bf16 8 x 4096 x 4093 W = 2 against 0.73 through the stage, which wins from W = 3 on). seq_idx takes
// row-relative vectors (a flat vector may hold two rows, whose marks differ).
constexpr bool flat_shifted_rows(int elt_bytes, int width, bool seq) { return !seq && elt_bytes == 2 && width <= 2; }

template <typename T_, int kWidth_, int kVecs_, bool kShifted_, bool kSeq_ = false>
struct BwdRowsTraits {
  using T = T_;
  static constexpr bool kShifted = kShifted_;
  static constexpr bool kFlat = kShifted_ && flat_shifted_rows(sizeof(T_), kWidth_, kSeq_);
  static constexpr bool kUnaligned = kShifted_ && !kFlat;  // row-relative vectors
  // The chunk loop's inner tiles (neither row end) take a copy of the tile without the row-end checks: aligned rows
  // only, and not fp32 with seq_idx (there the copy spilled 48 bytes, 28 before, and took 2% longer: H200, session
  // 26, 4 x 4096 x 4096 W = 4, 229 -> 233 us; 16-bit: 1-5% faster, bf16 4 x 4096 x 4096 W = 8 160 -> 155 us).
  static constexpr bool kInnerTiles = !kShifted_ && !(kSeq_ && sizeof(T_) == 4);
  // 16-bit unaligned rows read x and dout through a per-warp shared-memory stage (load_staged): the tile's flat
  // 16-byte vectors (coalesced loads) at a 5-word stride, from which each lane reads its row vector's 5 words
  // (an odd stride: no bank conflicts). kStageWords: one tensor's stage, kVecs * kWarpSize + 1 vectors.
  static constexpr bool kStaged = kUnaligned && sizeof(T_) == 2;
  static constexpr int kStageWords = (kVecs_ * kWarpSize + 1) * 5;  // kWarpSize: 64 on HIP
  static constexpr bool kSeq = kSeq_;
  static constexpr int kWidth = kWidth_;
  static constexpr int kHalo = kWidth - 1;
  static constexpr int kHaloAlloc = kHalo > 0 ? kHalo : 1;
  static constexpr int kThreads = 128;
  // Shifted rows take one vector a lane (bwd_rows_plan): with two, their tile loop spilled 100-230 bytes at 64
  // registers (ptxas 13.0).
  static_assert(!kShifted_ || kVecs_ == 1, "shifted rows: one vector a lane");
  // Blocks per SM: 8 (<= 64 registers) for W <= 4, fewer for wider filters so that their windows do
  // not spill (ptxas 13.0, sm_90a: 64 registers spilled 4-164 bytes at W >= 6, or W = 5 fp32 with 2 vectors).
  // Flat shifted rows (W <= 2) hold their masks too: 7 blocks (72 registers; session 19, H100: 12-17% faster than 5
  // on odd L); so do staged rows at W = 4, whose tile loop spilled 32 bytes at 64 registers (96 with seq_idx) and
  // none at 72 (ptxas 13.0; H200, session 26: bf16 8 x 5120 x 2047 W = 4 with the loop at 7 blocks 222.6 us against
  // 239.5 with two vectors a lane and no loop, same run). Other row-relative shifted rows take the aligned bounds.
  // seq_idx: 8 blocks at W <= 4 (session 20, H100: 371 us against 414 at 6 and 451 at 5 on bf16 1 x 4096 x 32768;
  // 64 registers, 12 bytes spilled).
  static constexpr int kMinBlocks =
      kFlat || (kStaged && kWidth_ == 4) ? 7
      : kSeq_ ? (kWidth_ <= 4 ? 8 : (kVecs_ >= 2 ? 4 : (kWidth_ <= 6 ? 5 : 4)))
              : (kVecs_ >= 4 ? (kWidth_ <= 4 ? 5 : 4) : (kWidth_ <= 4 ? 8 : (kWidth_ <= 6 ? 6 : 5)));
  static constexpr int kWarps = kThreads / kWarpSize;
  static constexpr int kNElts = kVecElts<T>;
  static constexpr int kVecs = kVecs_;
  static constexpr int kTileVecs = kWarpSize * kVecs;
  static constexpr int kEltsPerWord = 4 / static_cast<int>(sizeof(T));
  // 32-bit words just before a vector that hold its x halo.
  static constexpr int kHaloWords = (kHalo + kEltsPerWord - 1) / kEltsPerWord;
  static constexpr int kHaloWordsAlloc = kHaloWords > 0 ? kHaloWords : 1;
  // Lanes after a vector that hold its dpre lookahead (kHalo elements).
  static constexpr int kAheadLanes = (kHalo + kNElts - 1) / kNElts;
  // seq_idx: sequence numbers on either side of a vector (its halo).
  static constexpr int kSeqPad = kHalo > 0 ? kHalo : 1;
  static constexpr int kSeqLen = kNElts + 2 * kSeqPad;
  using vec_t = Vec<T, kNElts>;
  static_assert(sizeof(vec_t) == 16, "rows kernel moves 16-byte vectors");
  static_assert((kHaloWords + 3) / 4 < kWarpSize && kAheadLanes < kWarpSize, "halos come from nearby lanes");
};

struct BwdRowsArgs {
  const void* x;
  const void* dout;
  void* dx;
  WeightArgs w;
  BwdStateArgs st;
  BwdPartials partials;
  const int32_t* seq_idx;     // kSeq: [B, L]
  int64_t seq_batch_stride, seq_seq_stride;
  const uint2* seq_marks;   // kSeq: [B, seq_marks_stride(L)] words of 32 positions (causal_conv1d_seq_marks.cuh)
  int64_t seq_words;
  int64_t seqlen;
  int32_t row_vecs;         // aligned: L / kNElts; unaligned: ceil(L / kNElts), the last vector partial
  int32_t lead;             // shifted: positions before 0 a tile covers (W - 1 with dinit, else 0)
  int64_t n_elts;           // shifted: B * D * L, the flat array's length
  uint32_t n_chunks;        // rows * chunks per row (rows_chunking) < 2^31
  uint32_t tiles_per_row, tiles_per_chunk;
  FastDivmod32 div_chunks_per_row, div_dim;
  bool silu;
};

// x[e - kHalo .. e + kNElts) as fp32 from the halo words before the vector and the vector itself.
template <typename Ktraits>
__device__ __forceinline__ void window_from_words(float (&xs)[Ktraits::kHalo + Ktraits::kNElts],
                                                  const uint32_t (&halo_words)[Ktraits::kHaloWordsAlloc],
                                                  const typename Ktraits::vec_t& xv) {
  using T = typename Ktraits::T;
  constexpr int kEltsPerWord = Ktraits::kEltsPerWord;
#pragma unroll
  for (int i = 0; i < Ktraits::kHalo; ++i) {
    const int m = Ktraits::kHaloWords * kEltsPerWord - Ktraits::kHalo + i;
    xs[i] = word_float<T>(halo_words[m / kEltsPerWord], m % kEltsPerWord);
  }
#pragma unroll
  for (int i = 0; i < Ktraits::kNElts; ++i) xs[Ktraits::kHalo + i] = elt_float(xv, i);
}

// seq_idx: the vector's dout read as 0 at padding tokens (bits: the window's padding bits).
template <typename Ktraits>
__device__ __forceinline__ void zero_padding(typename Ktraits::vec_t& gv, uint32_t window_pads) {
  const uint32_t bits = (window_pads >> Ktraits::kSeqPad) & ((1u << Ktraits::kNElts) - 1u);
  if (bits != 0u) {
#pragma unroll
    for (int i = 0; i < Ktraits::kNElts; ++i)
      if ((bits >> i) & 1u) gv.elt[i] = from_float<typename Ktraits::T>(0.f);
  }
}

// The per-position pieces of a vector, shared by the plain and the seq_idx forms (xs: x at positions
// e - kHalo .. e + kNElts - 1; dpw: dpre at positions e .. e + kNElts + kHalo - 1).
// pre-activation of position i: bias + the taps over xs[i .. i + kHalo].
template <typename Ktraits>
__device__ __forceinline__ float pre_at(const float (&xs)[Ktraits::kHalo + Ktraits::kNElts],
                                        const float (&w)[Ktraits::kWidth], float bias, int i) {
  float pre = bias;
#pragma unroll
  for (int j = 0; j < Ktraits::kWidth; ++j) pre = fmaf(w[j], xs[i + j], pre);
  return pre;
}

// dweight/dbias sums of position i: acc[j] += dp * x at tap j, acc[kW] += dp.
template <typename Ktraits>
__device__ __forceinline__ void add_sums_at(float (&acc)[Ktraits::kWidth + 1], float dp,
                                            const float (&xs)[Ktraits::kHalo + Ktraits::kNElts], int i) {
#pragma unroll
  for (int j = 0; j < Ktraits::kWidth; ++j) acc[j] = fmaf(dp, xs[i + j], acc[j]);
  acc[Ktraits::kWidth] += dp;
}

// dx of position i: the taps over dpw[i .. i + kHalo].
template <typename Ktraits>
__device__ __forceinline__ float dx_at(const float (&dpw)[Ktraits::kNElts + Ktraits::kHalo],
                                       const float (&w)[Ktraits::kWidth], int i) {
  float acc_x = 0.f;
#pragma unroll
  for (int j = 0; j < Ktraits::kWidth; ++j) acc_x = fmaf(w[j], dpw[i + Ktraits::kHalo - j], acc_x);
  return acc_x;
}

// dp[i] for the first kCount elements of the vector.
template <typename Ktraits, int kCount = Ktraits::kNElts>
__device__ __forceinline__ void dpre_of_vector(float (&dp)[Ktraits::kNElts],
                                               const float (&xs)[Ktraits::kHalo + Ktraits::kNElts],
                                               const typename Ktraits::vec_t& gv, const float (&w)[Ktraits::kWidth],
                                               float bias, bool silu) {
  with_silu(silu, [&](auto k_silu) {
#pragma unroll
    for (int i = 0; i < kCount; ++i) dp[i] = act_grad(pre_at<Ktraits>(xs, w, bias, i), elt_float(gv, i), k_silu);
  });
}

// dweight/dbias sums of a vector.
template <typename Ktraits>
__device__ __forceinline__ void sums_of_vector(float (&acc)[Ktraits::kWidth + 1], const float (&dp)[Ktraits::kNElts],
                                               const float (&xs)[Ktraits::kHalo + Ktraits::kNElts]) {
#pragma unroll
  for (int i = 0; i < Ktraits::kNElts; ++i) add_sums_at<Ktraits>(acc, dp[i], xs, i);
}

// dx of a vector from dpw.
template <typename Ktraits>
__device__ __forceinline__ void dx_of_vector(float (&g)[Ktraits::kNElts],
                                             const float (&dpw)[Ktraits::kNElts + Ktraits::kHalo],
                                             const float (&w)[Ktraits::kWidth]) {
#pragma unroll
  for (int i = 0; i < Ktraits::kNElts; ++i) g[i] = dx_at<Ktraits>(dpw, w, i);
}

// seq_idx: dp (the first kCount elements) and, with kSums, the dweight/dbias sums of the vector whose x window is xs
// (changed: zeroed where cut, walk_cut), starts and pads its window's bits.
template <typename Ktraits, int kCount = Ktraits::kNElts, bool kSums = true>
__device__ __forceinline__ void dpre_cut(float (&dp)[Ktraits::kNElts], float (&acc)[Ktraits::kWidth + 1],
                                         float (&xs)[Ktraits::kHalo + Ktraits::kNElts],
                                         const typename Ktraits::vec_t& gv, const float (&w)[Ktraits::kWidth],
                                         float bias, bool silu, uint32_t starts, uint32_t pads) {
  constexpr int kHalo = Ktraits::kHalo;
  with_silu(silu, [&](auto k_silu) {
    walk_cut<kHalo, kHalo + Ktraits::kNElts, Ktraits::kSeqPad - kHalo, kCount>(xs, starts, pads, [&](int i) {
      dp[i] = act_grad(pre_at<Ktraits>(xs, w, bias, i), elt_float(gv, i), k_silu);
      if constexpr (kSums) add_sums_at<Ktraits>(acc, dp[i], xs, i);
    });
  });
}

// dx of a vector from dpw (dpre at its positions and the kHalo after: dpw[m] is position e + m; changed: zeroed
// where cut), walking its positions down: after position r's dx, a start at r zeroes the dpre values from r on
// that an earlier position could read (the kHalo from r). Padding tokens get dx 0.
template <typename Ktraits>
__device__ __forceinline__ void dx_cut(float (&g)[Ktraits::kNElts], float (&dpw)[Ktraits::kNElts + Ktraits::kHalo],
                                       const float (&w)[Ktraits::kWidth], uint32_t starts, uint32_t pads) {
  constexpr int kHalo = Ktraits::kHalo, kNElts = Ktraits::kNElts, kPad = Ktraits::kSeqPad;
#pragma unroll
  for (int r = kNElts + kHalo - 1; r >= 0; --r) {
    if (r < kNElts) g[r] = dx_at<Ktraits>(dpw, w, r);  // the starts after r are applied, its own is not
    if (r >= 1 && ((starts >> (r + kPad)) & 1u)) {
#pragma unroll
      for (int m = r; m < r + kHalo && m < kNElts + kHalo; ++m) dpw[m] = 0.f;
    }
  }
  const uint32_t own_pads = (pads >> kPad) & ((1u << kNElts) - 1u);
  if (own_pads != 0u) {
#pragma unroll
    for (int i = 0; i < kNElts; ++i)
      if ((own_pads >> i) & 1u) g[i] = 0.f;
  }
}

// Vector v of the flat array of n_elts elements at base, zeros outside it (its last, partial vector element by
// element).
template <typename Ktraits>
__device__ __forceinline__ void load_flat_vector(typename Ktraits::vec_t& out, const typename Ktraits::T* base,
                                                 int64_t v, int64_t n_elts) {
  constexpr int kNElts = Ktraits::kNElts;
  const int64_t e = v * kNElts;
  if (v >= 0 && e + kNElts <= n_elts) {
    out.load(base + e);
  } else {
    out.set_zero();
    if (v >= 0) {
#pragma unroll
      for (int i = 0; i < kNElts; ++i)
        if (e + i < n_elts) out.elt[i] = base[e + i];
    }
  }
}

// Flat shifted rows: vector v of the flat array, zeros outside it (the array's last, partial vector element by
// element). Aligned rows: vector v of the row, zeros past its end. Unaligned rows: the row's positions
// v * kNElts .. + kNElts - 1 element by element (the row start has only the element's alignment), zeros past L.
template <typename Ktraits>
__device__ __forceinline__ void load_vector(typename Ktraits::vec_t& out, const typename Ktraits::T* base, int64_t v,
                                            const BwdRowsArgs& a) {
  constexpr int kNElts = Ktraits::kNElts;
  if constexpr (Ktraits::kUnaligned) {
    const int64_t e = v * kNElts;
    if (sizeof(typename Ktraits::T) == 2 && e + kNElts + 2 <= a.seqlen) {
      // 16-bit: the 5 aligned 32-bit words around the vector, shifted by a half word where the row's start
      // is not 4-byte aligned (32-bit loads: half the load instructions of 16-bit ones; all 5 words in the row)
      const uintptr_t addr = reinterpret_cast<uintptr_t>(base + e);
      const uint32_t* w = reinterpret_cast<const uint32_t*>(addr & ~uintptr_t{3});
      const uint32_t sh = static_cast<uint32_t>(addr & 2u) * 8u;  // 0 or 16 bits
      uint32_t words[5];
#pragma unroll
      for (int i = 0; i < 5; ++i) words[i] = w[i];
#pragma unroll
      for (int i = 0; i < 4; ++i) out.word(i) = __funnelshift_r(words[i], words[i + 1], sh);
    } else if (e + kNElts <= a.seqlen) {
#pragma unroll
      for (int i = 0; i < kNElts; ++i) out.elt[i] = base[e + i];
    } else {
      out.set_zero();
#pragma unroll
      for (int i = 0; i < kNElts; ++i)
        if (e + i < a.seqlen) out.elt[i] = base[e + i];
    }
  } else if constexpr (Ktraits::kFlat) {
    load_flat_vector<Ktraits>(out, base, v, a.n_elts);
  } else {
    if (v < a.row_vecs) out.load(base + v * kNElts);
    else out.set_zero();
  }
}

// Staged rows: the lane's row vectors k (positions (v0 + 32 k) * kNElts ..) of x and dout for the row at flat
// element row_off. The warp loads the tile's kVecs * 32 + 1 flat vectors from the row's aligned base (16-byte
// coalesced loads) into its stage at a 5-word stride; row vector j is then words q .. q + 4 of flat vectors j and
// j + 1 (q = off / 2, off = row_off mod kNElts), shifted by a half word when off is odd. Positions past L read 0.
template <typename Ktraits>
__device__ __forceinline__ void load_staged(typename Ktraits::vec_t (&xv)[Ktraits::kVecs],
                                            typename Ktraits::vec_t (&gv)[Ktraits::kVecs], const BwdRowsArgs& a,
                                            int64_t row_off, int v0, int lane, uint32_t* __restrict__ stage) {
  using T = typename Ktraits::T;
  using vec_t = typename Ktraits::vec_t;
  constexpr int kNElts = Ktraits::kNElts, kVecs = Ktraits::kVecs, kStride = 5;
  const int off = static_cast<int>(row_off % kNElts);
  const int64_t f0 = (row_off - off) / kNElts + (v0 - lane);  // the tile's first flat vector
  vec_t fx[kVecs + 1], fg[kVecs + 1];
#pragma unroll
  for (int j = 0; j <= kVecs; ++j) {
    if (j < kVecs || lane == 0) {
      load_flat_vector<Ktraits>(fx[j], static_cast<const T*>(a.x), f0 + j * kWarpSize + lane, a.n_elts);
      load_flat_vector<Ktraits>(fg[j], static_cast<const T*>(a.dout), f0 + j * kWarpSize + lane, a.n_elts);
    }
  }
  warp_sync();  // the previous tile's reads of the stage are done
#pragma unroll
  for (int j = 0; j <= kVecs; ++j) {
    if (j < kVecs || lane == 0) {
      const int m = j * kWarpSize + lane;
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        stage[kStride * m + i] = fx[j].word(i);
        stage[Ktraits::kStageWords + kStride * m + i] = fg[j].word(i);
      }
    }
  }
  warp_sync();
  const int q = off / 2;
  const uint32_t sh = static_cast<uint32_t>(off & 1) * 16u;
#pragma unroll
  for (int k = 0; k < kVecs; ++k) {
    const int base = kStride * (k * kWarpSize + lane);
    uint32_t wx[5], wg[5];
#pragma unroll
    for (int c = 0; c < 5; ++c) {
      const int wi = q + c;
      const int idx = base + wi + (wi >= 4 ? 1 : 0);  // word wi of flat vectors j, j + 1 (a word of padding between)
      wx[c] = stage[idx];
      wg[c] = stage[Ktraits::kStageWords + idx];
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      xv[k].word(i) = __funnelshift_r(wx[i], wx[i + 1], sh);
      gv[k].word(i) = __funnelshift_r(wg[i], wg[i + 1], sh);
    }
    const int64_t e = static_cast<int64_t>(v0 + k * kWarpSize) * kNElts;
    if (e + kNElts > a.seqlen) {
#pragma unroll
      for (int i = 0; i < kNElts; ++i) {
        if (e + i >= a.seqlen) {
          xv[k].elt[i] = from_float<T>(0.f);
          gv[k].elt[i] = from_float<T>(0.f);
        }
      }
    }
  }
}

// 32-bit word wi of the row (aligned) or of the flat array (flat shifted); 0 where it is not wholly inside.
// Unaligned rows: the elements of the row's positions wi * kEltsPerWord + i, each 0 outside [0, L).
template <typename Ktraits>
__device__ __forceinline__ uint32_t load_word(const uint32_t* words, int64_t wi, const BwdRowsArgs& a) {
  if constexpr (Ktraits::kUnaligned) {
    using T = typename Ktraits::T;
    Vec<T, Ktraits::kEltsPerWord> pair;
    pair.set_zero();
    const T* elts = reinterpret_cast<const T*>(words);
#pragma unroll
    for (int i = 0; i < Ktraits::kEltsPerWord; ++i) {
      const int64_t t = wi * Ktraits::kEltsPerWord + i;
      if (t >= 0 && t < a.seqlen) pair.elt[i] = elts[t];
    }
    return pair.word(0);
  } else if constexpr (Ktraits::kFlat) {
    return wi >= 0 && (wi + 1) * Ktraits::kEltsPerWord <= a.n_elts ? words[wi] : 0u;
  } else {
    return wi >= 0 ? words[wi] : 0u;
  }
}

// Unaligned rows: the vector g (as T) at dst, a row position e with n = L - e positions left in the row (the
// last vector partial: only the first n). 16-bit: 32-bit stores where dst is 4-byte aligned, else the first
// and last elements alone and the 3 words between them.
template <typename Ktraits>
__device__ __forceinline__ void store_unaligned(typename Ktraits::T* dst, const float (&g)[Ktraits::kNElts],
                                                int64_t n) {
  using T = typename Ktraits::T;
  constexpr int kNElts = Ktraits::kNElts;
  if (n >= kNElts) {
    typename Ktraits::vec_t out;
#pragma unroll
    for (int i = 0; i < kNElts; ++i) out.elt[i] = from_float<T>(g[i]);
    if constexpr (sizeof(T) == 2) {
      if ((reinterpret_cast<uintptr_t>(dst) & 3u) == 0) {
#pragma unroll
        for (int i = 0; i < kNElts / 2; ++i) reinterpret_cast<uint32_t*>(dst)[i] = out.word(i);
      } else {
        dst[0] = out.elt[0];
#pragma unroll
        for (int i = 0; i + 1 < kNElts / 2; ++i)
          reinterpret_cast<uint32_t*>(dst + 1)[i] = __funnelshift_r(out.word(i), out.word(i + 1), 16);
        dst[kNElts - 1] = out.elt[kNElts - 1];
      }
    } else {
#pragma unroll
      for (int i = 0; i < kNElts; ++i) dst[i] = out.elt[i];
    }
  } else {
#pragma unroll
    for (int i = 0; i < kNElts; ++i)
      if (i < n) dst[i] = from_float<T>(g[i]);
  }
}

// Flat shifted rows: the window xs of the vector whose first element is at position e of row (b, d), with the
// positions outside the row replaced (before 0: initial states or zeros; past L: zeros, so that a
// neighbouring row's values never reach the sums, not even as inf * 0).
template <typename Ktraits>
__device__ __forceinline__ void mask_window(float (&xs)[Ktraits::kHalo + Ktraits::kNElts], int64_t e, int64_t b,
                                            int64_t d, const BwdRowsArgs& a) {
  using T = typename Ktraits::T;
  constexpr int kHalo = Ktraits::kHalo;
#pragma unroll
  for (int m = 0; m < kHalo + Ktraits::kNElts; ++m) {
    const int64_t t = e - kHalo + m;
    if (t < 0) {
      xs[m] = 0.f;
      if (t >= -kHalo && a.st.init != nullptr)
        xs[m] = load_state<T>(a.st.init, b, d, t + kHalo, a.st.init_batch_stride, a.st.init_dim_stride,
                              a.st.init_seq_stride);
    } else if (t >= a.seqlen) {
      xs[m] = 0.f;
    }
  }
}

// Shifted rows: dpre is zero at the positions outside [0, L).
template <typename Ktraits>
__device__ __forceinline__ void mask_dpre(float (&dp)[Ktraits::kNElts], int64_t e, int64_t L) {
#pragma unroll
  for (int i = 0; i < Ktraits::kNElts; ++i)
    if (e + i < 0 || e + i >= L) dp[i] = 0.f;
}

template <typename Ktraits>
__global__ void __launch_bounds__(Ktraits::kThreads, Ktraits::kMinBlocks)
    causal_conv1d_bwd_rows_kernel(const BwdRowsArgs a) {
  using T = typename Ktraits::T;
  using vec_t = typename Ktraits::vec_t;
  constexpr bool kFlat = Ktraits::kFlat;
  constexpr bool kUnaligned = Ktraits::kUnaligned;
  constexpr int kW = Ktraits::kWidth;
  constexpr int kHalo = Ktraits::kHalo;
  constexpr int kHaloAlloc = Ktraits::kHaloAlloc;
  constexpr int kNElts = Ktraits::kNElts;
  constexpr int kVecs = Ktraits::kVecs;
  constexpr int kHaloWords = Ktraits::kHaloWords;
  constexpr int kHaloWordsAlloc = Ktraits::kHaloWordsAlloc;

  constexpr bool kSeq = Ktraits::kSeq;

  const int lane = lane_id();
  const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
  const int64_t L = a.seqlen;
  __shared__ uint32_t stage_words[Ktraits::kStaged ? Ktraits::kWarps * 2 * Ktraits::kStageWords : 1];
  [[maybe_unused]] uint32_t* stage = stage_words + (Ktraits::kStaged ? warp * 2 * Ktraits::kStageWords : 0);

  // A warp walks a chunk of consecutive tiles of one row from its last tile down (the file comment says why).
  for (uint32_t chunk = blockIdx.x * Ktraits::kWarps + warp; chunk < a.n_chunks;
       chunk += gridDim.x * Ktraits::kWarps) {
    uint32_t c;
    const uint32_t row = a.div_chunks_per_row.divmod(c, chunk);
    uint32_t d;
    const uint32_t b = a.div_dim.divmod(d, row);
    const uint32_t seg_lo = c * a.tiles_per_chunk;
    const uint32_t seg_hi = min(seg_lo + a.tiles_per_chunk, a.tiles_per_row);
    const int64_t row_off = static_cast<int64_t>(row) * L;
    // Vector v of this lane starts at base + v * kNElts, which is position v * kNElts - shift of the row
    // (64-bit vector indices only for the flat array of shifted rows).
    using vidx_t = std::conditional_t<kFlat, int64_t, int>;
    vidx_t row_v0;  // this lane's vector in the row's first tile
    int64_t shift;
    if constexpr (kFlat) {
      const int64_t lo = row_off - a.lead;  // flat index of the row's first covered position
      row_v0 = (lo >= 0 ? lo / kNElts : -((-lo + kNElts - 1) / kNElts)) + lane;
      shift = row_off;
    } else {
      row_v0 = lane;
      shift = 0;
    }
    const int64_t base_off = kFlat ? 0 : row_off;
    const T* __restrict__ xr = static_cast<const T*>(a.x) + base_off;
    const T* __restrict__ gr = static_cast<const T*>(a.dout) + base_off;
    const uint32_t* __restrict__ xr_words = reinterpret_cast<const uint32_t*>(xr);
    const int32_t* __restrict__ row_ids = kSeq ? a.seq_idx + static_cast<int64_t>(b) * a.seq_batch_stride : nullptr;
    const uint2* __restrict__ row_marks = kSeq ? seq_marks_row(a.seq_marks, b, a.seq_words) : nullptr;
    // The channel's weights, loaded once the first data loads are issued: converting them waits for them (H200,
    // session 25: loaded first, bf16 8 x 4096 x 4093 W = 3 took 334.7 us against 325.2).
    float w2[1][kW];
    float bias2[1];
    const float(&w)[kW] = w2[0];
    const float& bias = bias2[0];
    float acc[kW + 1];
#pragma unroll
    for (int j = 0; j <= kW; ++j) acc[j] = 0.f;
    // prev_ahead[m]: dpre at kNElts + m after the start of the lane's last vector in the tile, where lane + q >= 32
    // (q = 1 + m / kNElts): in the first vectors of lane + q - 32 in the tile after. The tiles of the chunk but its
    // last take it from the tile after (step 3); the last computes it here, before the loop (in the tile, as with one
    // tile a warp, it spilled 84-136 bytes more in the 16-bit kernels at 64 registers, ptxas 13.0), from the vector
    // after it (lanes < kAheadLanes; zeros past the row's vectors, masked past the row's end on flat rows), its halo
    // words and, with seq_idx, its window's marks. Only its first kHalo elements are ever read. The last tile's
    // vectors are fetched into L2 meanwhile.
    float prev_ahead[kHaloAlloc];
    {
      const vidx_t v_last = row_v0 + static_cast<vidx_t>(seg_hi - 1) * Ktraits::kTileVecs;
#pragma unroll
      for (int k = 0; k < kVecs; ++k) {
        const vidx_t v = v_last + k * kWarpSize;
        if (kFlat ? v >= 0 && v * kNElts < a.n_elts : v < a.row_vecs) {
          prefetch_l2(xr + v * kNElts);
          prefetch_l2(gr + v * kNElts);
        }
      }
      const vidx_t v_next = v_last + kVecs * kWarpSize;
      const bool has = lane < Ktraits::kAheadLanes && (kFlat || v_next < a.row_vecs);
      vec_t nx, ng;
      uint32_t halo[kHaloWordsAlloc];
      WindowMarks marks{0u, 0u, 0u};
      if (has) {
        load_vector<Ktraits>(nx, xr, v_next, a);
        load_vector<Ktraits>(ng, gr, v_next, a);
#pragma unroll
        for (int h = 1; h <= kHaloWords; ++h) halo[kHaloWords - h] = load_word<Ktraits>(xr_words, v_next * 4 - h, a);
        if constexpr (kSeq)
          marks = window_marks<Ktraits::kSeqPad, Ktraits::kSeqLen>(row_marks, a.seq_words, int64_t{v_next} * kNElts);
      } else {
        nx.set_zero();
        ng.set_zero();
#pragma unroll
        for (int h = 0; h < kHaloWordsAlloc; ++h) halo[h] = 0u;
      }
      load_weight_block<1, kW>(w2, bias2, a.w, d);
      constexpr int kNextElts = kHalo < kNElts ? kHalo : kNElts;
      float dp_next[kNElts] = {};
      if (kNextElts > 0) {
        float xs[kHalo + kNElts];
        window_from_words<Ktraits>(xs, halo, nx);
        const int64_t e = static_cast<int64_t>(v_next) * kNElts - shift;
        // Flat rows: only the lanes < kAheadLanes use it, so the warp masks (one branch for all) only where their
        // vectors cross the row's ends.
        [[maybe_unused]] bool ahead_cross = false;
        if constexpr (kFlat) {
          const int64_t e_ahead = e - static_cast<int64_t>(lane) * kNElts;  // lane 0's next vector
          ahead_cross = e_ahead - kHalo < 0 || e_ahead + Ktraits::kAheadLanes * kNElts > L;
          if (ahead_cross) mask_window<Ktraits>(xs, e, b, d, a);
        }
        if constexpr (kSeq) {
          zero_padding<Ktraits>(ng, marks.pads);
          float unused[kW + 1];
          dpre_cut<Ktraits, kNextElts, false>(dp_next, unused, xs, ng, w, bias, a.silu, marks.starts, marks.pads);
        } else {
          dpre_of_vector<Ktraits, kNextElts>(dp_next, xs, ng, w, bias, a.silu);
        }
        if constexpr (kFlat)
          if (ahead_cross) mask_dpre<Ktraits>(dp_next, e, L);
        if (!has) {
#pragma unroll
          for (int i = 0; i < kNElts; ++i) dp_next[i] = 0.f;
        }
      }
#pragma unroll
      for (int m = 0; m < kHalo; ++m) {
        const int q = 1 + m / kNElts;
        prev_ahead[m] =
            __uint_as_float(warp_shfl(__float_as_uint(dp_next[m % kNElts]), (lane + q) & (kWarpSize - 1)));
      }
    }

    // Tiles that hold the row's first kHalo positions or its last kHalo (an aligned row's last tile may hold a single
    // vector, fewer elements than the halo: fp32 W = 8) or positions past the row.
    const uint32_t tile_elts = Ktraits::kTileVecs * kNElts;
    auto edge_tile = [&](uint32_t seg) { return seg == 0 || int64_t{seg + 1} * tile_elts + kHalo > L; };
    // kEdge: the tile may hold the row's first positions (initial states, dinit) or its last (vectors past the row,
    // dfinal); the other tiles of aligned rows (most of a long row) take a copy of the body without those checks
    // (edge_tile; BwdRowsTraits::kInnerTiles says which kernels have the copy).
    auto tile = [&](uint32_t seg, auto edge) {
      constexpr bool kEdge = decltype(edge)::value;
      const vidx_t v0 = row_v0 + static_cast<vidx_t>(seg) * Ktraits::kTileVecs;

      // 1. loads
      vec_t xv[kVecs], gv[kVecs];
      if constexpr (Ktraits::kStaged) {
        load_staged<Ktraits>(xv, gv, a, row_off, static_cast<int>(v0), lane, stage);
      } else {
#pragma unroll
        for (int k = 0; k < kVecs; ++k) {
          if constexpr (kEdge) {
            load_vector<Ktraits>(xv[k], xr, v0 + k * kWarpSize, a);
            load_vector<Ktraits>(gv[k], gr, v0 + k * kWarpSize, a);
          } else {  // inside the row
            xv[k].load(xr + (v0 + k * kWarpSize) * kNElts);
            gv[k].load(gr + (v0 + k * kWarpSize) * kNElts);
          }
        }
      }
      uint32_t first_halo[kHaloWordsAlloc];
#pragma unroll
      for (int h = 1; h <= kHaloWords; ++h)
        first_halo[h - 1] = lane < (h + 3) / 4 ? load_word<Ktraits>(xr_words, v0 * 4 - h, a) : 0u;
      // seq_idx: the marks of each vector's window (kSeq), loaded with the data.
      uint32_t starts[kSeq ? kVecs : 1], pads[kSeq ? kVecs : 1];
      if constexpr (kSeq) {
#pragma unroll
        for (int k = 0; k < kVecs; ++k) {
          const WindowMarks m = window_marks<Ktraits::kSeqPad, Ktraits::kSeqLen>(
              row_marks, a.seq_words, (static_cast<int64_t>(v0) + k * kWarpSize) * kNElts);
          starts[k] = m.starts;
          pads[k] = m.pads;
          zero_padding<Ktraits>(gv[k], m.pads);
        }
      }
      // Aligned rows, initial states: x at the negative positions of the halo of the row's first vectors
      // (lane 0, and the next lanes too when the halo is longer than a vector: fp32 with W >= 6).
      const int64_t e0 = static_cast<int64_t>(v0) * kNElts - shift;
      const bool near_start = kEdge && !kFlat && e0 < kHalo;
      float init_x[kHaloAlloc];
#pragma unroll
      for (int i = 0; i < kHaloAlloc; ++i) init_x[i] = 0.f;
      if (near_start && a.st.init != nullptr) {
#pragma unroll
        for (int i = 0; i < kHalo; ++i)
          if (e0 + i < kHalo)
            init_x[i] = load_state<T>(a.st.init, b, d, e0 + i, a.st.init_batch_stride, a.st.init_dim_stride,
                                      a.st.init_seq_stride);
      }

      // Steps 2 and 3; kCut: the windows cut at the sequence starts (seq_idx), else the plain taps.
      auto compute = [&](auto cut) {
        constexpr bool kCut = kSeq && decltype(cut)::value;
        // 2. ascending: dpre of every vector, dweight/dbias sums
        float dp[kVecs][kNElts];
        uint32_t prev_shfl[kHaloWordsAlloc] = {};
#pragma unroll
        for (int k = 0; k < kVecs; ++k) {
          uint32_t halo_words[kHaloWordsAlloc];
          halo_words_from_lanes<kHaloWords>(halo_words, xv[k], k == 0 ? first_halo : prev_shfl, prev_shfl, lane);
          float xs[kHalo + kNElts];
          window_from_words<Ktraits>(xs, halo_words, xv[k]);
          const int64_t e = e0 + int64_t{k} * kWarpSize * kNElts;
          // Shifted rows: only a vector whose window crosses the row's ends is masked (most are inside).
          [[maybe_unused]] const bool inside = e - kHalo >= 0 && e + kNElts <= L;
          if constexpr (kFlat)
            if (!inside) mask_window<Ktraits>(xs, e, b, d, a);
          if (k == 0 && near_start) {
#pragma unroll
            for (int i = 0; i < kHalo; ++i)
              if (e0 + i < kHalo) xs[i] = init_x[i];
          }
          if constexpr (kCut) {  // every vector cut at its starts (the file comment says why)
            dpre_cut<Ktraits>(dp[k], acc, xs, gv[k], w, bias, a.silu, starts[k], pads[k]);
          } else {
            dpre_of_vector<Ktraits>(dp[k], xs, gv[k], w, bias, a.silu);
            if constexpr (kFlat)
              if (!inside) mask_dpre<Ktraits>(dp[k], e, L);
            sums_of_vector<Ktraits>(acc, dp[k], xs);
          }
        }

        // 3. descending: dx. Each step shuffles the dpre after its vectors from lane + q; lanes with lane + q >= 32
        // take prev_ahead, and the step leaves the shuffled values there for the step before (after the first
        // vectors: the tile before's prev_ahead).
        T* __restrict__ dxr = a.dx != nullptr ? static_cast<T*>(a.dx) + base_off : nullptr;
#pragma unroll
        for (int k = kVecs - 1; k >= 0; --k) {
          float dpw[kNElts + kHalo];  // dpre at this vector's positions and the kHalo after
#pragma unroll
          for (int i = 0; i < kNElts; ++i) dpw[i] = dp[k][i];
#pragma unroll
          for (int m = 0; m < kHalo; ++m) {
            const int q = 1 + m / kNElts;
            const float s =
                __uint_as_float(warp_shfl(__float_as_uint(dp[k][m % kNElts]), (lane + q) & (kWarpSize - 1)));
            dpw[kNElts + m] = lane + q < kWarpSize ? s : prev_ahead[m];
            prev_ahead[m] = s;
          }
          const vidx_t v = v0 + k * kWarpSize;
          const int64_t e = static_cast<int64_t>(v) * kNElts - shift;  // position of the vector's first element
          float g[kNElts];
          const bool at_final = kEdge && a.st.dfinal != nullptr && e + kNElts > L - kHalo && e < L;
          const bool at_dinit = kEdge && !kFlat && k == 0 && v0 == 0 && a.st.dinit != nullptr;
          if constexpr (kCut) dx_cut<Ktraits>(g, dpw, w, starts[k], pads[k]);
          else dx_of_vector<Ktraits>(g, dpw, w);
          if (at_final) {
            // The row's last sequence takes dfinal (the states at the row's two ends: a few lanes, ids read).
            const int32_t last_id = kSeq ? row_ids[(L - 1) * a.seq_seq_stride] : 0;
#pragma unroll
            for (int i = 0; i < kNElts; ++i)
              if (e + i >= L - kHalo && e + i < L && (!kSeq || row_ids[(e + i) * a.seq_seq_stride] == last_id))
                g[i] += load_state<T>(a.st.dfinal, b, d, e + i - (L - kHalo), a.st.dfinal_batch_stride,
                                      a.st.dfinal_dim_stride, a.st.dfinal_seq_stride);
          }
          if constexpr (kFlat) {
            if (e >= 0 && e + kNElts <= L) {
              if (dxr != nullptr) {
                vec_t out;
#pragma unroll
                for (int i = 0; i < kNElts; ++i) out.elt[i] = from_float<T>(g[i]);
                out.store(dxr + v * kNElts);
              }
            } else {
              // A vector across a row boundary: only this row's positions, dinit before 0.
#pragma unroll
              for (int i = 0; i < kNElts; ++i) {
                const int64_t t = e + i;
                if (t >= 0 && t < L) {
                  if (dxr != nullptr) dxr[v * kNElts + i] = from_float<T>(g[i]);
                } else if (t < 0 && t >= -kHalo && a.st.dinit != nullptr) {
                  static_cast<T*>(a.st.dinit)[b * a.st.dinit_batch_stride + d * a.st.dinit_dim_stride +
                                              (t + kHalo) * a.st.dinit_seq_stride] = from_float<T>(g[i]);
                }
              }
            }
          } else {
            if (a.dx != nullptr && (!kEdge || v < a.row_vecs)) {
              if constexpr (kUnaligned) {
                store_unaligned<Ktraits>(dxr + e, g, L - e);
              } else {
                vec_t out;
#pragma unroll
                for (int i = 0; i < kNElts; ++i) out.elt[i] = from_float<T>(g[i]);
                out.store(dxr + e);
              }
            }
            if (at_dinit) {
              // dinit[kk] = dx at position kk - kHalo: taps j <= kk reach dpre[kk - j] >= 0 (L >= kW here), in
              // the row's first sequence (the initial states continue it).
#pragma unroll
              for (int kk = 0; kk < kHalo; ++kk) {
                float acc_i = 0.f;
#pragma unroll
                for (int j = 0; j <= kk; ++j)
                  acc_i = fmaf(w[j], !kSeq || row_ids[(kk - j) * a.seq_seq_stride] == row_ids[0] ? dpw[kk - j] : 0.f,
                               acc_i);
                static_cast<T*>(a.st.dinit)[b * a.st.dinit_batch_stride + d * a.st.dinit_dim_stride +
                                            kk * a.st.dinit_seq_stride] = from_float<T>(acc_i);
              }
            }
          }
        }
      };
      // seq_idx, inner tiles: a tile whose windows hold no sequence start and no padding token on any lane (most tiles
      // of a row of a few long sequences) takes the plain taps.
      if constexpr (kSeq && !kEdge) {
        bool marked = false;
#pragma unroll
        for (int k = 0; k < kVecs; ++k) marked |= (starts[k] | pads[k]) != 0u;
        if (warp_all(!marked)) compute(std::false_type{});
        else compute(std::true_type{});
      } else {
        compute(std::true_type{});
      }
    };
#pragma unroll 1
    for (uint32_t seg = seg_hi; seg-- > seg_lo;) {
      if (!Ktraits::kInnerTiles || edge_tile(seg)) tile(seg, std::true_type{});
      else if constexpr (Ktraits::kInnerTiles) tile(seg, std::false_type{});
    }

    if (a.partials.rows != nullptr) {
      const int64_t chunks_per_row = a.div_chunks_per_row.divisor;
      float* prow = a.partials.rows + (static_cast<int64_t>(b) * chunks_per_row + c) * a.partials.cols +
                    static_cast<int64_t>(d) * (kW + 1);
#pragma unroll
      for (int j = 0; j <= kW; ++j) {
        const float s = warp_sum(acc[j]);
        if (lane == j % kWarpSize) prow[j] = s;
      }
    }
  }
}

// Row vectors of row-relative rows: aligned L / kNElts; unaligned ceil(L / kNElts), the last one partial.
int64_t row_vecs_of(int64_t L, int64_t n_elts, bool unaligned) {
  return unaligned ? (L + n_elts - 1) / n_elts : L / n_elts;
}

// Tiles per row: row_vecs_of's vectors; flat shifted rows at most (lead + L + 2 kNElts - 2) / kNElts,
// whatever the row's offset in the vector grid (every row gets the same count, so the same chunks, each writing
// exactly one partial row, all-zero tiles included).
int64_t tiles_per_row_of(int64_t L, int64_t lead, int64_t n_elts, int64_t width, bool shifted, bool seq,
                         int64_t tile_vecs) {
  const bool flat = shifted && flat_shifted_rows(static_cast<int>(kVecBytes / n_elts), static_cast<int>(width), seq);
  const int64_t row_vecs = flat ? (lead + L + 2 * n_elts - 2) / n_elts : row_vecs_of(L, n_elts, shifted);
  return (row_vecs + tile_vecs - 1) / tile_vecs;
}

int64_t lead_of(const CausalConv1dBwdParams& p) { return p.dinitial_states != nullptr ? p.width - 1 : 0; }

// How the kernel's warps share a row's tiles: each walks a chunk of consecutive tiles, about kRowsChunks chunks in
// all (a few waves of warps on a large GPU: 132 SMs x 32 warps), the tiles spread evenly over a row's chunks. One
// partial row of dweight/dbias sums per chunk. AITER_LITE_BWD_ROWS_CHUNKS=n sets the count instead (experiments and
// the tests of long chunks; read once per process).
constexpr int64_t kRowsChunks = 16384;
int64_t rows_chunks_target() {
  static const int64_t target =
      env_int("AITER_LITE_BWD_ROWS_CHUNKS", 1, int64_t{1} << 30, kRowsChunks, [](const char* v) {
        throw std::invalid_argument(std::string("AITER_LITE_BWD_ROWS_CHUNKS must be an integer 1..2^30, got '") + v +
                                    "'");
      });
  return target;
}
struct RowsChunking {
  int64_t tiles_per_chunk, chunks_per_row;
};
RowsChunking rows_chunking(int64_t rows, int64_t tiles_per_row) {  // rows, tiles_per_row >= 1
  // At least kMinChunkTiles tiles a chunk where the row has them: a chunk's first tile waits for the lookahead's
  // loads first (H200, session 25, bf16 4 x 512 x 2048: 17.5 us with one tile a chunk, 15.9 with 2, 18.1 with 4
  // (fewer warps); 16.3 without the loop).
  constexpr int64_t kMinChunkTiles = 2;
  const int64_t chunks = std::clamp<int64_t>((rows_chunks_target() + rows - 1) / rows, 1,
                                             std::max<int64_t>(tiles_per_row / kMinChunkTiles, 1));
  const int64_t per_chunk = (tiles_per_row + chunks - 1) / chunks;
  return RowsChunking{per_chunk, (tiles_per_row + per_chunk - 1) / per_chunk};
}

// The rows path's seq_idx workspace: [B, seq_marks_stride(L)] uint2 marks (causal_conv1d_seq_marks.cuh; 16-byte
// aligned: it follows the partials, rounded up to 16 bytes), then the marks kernel's kSeqMarksBlocks recur flags.
int64_t seq_workspace_words(int64_t B, int64_t L) { return 2 * B * seq_marks_stride(L) + kSeqMarksBlocks; }
uint32_t* recur_flags_of(uint32_t* seq_starts, int64_t B, int64_t L) { return seq_starts + 2 * B * seq_marks_stride(L); }

template <typename T, int kW, int kVecs, bool kShifted, bool kSeq>
void bwd_rows_launch(const CausalConv1dBwdParams& p, const WeightArgs& w, const BwdPartials& partials,
                     uint32_t* seq_starts, gpuStream_t stream) {
  using Ktraits = BwdRowsTraits<T, kW, kVecs, kShifted, kSeq>;
  BwdRowsArgs a{};
  a.x = p.x;
  a.dout = p.dout;
  a.dx = p.dx;
  a.w = w;
  a.st = make_state_args(p);
  a.partials = partials;
  a.seq_idx = p.seq_idx;
  a.seq_batch_stride = p.seq_idx_batch_stride;
  a.seq_seq_stride = p.seq_idx_seq_stride;
  a.seq_marks = reinterpret_cast<const uint2*>(seq_starts);
  a.seq_words = seq_marks_words(p.seqlen);
  a.seqlen = p.seqlen;
  a.row_vecs = static_cast<int32_t>(row_vecs_of(p.seqlen, Ktraits::kNElts, Ktraits::kUnaligned));
  a.lead = static_cast<int32_t>(lead_of(p));
  a.n_elts = p.batch * p.dim * p.seqlen;
  const int64_t tiles_per_row =
      tiles_per_row_of(p.seqlen, a.lead, Ktraits::kNElts, kW, kShifted, kSeq, Ktraits::kTileVecs);
  const RowsChunking chunking = rows_chunking(p.batch * p.dim, tiles_per_row);
  const int64_t n_chunks = p.batch * p.dim * chunking.chunks_per_row;  // < 2^31: bwd_rows_plan checked the tiles
  a.n_chunks = static_cast<uint32_t>(n_chunks);
  a.tiles_per_row = static_cast<uint32_t>(tiles_per_row);
  a.tiles_per_chunk = static_cast<uint32_t>(chunking.tiles_per_chunk);
  a.div_chunks_per_row = FastDivmod32(chunking.chunks_per_row);
  a.div_dim = FastDivmod32(p.dim);
  a.silu = p.silu;
  const int64_t blocks = (n_chunks + Ktraits::kWarps - 1) / Ktraits::kWarps;
  causal_conv1d_bwd_rows_kernel<Ktraits><<<static_cast<unsigned>(blocks), Ktraits::kThreads, 0, stream>>>(a);
  AITER_LITE_LAUNCH_CHECK();
}

}  // namespace

// Build-time shards (shard.h, docs/jit.md "Shards"): the registry may compile this file in N shards;
// shard s holds the kernels of the widths w with (w - 1) % N == s (AITER_LITE_CONV_WIDTH_SWITCH skips
// the others). The plan and bwd_rows_run, the entry the backward dispatch calls, are compiled in shard 0.
template <int kShard, int kShards>
void bwd_rows_shard(const CausalConv1dBwdParams& p, const BwdRowsPlan& plan, const WeightArgs& w,
                    const BwdPartials& partials, uint32_t* seq_starts, gpuStream_t stream);

#define AITER_LITE_BWD_ROWS_SHARD_EXTERN(s) \
  extern template void bwd_rows_shard<s, AITER_LITE_SHARDS>( \
      const CausalConv1dBwdParams&, const BwdRowsPlan&, const WeightArgs&, const BwdPartials&, uint32_t*, gpuStream_t);
AITER_LITE_FOR_EACH_SHARD(AITER_LITE_BWD_ROWS_SHARD_EXTERN)
#undef AITER_LITE_BWD_ROWS_SHARD_EXTERN
static_assert(AITER_LITE_SHARDS <= kMaxFileShards, "see AITER_LITE_FOR_EACH_SHARD");

// The kernels of this shard's widths (width_shard).
template <int kShard, int kShards>
void bwd_rows_shard(const CausalConv1dBwdParams& p, const BwdRowsPlan& plan, const WeightArgs& w,
                    const BwdPartials& partials, uint32_t* seq_starts, gpuStream_t stream) {
  AITER_LITE_DISPATCH_DTYPE(p.x_dtype, [&] {
    AITER_LITE_CONV_WIDTH_SWITCH(p.width, kW, [&] {
      const bool large = plan.vecs_per_lane == kRowsLargeVecs;
      if (plan.shifted && plan.seq) {
        bwd_rows_launch<scalar_t, kW, 1, true, true>(p, w, partials, seq_starts, stream);
      } else if (plan.shifted) {
        bwd_rows_launch<scalar_t, kW, 1, true, false>(p, w, partials, nullptr, stream);
      } else if (plan.seq) {
        if (large) bwd_rows_launch<scalar_t, kW, kRowsLargeVecs, false, true>(p, w, partials, seq_starts, stream);
        else bwd_rows_launch<scalar_t, kW, 1, false, true>(p, w, partials, seq_starts, stream);
      } else {
        if (large) bwd_rows_launch<scalar_t, kW, kRowsLargeVecs, false, false>(p, w, partials, nullptr, stream);
        else bwd_rows_launch<scalar_t, kW, 1, false, false>(p, w, partials, nullptr, stream);
      }
    });
  });
}

template void bwd_rows_shard<AITER_LITE_SHARD, AITER_LITE_SHARDS>(
    const CausalConv1dBwdParams&, const BwdRowsPlan&, const WeightArgs&, const BwdPartials&, uint32_t*, gpuStream_t);

#if AITER_LITE_SHARD == 0
BwdRowsPlan bwd_rows_plan(const CausalConv1dBwdParams& p) {
  BwdRowsPlan plan{};
  const int64_t B = p.batch, D = p.dim, L = p.seqlen;
  const int64_t n_elts = kVecBytes / dtype_size(p.x_dtype);
  if (p.width > kMaxTemplateWidth || L < 2 * p.width || L / n_elts > INT32_MAX / 4) return plan;
  const bool seq = p.seq_idx != nullptr;
  const bool dense = dense_rows(p.x_batch_stride, p.x_dim_stride, p.x_seq_stride, B, D, L) &&
                     dense_rows(p.dout_batch_stride, p.dout_dim_stride, p.dout_seq_stride, B, D, L) &&
                     (p.dx == nullptr || dense_rows(p.dx_batch_stride, p.dx_dim_stride, p.dx_seq_stride, B, D, L)) &&
                     is_aligned(p.x, 16) && is_aligned(p.dout, 16) && is_aligned(p.dx, 16);
  if (!dense) return plan;
  const int64_t lead = lead_of(p);
  // Share of a warp's lanes that hold positions of the row.
  auto tiles_per_row = [&](bool shifted, int64_t tile_vecs) {
    return tiles_per_row_of(L, lead, n_elts, p.width, shifted, seq, tile_vecs);
  };
  auto efficiency = [&](bool shifted, int64_t tile_vecs) {
    return static_cast<double>(L) / static_cast<double>(tiles_per_row(shifted, tile_vecs) * tile_vecs * n_elts);
  };
  auto fits = [&](bool shifted) { return B * D * tiles_per_row(shifted, kWarpSize) <= INT32_MAX; };  // 32-bit tiles
  // Two vectors per lane once one-vector warps would not all fit on a large GPU at once (132 SMs x
  // 32 warps), as in the forward's rows plan.
  constexpr int64_t kLargeVecs = int64_t{132} * 32 * kWarpSize;
  const bool large = B * D * L / n_elts >= kLargeVecs;
  if (L % n_elts == 0 && fits(false)) {
    if (large && efficiency(false, kRowsLargeVecs * kWarpSize) >= 0.75) plan.vecs_per_lane = kRowsLargeVecs;
    else if (efficiency(false, kWarpSize) >= 0.75) plan.vecs_per_lane = 1;
  }
  // Shifted rows (odd L, or rows that tile badly), one vector a lane (BwdRowsTraits), while at least 40% of the
  // lanes work: L = 129 bf16 is about 50%; shorter rows go to the tile kernel, which packs several rows into a block.
  if (plan.vecs_per_lane == 0 && fits(true) && efficiency(true, kWarpSize) >= 0.4) {
    plan.shifted = true;
    plan.vecs_per_lane = 1;
  }
  plan.seq = seq && plan.vecs_per_lane > 0;
  if (plan.seq) plan.seq_start_words = seq_workspace_words(B, L);
  if (plan.vecs_per_lane > 0)
    plan.partial_rows =
        B * rows_chunking(B * D, tiles_per_row(plan.shifted, int64_t{plan.vecs_per_lane} * kWarpSize)).chunks_per_row;
  return plan;
}

void bwd_rows_run(const CausalConv1dBwdParams& p, const BwdRowsPlan& plan, const WeightArgs& w,
                  const BwdPartials& partials, uint32_t* seq_starts, gpuStream_t stream) {
  if (plan.seq)
    seq_marks_run(p.seq_idx, p.seq_idx_batch_stride, p.seq_idx_seq_stride, p.batch, p.seqlen,
                  static_cast<int>(p.width - 1), reinterpret_cast<uint2*>(seq_starts),
                  recur_flags_of(seq_starts, p.batch, p.seqlen), stream);
  with_shard<AITER_LITE_SHARDS>(width_shard(p.width, AITER_LITE_SHARDS), [&](auto shard) {
    bwd_rows_shard<decltype(shard)::value, AITER_LITE_SHARDS>(p, plan, w, partials, seq_starts, stream);
  });
}

BwdRecurFlags bwd_rows_recur_flags(const CausalConv1dBwdParams& p, const BwdRowsPlan& plan, uint32_t* seq_starts) {
  if (!plan.seq) return BwdRecurFlags{};
  return BwdRecurFlags{recur_flags_of(seq_starts, p.batch, p.seqlen), seq_marks_blocks(p.batch, p.seqlen)};
}
#endif

}  // namespace conv1d
}  // namespace aiter_lite
