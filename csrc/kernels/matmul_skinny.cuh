// Skinny matmul (M <= kSkinnyMaxM): out[z] = epilogue(a[z] @ b[z]) when a has few rows, so the
// product is bound by reading b (B streams from memory once; A and out are small). fp32 FFMA on
// every dtype (fp16/bf16 converted on load; fp32 with or without allow_tf32 alike: a memory-bound
// product gains nothing from TF32, and fp32 is at least as accurate), then the epilogue in fp32 and
// one rounding to out's dtype. CUDA and HIP.
//
// Work: B is read as W = b^T, [N, K] with strides (w_n, w_k). A block (kSkinnyThreads threads) owns
// kBN output columns and one K range; it stages its rows of A, converted to fp32, in shared memory
// (xs[m][k], zero past M and past its K range), streams its [kBN, K range] piece of W once, and sums
// its threads' partials in shared memory (ps[m][n]) in a fixed order. Two ways to stream W:
//   N-contiguous W (b row-major, w_n == 1): a thread reads kNL consecutive columns of one k row (one
//     8- or 16-byte load where aligned), kLC threads cover a row piece (128 to 512 bytes), the
//     others take other rows: each row's kNL x kMaxM products use one broadcast float4 of xs per m
//     and 4 rows.
//   K-contiguous W (b = w.t(), w_k == 1): a lane owns kRows rows of W and reads 64 bytes of each per
//     step (all lanes of a warp at the same k, so xs reads are broadcasts); warps take interleaved
//     steps, so a block reads 512 contiguous bytes of each of its rows at a time.
//   kVec: the 16-byte (8-byte) vector loads; without it (rows not aligned, other strides) the same
//   pattern with element loads (N-contiguous: lanes on consecutive columns, so they coalesce).
// Split-K across blocks without a workspace: on sm_90 `splits` blocks of a thread block cluster share
// the columns and split K; after their own sums each block adds a slice of the tile over the
// cluster's blocks in rank order through distributed shared memory, applies the epilogue and stores.
// Every sum has a fixed order (deterministic; no atomics). Elsewhere splits == 1.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <string>
#include <type_traits>

#include "dtype_traits.cuh"
#include "env_int.h"
#include "matmul_common.cuh"
#include "matmul_launch.h"
#include "matmul_params.h"
#include "per_device.h"
#include "port.h"

#if defined(AITER_LITE_CUDA)
#include <cooperative_groups.h>
#endif

namespace aiter_lite {
namespace matmul_detail {

inline constexpr int kSkinnyThreads = 256;
inline constexpr int kSkinnyGroups = kSkinnyThreads / 32;  // 32-thread groups (warps on CUDA)
inline constexpr int kSkinnyKAlign = 32;                     // K ranges start at multiples of this
inline constexpr int kSkinnyMaxSplits = 8;                   // portable cluster size
inline constexpr int kSkinnyXBytes = 40 * 1024;              // xs; ps is at most 8 KB more

template <typename T>
struct SkinnyArgs {
  const T* x;  // A: [batch, m, k]
  const T* w;  // B as [batch, n, k]
  T* out;      // [batch, m, n]
  int64_t x_batch, x_m, x_k;
  int64_t w_batch, w_n, w_k;
  int64_t o_batch, o_m, o_n;
  int32_t m, n, k;
  int32_t splits;       // blocks per cluster along K (1: no cluster)
  int32_t k_per_split;  // K rows per block, a multiple of kSkinnyKAlign
  bool x_vec;           // A rows K-contiguous and 16-byte aligned: vector loads when staging xs
  bool epi_active;
  MatmulEpilogue epi;
};

// AITER_LITE_SKINNY_SPLITS=s: s blocks per cluster along K instead of skinny_splits' choice, where the
// kernel can run them (fewer where a block would get under 2 * kSkinnyKAlign rows or the size cannot be
// scheduled). For experiments (bench/lab/skinny_splits.py); read once per process.
inline int skinny_forced_splits() {
  static const int forced =
      static_cast<int>(env_int("AITER_LITE_SKINNY_SPLITS", 0, kSkinnyMaxSplits, 0, [](const char* v) {
        invalid(std::string("AITER_LITE_SKINNY_SPLITS must be an integer 0..") + std::to_string(kSkinnyMaxSplits) +
                " (0: the cost model's choice), got '" + v + "'");
      }));
  return forced;
}

// Blocks per cluster along K: the count whose waves of blocks are predicted to finish first, a block
// costing its K rows plus a fixed kOverheadRows (staging A, the reductions); at most kSkinnyMaxSplits,
// every block at least 2 * kSkinnyKAlign rows. slots_of(s): the blocks resident at once in clusters
// of s (<= 0: that size cannot run).
template <typename SlotsOf>
int skinny_splits(int64_t blocks, int64_t k, bool clusters, SlotsOf slots_of) {
  if (!clusters) return 1;
  constexpr int64_t kOverheadRows = 96;
  int best = 1;
  double best_cost = 0.0;
  for (int s = 1; s <= kSkinnyMaxSplits; ++s) {
    const int64_t rows = (k + s - 1) / s;
    if (s > 1 && rows < 2 * kSkinnyKAlign) break;
    const int64_t slots = slots_of(s);
    if (slots <= 0) continue;
    const int64_t waves = (blocks * s + slots - 1) / slots;
    const double cost = static_cast<double>(waves) * static_cast<double>(rows + kOverheadRows);
    if (s == 1 || cost < best_cost * 0.97) {  // a split must pay for itself
      best = s;
      best_cost = cost;
    }
  }
  return best;
}

// The block's place in the grid (x = column block * splits + split, a cluster of `splits` blocks along
// x; y = batch entry): its K range and first output column, its batch entry's A and B.
template <typename T>
struct SkinnyBlock {
  int split, n0, k_begin, k_end;
  int64_t z;
  const T* x;
  const T* w;

  __device__ __forceinline__ SkinnyBlock(const SkinnyArgs<T>& g, int bn)
      : split(static_cast<int>(blockIdx.x % static_cast<unsigned>(g.splits))),
        n0(static_cast<int>(blockIdx.x / static_cast<unsigned>(g.splits)) * bn),
        k_begin(split * g.k_per_split),  // < 2^31: splits * k_per_split <= k + 8 * kSkinnyKAlign
        k_end(min(g.k, k_begin + g.k_per_split)),
        z(blockIdx.y),
        x(g.x + z * g.x_batch),
        w(g.w + z * g.w_batch) {}
};

template <typename T, int kMaxM_, bool kKContig_, bool kVec_>
struct SkinnyTraits {
  using elem_t = T;
  static constexpr int kMaxM = kMaxM_;
  static constexpr bool kKContig = kKContig_, kVec = kVec_;
  static constexpr int kV = 16 / static_cast<int>(sizeof(T));  // elements per 16 bytes
  // N-contiguous W: columns per thread (kMaxM x kNL accumulators) and threads along a row piece: a
  // warp (a 256- or 512-byte piece), or a 128-byte piece where that measured faster on the H100
  // (2026-11-24, bench_matmul.py --odd: M = 1, fp32 M = 16; docs/matmul.md).
  static constexpr int kNL = (sizeof(T) == 2 && kMaxM < 16) ? 8 : 4;
  static constexpr int kLC = (kMaxM == 1 || (sizeof(T) == 4 && kMaxM == 16)) ? 128 / (kNL * static_cast<int>(sizeof(T))) : 32;
  static constexpr int kKR = kSkinnyThreads / kLC;  // threads along K: rows 4 at a time
  static constexpr int kGroupsInFlight = 2;  // 4-row groups loaded before use
  // K-contiguous W: rows per lane, K per step (64 bytes of a row), steps loaded before use.
  static constexpr int kRows = 2;
  static constexpr int kKS = 4 * kV;
  static constexpr int kStepsInFlight = 1;  // 128 bytes of W per lane in flight
  static constexpr int kBN = kKContig ? 32 * kRows : kLC * kNL;
  static constexpr int kXRows = kSkinnyXBytes / (4 * kMaxM) / kSkinnyKAlign * kSkinnyKAlign;
  static constexpr int kSmemBytes = (kXRows * kMaxM + kMaxM * kBN) * 4;
  static_assert(kSmemBytes <= 48 * 1024, "skinny kernel: shared memory above the default limit");
  static constexpr bool kClusterSlots = false;  // split count from single-block slots (skinny_launch)
  static_assert(kSkinnyKAlign % kKS == 0 && kSkinnyKAlign % 8 == 0, "steps must tile a K range");
};

// ---- raw elements in 32-bit words ---------------------------------------------------------------

template <typename T, int kElems>
struct SkinnyVec {
  static constexpr int kWords = kElems * static_cast<int>(sizeof(T)) / 4;
  uint32_t w[kWords];

  __device__ __forceinline__ void zero() {
#pragma unroll
    for (int i = 0; i < kWords; ++i) w[i] = 0u;
  }
  // kElems consecutive elements from p, aligned to the vector's size.
  __device__ __forceinline__ void load_vec(const T* p) {
    if constexpr (kWords == 4) {
      const uint4 v = *reinterpret_cast<const uint4*>(p);
      w[0] = v.x; w[1] = v.y; w[2] = v.z; w[3] = v.w;
    } else if constexpr (kWords == 2) {
      const uint2 v = *reinterpret_cast<const uint2*>(p);
      w[0] = v.x; w[1] = v.y;
    } else {
#pragma unroll
      for (int i = 0; i < kWords; ++i) w[i] = reinterpret_cast<const uint32_t*>(p)[i];
    }
  }
  // Element j (the words start zeroed).
  __device__ __forceinline__ void set(int j, T v) {
    if constexpr (sizeof(T) == 4) {
      w[j] = __float_as_uint(to_float(v));
    } else {
      w[j / 2] |= static_cast<uint32_t>(bits16(v)) << (16 * (j & 1));
    }
  }
  __device__ __forceinline__ float get(int j) const {
    if constexpr (sizeof(T) == 4) {
      return __uint_as_float(w[j]);
    } else if constexpr (std::is_same<T, bfloat16_t>::value) {
      return __uint_as_float((j & 1) ? (w[j / 2] & 0xffff0000u) : (w[j / 2] << 16));
    } else {
      return bits16_to_float<T>((j & 1) ? (w[j / 2] >> 16) : (w[j / 2] & 0xffffu));
    }
  }
};

// ---- staging A ----------------------------------------------------------------------------------

// xs[m * kXRows + r] = A[z][m][k0 + r] in fp32 for r < rows (a multiple of 8), 0 for m >= M or
// k0 + r >= k_end. A thread converts 8 consecutive k of one row at a time.
template <class Tr>
__device__ __forceinline__ void skinny_stage_x(const SkinnyArgs<typename Tr::elem_t>& g,
                                               const typename Tr::elem_t* __restrict__ x, float* xs, int k0,
                                               int rows, int k_end) {
  using T = typename Tr::elem_t;
  const int pieces = rows / 8;
  for (int i = threadIdx.x; i < pieces * Tr::kMaxM; i += kSkinnyThreads) {
    const int m = i / pieces, r = (i - m * pieces) * 8;
    const int k = k0 + r;
    float v[8];
    if (m < g.m && g.x_vec && k + 8 <= k_end) {
      const T* p = x + m * g.x_m + k;
      if constexpr (sizeof(T) == 4) {
        const float4 lo = reinterpret_cast<const float4*>(p)[0], hi = reinterpret_cast<const float4*>(p)[1];
        v[0] = lo.x; v[1] = lo.y; v[2] = lo.z; v[3] = lo.w; v[4] = hi.x; v[5] = hi.y; v[6] = hi.z; v[7] = hi.w;
      } else {
        SkinnyVec<T, 8> e;
        e.load_vec(p);
#pragma unroll
        for (int j = 0; j < 8; ++j) v[j] = e.get(j);
      }
    } else {
#pragma unroll
      for (int j = 0; j < 8; ++j)
        v[j] = (m < g.m && k + j < k_end) ? to_float(x[m * g.x_m + static_cast<int64_t>(k + j) * g.x_k]) : 0.f;
    }
    float4* dst = reinterpret_cast<float4*>(xs + m * Tr::kXRows + r);
    dst[0] = make_float4(v[0], v[1], v[2], v[3]);
    dst[1] = make_float4(v[4], v[5], v[6], v[7]);
  }
}

// ---- streaming W --------------------------------------------------------------------------------

// N-contiguous W: rows [kc, kc_end) of the block's columns; adds into acc[m][j] (column n_col(j)).
template <class Tr>
__device__ __forceinline__ void skinny_rows_n(const SkinnyArgs<typename Tr::elem_t>& g,
                                              const typename Tr::elem_t* __restrict__ w, const float* xs, int n0,
                                              int kc, int kc_end, float (&acc)[Tr::kMaxM][Tr::kNL]) {
  using T = typename Tr::elem_t;
  constexpr int kNL = Tr::kNL, kG = Tr::kGroupsInFlight;
  const int c = threadIdx.x % Tr::kLC, kr = threadIdx.x / Tr::kLC;
  // Columns of this thread: kNL consecutive ones (vector loads) or kLC apart (element loads that
  // coalesce across the kLC threads of a row piece).
  auto col = [&](int j) { return n0 + (Tr::kVec ? c * kNL + j : c + Tr::kLC * j); };
  const bool full = col(0) + (Tr::kVec ? kNL - 1 : Tr::kLC * (kNL - 1)) < g.n;
  const T* wc = w + static_cast<int64_t>(col(0)) * g.w_n;
  for (int kb = kc + 4 * kr; kb < kc_end; kb += 4 * Tr::kKR * kG) {
    SkinnyVec<T, kNL> v[kG][4];
#pragma unroll
    for (int q = 0; q < kG; ++q) {
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const int k = kb + q * 4 * Tr::kKR + u;
        v[q][u].zero();
        if (k >= kc_end) continue;
        const T* p = wc + static_cast<int64_t>(k) * g.w_k;
        if (Tr::kVec && full) {
          v[q][u].load_vec(p);
        } else {
#pragma unroll
          for (int j = 0; j < kNL; ++j)
            if (col(j) < g.n) v[q][u].set(j, p[static_cast<int64_t>(Tr::kVec ? j : Tr::kLC * j) * g.w_n]);
        }
      }
    }
#pragma unroll
    for (int q = 0; q < kG; ++q) {
      const int r = kb + q * 4 * Tr::kKR - kc;
      if (r >= kc_end - kc) break;
      float wf[4][kNL];
#pragma unroll
      for (int u = 0; u < 4; ++u)
#pragma unroll
        for (int j = 0; j < kNL; ++j) wf[u][j] = v[q][u].get(j);
#pragma unroll
      for (int m = 0; m < Tr::kMaxM; ++m) {
        const float4 xv = *reinterpret_cast<const float4*>(xs + m * Tr::kXRows + r);
#pragma unroll
        for (int j = 0; j < kNL; ++j) {
          float s = acc[m][j];
          s = fmaf(xv.x, wf[0][j], s);
          s = fmaf(xv.y, wf[1][j], s);
          s = fmaf(xv.z, wf[2][j], s);
          s = fmaf(xv.w, wf[3][j], s);
          acc[m][j] = s;
        }
      }
    }
  }
}

// K-contiguous W: steps of kKS along [kc, kc_end), interleaved over the block's warps; lane rows
// n0 + lane + 32 r; adds into acc[r][m].
template <class Tr>
__device__ __forceinline__ void skinny_rows_k(const SkinnyArgs<typename Tr::elem_t>& g,
                                              const typename Tr::elem_t* __restrict__ w, const float* xs, int n0,
                                              int kc, int kc_end, float (&acc)[Tr::kRows][Tr::kMaxM]) {
  using T = typename Tr::elem_t;
  constexpr int kKS = Tr::kKS, kS = Tr::kStepsInFlight, kR = Tr::kRows;
  const int lane = threadIdx.x % 32, group = threadIdx.x / 32;
  for (int ks = kc + group * kKS; ks < kc_end; ks += kSkinnyGroups * kKS * kS) {
    SkinnyVec<T, kKS> v[kS][kR];
#pragma unroll
    for (int s = 0; s < kS; ++s) {
      const int k = ks + s * kSkinnyGroups * kKS;
#pragma unroll
      for (int r = 0; r < kR; ++r) {
        v[s][r].zero();
        const int n = n0 + lane + 32 * r;
        if (k >= kc_end || n >= g.n) continue;
        const T* p = w + static_cast<int64_t>(n) * g.w_n;
        if (Tr::kVec && k + kKS <= kc_end) {
#pragma unroll
          for (int h = 0; h < kKS / Tr::kV; ++h) {  // 16-byte pieces
            SkinnyVec<T, Tr::kV> piece;
            piece.load_vec(p + k + h * Tr::kV);
#pragma unroll
            for (int i = 0; i < 4; ++i) v[s][r].w[4 * h + i] = piece.w[i];
          }
        } else {
#pragma unroll
          for (int j = 0; j < kKS; ++j)
            if (k + j < kc_end) v[s][r].set(j, p[static_cast<int64_t>(k + j) * g.w_k]);
        }
      }
    }
#pragma unroll
    for (int s = 0; s < kS; ++s) {
      const int r0 = ks + s * kSkinnyGroups * kKS - kc;
      if (r0 >= kc_end - kc) break;
#pragma unroll
      for (int m = 0; m < Tr::kMaxM; ++m) {
#pragma unroll
        for (int q = 0; q < kKS / 4; ++q) {
          const float4 xv = *reinterpret_cast<const float4*>(xs + m * Tr::kXRows + r0 + 4 * q);
#pragma unroll
          for (int r = 0; r < kR; ++r) {
            float a = acc[r][m];
            a = fmaf(xv.x, v[s][r].get(4 * q + 0), a);
            a = fmaf(xv.y, v[s][r].get(4 * q + 1), a);
            a = fmaf(xv.z, v[s][r].get(4 * q + 2), a);
            a = fmaf(xv.w, v[s][r].get(4 * q + 3), a);
            acc[r][m] = a;
          }
        }
      }
    }
  }
}

// ---- the block's end: cluster sum, epilogue, store -----------------------------------------------

// After the block's sum is in ps[m][n - n0] (kM x kBN, fp32; ps past M or N is never read): the
// cluster's sum, a slice of the tile per block, over the blocks in rank order, then the epilogue and
// the one rounding. Every thread of the block calls it (it holds cluster barriers).
template <typename T, int kM, int kBN>
__device__ __forceinline__ void skinny_finish(const SkinnyArgs<T>& g, const float* ps, int split, int n0, int64_t z) {
#if defined(AITER_LITE_CUDA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  namespace cg = cooperative_groups;
  if (g.splits > 1) cg::this_cluster().sync();
#elif defined(AITER_LITE_HIP)
  if (g.splits > 1) __builtin_trap();  // the host launches clusters only on CUDA sm_90
#else
  if (g.splits > 1) __trap();  // the host launches clusters only where this is compiled for sm_90
#endif
  constexpr int kE = kM * kBN;
  const int per = (kE + g.splits - 1) / g.splits;
  const int e_end = min(kE, (split + 1) * per);
  for (int e = split * per + static_cast<int>(threadIdx.x); e < e_end; e += kSkinnyThreads) {
    const int m = e / kBN, n = n0 + (e - m * kBN);
    if (m >= g.m || n >= g.n) continue;
    float v = ps[e];
#if defined(AITER_LITE_CUDA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if (g.splits > 1) {
      cg::cluster_group cluster = cg::this_cluster();
      v = 0.f;
      for (int q = 0; q < g.splits; ++q) v += cluster.map_shared_rank(ps, q)[e];
    }
#endif
    if (g.epi_active) v = apply_epilogue<T>(g.epi, v, z, m, n);
    with_out_type(g.out, g.epi.out_fp32, [&](auto* out) {
      using O = std::remove_pointer_t<decltype(out)>;
      out[z * g.o_batch + m * g.o_m + static_cast<int64_t>(n) * g.o_n] = from_float<O>(v);
    });
  }
#if defined(AITER_LITE_CUDA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (g.splits > 1) cg::this_cluster().sync();  // peers may still read this block's ps
#endif
}

// ---- the kernel -----------------------------------------------------------------------------------

// Grid: x = column block * splits + split (a cluster of `splits` blocks along x), y = batch entry.
template <class Tr>
__global__ void __launch_bounds__(kSkinnyThreads) matmul_skinny_kernel(const SkinnyArgs<typename Tr::elem_t> g) {
  using T = typename Tr::elem_t;
  constexpr int kM = Tr::kMaxM, kBN = Tr::kBN;
  extern __shared__ float4 skinny_smem[];
  float* xs = reinterpret_cast<float*>(skinny_smem);
  float* ps = xs + Tr::kXRows * kM;

  const SkinnyBlock<T> blk(g, kBN);
  const int split = blk.split, n0 = blk.n0, k_begin = blk.k_begin, k_end = blk.k_end;
  const int64_t z = blk.z;
  const T* __restrict__ x = blk.x;
  const T* __restrict__ w = blk.w;

  constexpr int kAccA = Tr::kKContig ? Tr::kRows : kM, kAccB = Tr::kKContig ? kM : Tr::kNL;
  float acc[kAccA][kAccB];
#pragma unroll
  for (int i = 0; i < kAccA; ++i)
#pragma unroll
    for (int j = 0; j < kAccB; ++j) acc[i][j] = 0.f;

  for (int kc = k_begin; kc < k_end; kc += Tr::kXRows) {
    const int kc_end = min(k_end, kc + Tr::kXRows);
    const int rows = (kc_end - kc + kSkinnyKAlign - 1) / kSkinnyKAlign * kSkinnyKAlign;
    if (kc != k_begin) __syncthreads();  // every thread is done with the previous chunk of xs
    skinny_stage_x<Tr>(g, x, xs, kc, rows, kc_end);
    __syncthreads();
    if constexpr (Tr::kKContig) skinny_rows_k<Tr>(g, w, xs, n0, kc, kc_end, acc);
    else skinny_rows_n<Tr>(g, w, xs, n0, kc, kc_end, acc);
  }

  // The block's sum in ps[m][n - n0]: 32-thread groups add in turn (fixed order).
  const int lane = threadIdx.x % 32, group = threadIdx.x / 32;
  if constexpr (!Tr::kKContig) {
    // Threads kLC apart within a group share columns: a butterfly over those lane bits (the same
    // bits in every lane, in a fixed order).
    const int hw_lane = lane_id();
#pragma unroll
    for (int off = Tr::kLC; off < 32; off <<= 1)
#pragma unroll
      for (int m = 0; m < kM; ++m)
#pragma unroll
        for (int j = 0; j < Tr::kNL; ++j)
          acc[m][j] += __uint_as_float(warp_shfl(__float_as_uint(acc[m][j]), hw_lane ^ off));
  }
  for (int turn = 0; turn < kSkinnyGroups; ++turn) {
    if (group == turn) {
      if constexpr (Tr::kKContig) {
#pragma unroll
        for (int r = 0; r < Tr::kRows; ++r)
#pragma unroll
          for (int m = 0; m < kM; ++m) {
            float* p = ps + m * kBN + lane + 32 * r;
            *p = turn == 0 ? acc[r][m] : *p + acc[r][m];
          }
      } else if (lane < Tr::kLC) {
#pragma unroll
        for (int m = 0; m < kM; ++m)
#pragma unroll
          for (int j = 0; j < Tr::kNL; ++j) {
            float* p = ps + m * kBN + (Tr::kVec ? lane * Tr::kNL + j : lane + Tr::kLC * j);
            *p = turn == 0 ? acc[m][j] : *p + acc[m][j];
          }
      }
    }
    __syncthreads();
  }

  skinny_finish<T, kM, kBN>(g, ps, split, n0, z);
}

// ---- the launcher ---------------------------------------------------------------------------------

// Compute capability major of the current device, read once per device.
inline int skinny_cc_major() {
  static std::atomic<int> cache[kMaxCachedDevices] = {};
  return per_device(cache, [](int dev) {
    int major = 0;
#if defined(AITER_LITE_CUDA)
    AITER_LITE_GPU_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
#else
    (void)dev;
#endif
    return major > 0 ? major : -1;
  });
}

// Launches `kernel` (a skinny kernel of traits Tr: elem_t, kBN columns per block, kSmemBytes) over
// column blocks x K splits x batch.
template <class Tr, typename Kernel>
void skinny_launch(const MatmulParams& p, gpuStream_t stream, Kernel kernel) {
  using T = typename Tr::elem_t;
  SkinnyArgs<T> g{};
  g.x = static_cast<const T*>(p.a);
  g.w = static_cast<const T*>(p.b);
  g.out = static_cast<T*>(p.out);
  g.x_batch = p.a_batch_stride; g.x_m = p.a_row_stride; g.x_k = p.a_col_stride;
  g.w_batch = p.b_batch_stride; g.w_n = p.b_col_stride; g.w_k = p.b_row_stride;
  g.o_batch = p.out_batch_stride; g.o_m = p.out_row_stride; g.o_n = p.out_col_stride;
  g.m = static_cast<int32_t>(p.m);
  g.n = static_cast<int32_t>(p.n);
  g.k = static_cast<int32_t>(p.k);
  g.x_vec = skinny_x_vec(p, sizeof(T));
  g.epi = p.epilogue;
  g.epi_active = !p.epilogue.is_identity();

  static std::atomic<int64_t> slots_cache[kMaxCachedDevices] = {};
  const int64_t slots = per_device(slots_cache, [&](int dev) {
    return resident_blocks_on(dev, kernel, kSkinnyThreads, Tr::kSmemBytes);
  });
  const int64_t col_blocks = (p.n + Tr::kBN - 1) / Tr::kBN;
#if defined(AITER_LITE_CUDA)
  const bool clusters = skinny_cc_major() >= 9;
#else
  const bool clusters = false;
#endif
  // Blocks resident at once in clusters of s blocks (a cluster lives in one GPC, so fewer than
  // slots for s > 1), read once per device and size; -1 where the query is refused. Traits without
  // kClusterSlots count every size in single-block slots.
  static std::atomic<int64_t> cluster_slots_cache[kSkinnyMaxSplits + 1][kMaxCachedDevices] = {};
  auto slots_of = [&](int s) -> int64_t {
    if (s <= 1 || !Tr::kClusterSlots) return slots;
#if defined(AITER_LITE_CUDA)
    return per_device(cluster_slots_cache[s], [&](int dev) -> int64_t {
      int sms = 0;
      AITER_LITE_GPU_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
      const int c = max_active_clusters(reinterpret_cast<const void*>(kernel), kSkinnyThreads, Tr::kSmemBytes, s, sms);
      return c > 0 ? int64_t{c} * s : -1;
    });
#else
    return int64_t{-1};
#endif
  };
  g.splits = skinny_splits(col_blocks * p.batch, p.k, clusters, slots_of);
  if (const int forced = skinny_forced_splits(); forced > 0 && clusters) {
    int s = std::min(forced, kSkinnyMaxSplits);
    while (s > 1 && ((p.k + s - 1) / s < 2 * kSkinnyKAlign || slots_of(s) <= 0)) --s;
    g.splits = s;
  }
  const int64_t per = (p.k + g.splits - 1) / g.splits;
  g.k_per_split = static_cast<int32_t>((per + kSkinnyKAlign - 1) / kSkinnyKAlign * kSkinnyKAlign);
  if (col_blocks * g.splits > kMaxDim) invalid("output too wide for the skinny kernel");
  const dim3 grid(static_cast<unsigned>(col_blocks * g.splits), static_cast<unsigned>(p.batch), 1);
#if defined(AITER_LITE_CUDA)
  if (g.splits > 1) {
    cudaLaunchConfig_t cfg{};
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = static_cast<unsigned>(g.splits);
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    cfg.gridDim = grid;
    cfg.blockDim = dim3(kSkinnyThreads, 1, 1);
    cfg.dynamicSmemBytes = Tr::kSmemBytes;
    cfg.stream = stream;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    AITER_LITE_GPU_CHECK(cudaLaunchKernelEx(&cfg, kernel, g));
    return;
  }
#endif
  kernel<<<grid, kSkinnyThreads, Tr::kSmemBytes, stream>>>(g);
  AITER_LITE_LAUNCH_CHECK();
}

// The FFMA kernel for rows of A as a multiple of 8 (kMaxM 1, 4, 8 or 16), B's layout, and whether B's
// vector loads apply. (skinny_cuda, in matmul_skinny_tc.cuh, sends fp16/bf16 to the tensor-core
// kernel where it can read B.)
template <typename T>
void skinny_ffma_cuda(const MatmulParams& p, gpuStream_t stream) {
  const SkinnyBLayout b = skinny_b_layout(p, sizeof(T));
  auto go = [&](auto max_m) {
    constexpr int kM = decltype(max_m)::value;
    auto launch = [&](auto traits) {
      using Tr = decltype(traits);
      skinny_launch<Tr>(p, stream, matmul_skinny_kernel<Tr>);
    };
#if defined(AITER_LITE_CUDA)
    // fp16/bf16 B that vector loads can read goes to the tensor-core kernel (skinny_tc_reads_b): no
    // vector-load FFMA kernels for them (the element-load ones stay correct for any layout).
    constexpr bool kVecKernels = sizeof(T) == 4;
#else
    constexpr bool kVecKernels = true;
#endif
    switch (b) {
      case SkinnyBLayout::kNVec:
        if constexpr (kVecKernels) return launch(SkinnyTraits<T, kM, false, true>{});
        [[fallthrough]];
      case SkinnyBLayout::kNAny: return launch(SkinnyTraits<T, kM, false, false>{});
      case SkinnyBLayout::kKVec:
        if constexpr (kVecKernels) return launch(SkinnyTraits<T, kM, true, true>{});
        [[fallthrough]];
      case SkinnyBLayout::kKAny: return launch(SkinnyTraits<T, kM, true, false>{});
    }
  };
  if (p.m <= 1) go(std::integral_constant<int, 1>{});
  else if (p.m <= 4) go(std::integral_constant<int, 4>{});
  else if (p.m <= 8) go(std::integral_constant<int, 8>{});
  else go(std::integral_constant<int, 16>{});
}

}  // namespace matmul_detail
}  // namespace aiter_lite
