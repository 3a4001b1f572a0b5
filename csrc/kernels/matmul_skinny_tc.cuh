// Skinny matmul on the tensor cores (CUDA, sm_80+): fp16/bf16 with A of at most 16 rows. Like the
// FFMA skinny kernel (matmul_skinny.cuh) the product is bound by reading B once, but the sums run on
// mma.sync m16n8k16 with B's fragments taken straight from 16-byte global loads, so a thread spends
// a few instructions per 16 bytes and keeps many loads in flight; no shared memory but the block's
// final sum. `skinny_cuda` (the end of this file) picks this kernel or the FFMA one.
//
// B is read as W = b^T, [N, K]. A dot product does not care in which order its K terms are added, so
// each lane's 16-byte piece of W is fed to the mma in the order it was loaded, and A's fragments are
// read with the same permutation of K (no shuffles, no shared memory staging):
//   K-contiguous W (w_k == 1, rows 16-byte aligned; w.t() of an nn.Linear weight): lane (g = lane/4,
//     c = lane%4) loads 8 k of row g of each of its warp's kNT 8-row tiles at k0 = step + 32u + 8c;
//     mma h (0, 1) takes k0 + 4h .. k0 + 4h + 3 as the lane's logical k {2c, 2c+1, 2c+8, 2c+9}, so the
//     A fragment is A[g][k0 + 4h ..] and A[g + 8][k0 + 4h ..]: 8 bytes of a row each.
//   N-contiguous W (w_n == 1; b row-major): lane (g, c) loads 8 columns nc = 8g .. 8g+7 of the warp's
//     64 of rows r0 .. r0+3, r0 = step + 16u + 4c; mma i (0..7) takes column nc + i as the lane's
//     logical column g, its 4 rows as logical k {2c, 2c+1, 2c+8, 2c+9} (prmt pairs rows (0,1) and
//     (2,3)); the A fragment is A[g][r0 .. r0+3] and A[g + 8][r0 ..]. The accumulator of logical
//     column j of tile i is physical column 8j + i.
//   Rows of N-contiguous W at any 2-byte alignment (kNShift: rows padded to an odd length, N odd):
//     each lane loads the two aligned 16-byte words around its 8 columns (L1 merges a lane's second
//     word with its neighbour's first) and funnel-shifts the row's offset out; a row's last columns
//     take element loads (no load reaches past the row).
// A (tiny, L1/L2-resident) is read per fragment, 16- or 8-byte loads where its rows are aligned and
// K-contiguous, element loads otherwise; rows at or past M, and k at or past K, read as zero. W is
// streamed past L1 (except kNShift, which wants the neighbour's word). Columns past N read as zero.
// Block: 8 warps, kWarpsN along the block's columns x kWarpsK along its K range (steps interleaved),
// summed in shared memory in a fixed order, then skinny_finish (split-K over a cluster, the epilogue,
// the one rounding) as in the FFMA kernel: deterministic.
#pragma once

#include <type_traits>

#include "matmul_skinny.cuh"
#include "mma.cuh"

namespace aiter_lite {
namespace matmul_detail {

#if defined(AITER_LITE_CUDA)

enum class SkinnyTcLoad { kK, kN, kNShift };

template <typename T, int kMaxM_, SkinnyTcLoad kLoad_>
struct SkinnyTcTraits {
  using elem_t = T;
  static constexpr int kMaxM = kMaxM_;  // 8 or 16: the mma's rows g + 8 are loaded only for 16
  static constexpr SkinnyTcLoad kLoad = kLoad_;
  static constexpr bool kAlongK = kLoad == SkinnyTcLoad::kK;
  static constexpr int kArows = kMaxM == 16 ? 2 : 1;
  // K-contiguous: kNT 8-row tiles per warp, kKU 16-byte loads per row and step.
  static constexpr int kNT = 2, kKU = 4;
  // N-contiguous: 64 columns (8 tiles) per warp, kNU groups of 4 rows per step.
  static constexpr int kNU = 2;
  static constexpr int kTiles = kAlongK ? kNT : 8;
  static constexpr int kWarpCols = kAlongK ? 8 * kNT : 64;
  static constexpr int kWarpsN = kAlongK ? 4 : 2;
  static constexpr int kWarpsK = kSkinnyGroups / kWarpsN;
  static constexpr int kBN = kWarpsN * kWarpCols;
  static constexpr int kStepK = kAlongK ? 32 * kKU : 16 * kNU;
  static constexpr int kSmemBytes = kMaxM * kBN * 4;  // ps
  static constexpr bool kStreamW = true;               // W's 16-byte loads skip L1 (ld_stream16)
  // Split count from the clusters of each size the GPU keeps resident (skinny_launch): counted in
  // single-block slots, 8-block clusters on 4096 x 4096 ran in two waves (34 us against 24 us for 6,
  // H100, session 22, bench/lab/skinny_tc_lab.cu).
  static constexpr bool kClusterSlots = true;
  static_assert(kSkinnyKAlign % 16 == 0, "K ranges start on whole 16-byte pieces");
};

template <typename T>
using MmaTag = std::conditional_t<std::is_same<T, half_t>::value, mma::F16Tag, mma::BF16Tag>;

__device__ __forceinline__ uint32_t word_of(const uint4& v, int i) {
  return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}

// 16 bytes of W that are read once: not kept in L1 (kStream), or a plain read-only load.
template <bool kStream = true>
__device__ __forceinline__ uint4 ld_stream16(const void* p) {
  if constexpr (!kStream) return __ldg(reinterpret_cast<const uint4*>(p));
  uint4 v;
  asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];\n"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "l"(p));
  return v;
}

// kN elements p[0], p[s], ... packed two to a word; those at or past `valid` are zero.
template <int kN, typename T>
__device__ __forceinline__ void load_elems(uint32_t (&w)[kN / 2], const T* p, int64_t s, int valid) {
#pragma unroll
  for (int i = 0; i < kN / 2; ++i) w[i] = 0u;
#pragma unroll
  for (int j = 0; j < kN; ++j)
    if (j < valid) w[j / 2] |= static_cast<uint32_t>(bits16(p[j * s])) << (16 * (j & 1));
}

template <typename T>
__device__ __forceinline__ uint4 load8(const T* p, int64_t s, int valid, bool vec) {
  if (valid <= 0) return make_uint4(0u, 0u, 0u, 0u);
  if (vec && valid >= 8) return __ldg(reinterpret_cast<const uint4*>(p));
  uint32_t w[4];
  load_elems<8>(w, p, s, valid);
  return make_uint4(w[0], w[1], w[2], w[3]);
}

template <typename T>
__device__ __forceinline__ uint2 load4(const T* p, int64_t s, int valid, bool vec) {
  if (valid <= 0) return make_uint2(0u, 0u);
  if (vec && valid >= 4) return __ldg(reinterpret_cast<const uint2*>(p));
  uint32_t w[2];
  load_elems<4>(w, p, s, valid);
  return make_uint2(w[0], w[1]);
}

// Bytes [s, s + 16) of lo:hi (s even, < 16).
__device__ __forceinline__ uint4 shift_window(const uint4& lo, const uint4& hi, uint32_t s) {
  const uint32_t v[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
  const uint32_t q = s >> 2, sh = (s & 3u) * 8u;
  uint32_t u[6], t[5];
#pragma unroll
  for (int i = 0; i < 6; ++i) u[i] = (q & 2u) ? v[i + 2] : v[i];
#pragma unroll
  for (int i = 0; i < 5; ++i) t[i] = (q & 1u) ? u[i + 1] : u[i];
  return make_uint4(__funnelshift_r(t[0], t[1], sh), __funnelshift_r(t[1], t[2], sh),
                    __funnelshift_r(t[2], t[3], sh), __funnelshift_r(t[3], t[4], sh));
}

// Columns nc .. nc+7 of an N-contiguous row p (p = &W^T[r][nc]), of which `left` (N - nc, any value)
// exist; missing ones read as zero.
//   kEdge false (every column the warp's lanes may touch, up to nc + 15, exists): the one or two
//     16-byte words, no column checks.
//   kEdge true (the warp holding N's last columns): a 16-byte load never reaches past the row's last
//     column (the row may end its tensor's allocation); the row's last pieces are read element by
//     element by fix(), after the step has issued all its loads (a branch between the loads keeps the
//     compiler from issuing them together: twice the time, H100, session 22).
template <class Tr, bool kEdge>
struct RowPiece {
  using T = typename Tr::elem_t;
  uint4 v;

  // Whether the 16-byte words of the piece stay inside its row.
  __device__ __forceinline__ static bool whole(const T* p, int left) {
    if constexpr (Tr::kLoad == SkinnyTcLoad::kNShift) {
      const int lo_end = 8 - static_cast<int>((reinterpret_cast<uintptr_t>(p) & 15u) / 2);
      return left >= lo_end + 8 || (lo_end >= min(8, left) && left >= lo_end);
    } else {
      return left >= 8;
    }
  }

  // `left` <= 0: the row is past K (or the columns past N).
  __device__ __forceinline__ void load(const T* p, int left) {
    const uint4 zero = make_uint4(0u, 0u, 0u, 0u);
    if constexpr (Tr::kLoad == SkinnyTcLoad::kNShift) {
      const uintptr_t addr = reinterpret_cast<uintptr_t>(p);
      const uint32_t s = static_cast<uint32_t>(addr & 15u);
      const uint4* base = reinterpret_cast<const uint4*>(addr - s);
      bool lo_ok = left > 0, hi_ok = left > 0 && s != 0;
      if constexpr (kEdge) {
        const int lo_end = 8 - static_cast<int>(s / 2);  // columns nc .. nc + lo_end - 1 are in the first word
        const bool both = left >= lo_end + 8;
        lo_ok = both || (lo_end >= min(8, left) && left >= lo_end);
        hi_ok = both && s != 0;
      }
      v = shift_window(lo_ok ? base[0] : zero, hi_ok ? base[1] : zero, s);
    } else {
      v = (kEdge ? left >= 8 : left > 0) ? ld_stream16<Tr::kStreamW>(p) : zero;
    }
  }

  __device__ __forceinline__ void fix(const T* p, int left) {
    if constexpr (kEdge) {
      if (left > 0 && !whole(p, left)) {
        uint32_t w[4];
        load_elems<8>(w, p, 1, min(8, left));
        v = make_uint4(w[0], w[1], w[2], w[3]);
      }
    }
  }
};

// The lane's rows of A in the mma's fragments: g, and g + 8 where kArows is 2; rows past M read as zero.
template <class Tr>
struct LaneRowsOfA {
  const typename Tr::elem_t* row[Tr::kArows];
  bool ok[Tr::kArows];

  __device__ __forceinline__ LaneRowsOfA(const SkinnyArgs<typename Tr::elem_t>& g, const typename Tr::elem_t* x,
                                         int gr) {
#pragma unroll
    for (int r = 0; r < Tr::kArows; ++r) {
      ok[r] = gr + 8 * r < g.m;
      row[r] = x + static_cast<int64_t>(ok[r] ? gr + 8 * r : 0) * g.x_m;
    }
  }
};

// K-contiguous W: this warp's steps of [k_begin, k_end); adds into acc[t] (tile t: rows nw + 8t ..).
template <class Tr>
__device__ __forceinline__ void skinny_tc_along_k(const SkinnyArgs<typename Tr::elem_t>& g,
                                                  const typename Tr::elem_t* __restrict__ x,
                                                  const typename Tr::elem_t* __restrict__ w, int nw, int wk,
                                                  int k_begin, int k_end, float (&acc)[Tr::kTiles][4]) {
  using T = typename Tr::elem_t;
  constexpr int kNT = Tr::kNT, kU = Tr::kKU, kR = Tr::kArows;
  const int lane = threadIdx.x & 31, gr = lane >> 2, c = lane & 3;
  const T* wrow[kNT];
  bool row_ok[kNT];
#pragma unroll
  for (int t = 0; t < kNT; ++t) {
    const int n = nw + 8 * t + gr;
    row_ok[t] = n < g.n;
    wrow[t] = w + static_cast<int64_t>(row_ok[t] ? n : 0) * g.w_n;
  }
  const LaneRowsOfA<Tr> xa_rows(g, x, gr);
  for (int ks = k_begin + wk * Tr::kStepK; ks < k_end; ks += Tr::kWarpsK * Tr::kStepK) {
    // W's 16-byte loads of the whole step first (branch-free), then A's and K's tail (which branch).
    uint4 wv[kNT][kU], xv[kU][kR];
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const int k0 = ks + 32 * u + 8 * c;
#pragma unroll
      for (int t = 0; t < kNT; ++t)
        wv[t][u] = row_ok[t] && k0 + 8 <= k_end ? ld_stream16<Tr::kStreamW>(wrow[t] + k0) : make_uint4(0u, 0u, 0u, 0u);
    }
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const int k0 = ks + 32 * u + 8 * c, valid = min(8, k_end - k0);
#pragma unroll
      for (int r = 0; r < kR; ++r)
        xv[u][r] = load8(xa_rows.row[r] + static_cast<int64_t>(k0) * g.x_k, g.x_k, xa_rows.ok[r] ? valid : 0, g.x_vec);
#pragma unroll
      for (int t = 0; t < kNT; ++t)
        if (row_ok[t] && valid > 0 && valid < 8) wv[t][u] = load8(wrow[t] + k0, 1, valid, false);
    }
#pragma unroll
    for (int u = 0; u < kU; ++u)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const uint32_t a[4] = {word_of(xv[u][0], 2 * h), kR == 2 ? word_of(xv[u][kR - 1], 2 * h) : 0u,
                               word_of(xv[u][0], 2 * h + 1), kR == 2 ? word_of(xv[u][kR - 1], 2 * h + 1) : 0u};
#pragma unroll
        for (int t = 0; t < kNT; ++t) {
          const uint32_t b[2] = {word_of(wv[t][u], 2 * h), word_of(wv[t][u], 2 * h + 1)};
          mma::mma_m16n8k16(acc[t], a, b, MmaTag<T>{});
        }
      }
  }
}

// N-contiguous W: this warp's steps of rows [k_begin, k_end); adds into acc[i] (tile i: columns
// nw + 8j + i for logical column j).
template <class Tr, bool kEdge>
__device__ __forceinline__ void skinny_tc_along_n_steps(const SkinnyArgs<typename Tr::elem_t>& g,
                                                  const typename Tr::elem_t* __restrict__ x,
                                                  const typename Tr::elem_t* __restrict__ w, int nw, int wk,
                                                  int k_begin, int k_end, float (&acc)[Tr::kTiles][4]) {
  using T = typename Tr::elem_t;
  constexpr int kU = Tr::kNU, kR = Tr::kArows;
  const int lane = threadIdx.x & 31, gr = lane >> 2, c = lane & 3;
  const int nc = nw + 8 * gr;
  const int left = g.n - nc;  // columns from nc on (kEdge false: at least 16)
  const T* wcol = w + (left > 0 ? nc : 0);
  const LaneRowsOfA<Tr> xa_rows(g, x, gr);
  for (int ks = k_begin + wk * Tr::kStepK; ks < k_end; ks += Tr::kWarpsK * Tr::kStepK) {
    // Each row group's W loads (branch-free), then its A loads (which branch on A's layout): a few
    // percent faster than all of W first (H100, session 22).
    RowPiece<Tr, kEdge> piece[kU][4];
    uint2 xa[kU][kR];
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const int r0 = ks + 16 * u + 4 * c, valid = min(4, k_end - r0);
#pragma unroll
      for (int j = 0; j < 4; ++j)
        piece[u][j].load(wcol + static_cast<int64_t>(r0 + j) * g.w_k, j < valid ? left : 0);
#pragma unroll
      for (int r = 0; r < kR; ++r)
        xa[u][r] = load4(xa_rows.row[r] + static_cast<int64_t>(r0) * g.x_k, g.x_k, xa_rows.ok[r] ? valid : 0, g.x_vec);
    }
    uint4 wv[kU][4];
#pragma unroll
    for (int u = 0; u < kU; ++u)
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        piece[u][j].fix(wcol + static_cast<int64_t>(ks + 16 * u + 4 * c + j) * g.w_k,
                        ks + 16 * u + 4 * c + j < k_end ? left : 0);
        wv[u][j] = piece[u][j].v;
      }
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const uint32_t a[4] = {xa[u][0].x, kR == 2 ? xa[u][kR - 1].x : 0u, xa[u][0].y, kR == 2 ? xa[u][kR - 1].y : 0u};
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        const uint32_t sel = (i & 1) ? 0x7632u : 0x5410u;
        const uint32_t b[2] = {__byte_perm(word_of(wv[u][0], i / 2), word_of(wv[u][1], i / 2), sel),
                               __byte_perm(word_of(wv[u][2], i / 2), word_of(wv[u][3], i / 2), sel)};
        mma::mma_m16n8k16(acc[i], a, b, MmaTag<T>{});
      }
    }
  }
}

template <class Tr>
__device__ __forceinline__ void skinny_tc_along_n(const SkinnyArgs<typename Tr::elem_t>& g,
                                                  const typename Tr::elem_t* __restrict__ x,
                                                  const typename Tr::elem_t* __restrict__ w, int nw, int wk,
                                                  int k_begin, int k_end, float (&acc)[Tr::kTiles][4]) {
  // Warp-uniform: only the warps near N's end check columns (the last lane's second word reaches column
  // nw + 56 + 15).
  if (nw + 72 <= g.n) skinny_tc_along_n_steps<Tr, false>(g, x, w, nw, wk, k_begin, k_end, acc);
  else skinny_tc_along_n_steps<Tr, true>(g, x, w, nw, wk, k_begin, k_end, acc);
}

// Grid as the FFMA kernel's (SkinnyBlock).
template <class Tr>
__global__ void __launch_bounds__(kSkinnyThreads, 2) matmul_skinny_tc_kernel(const SkinnyArgs<typename Tr::elem_t> g) {
  using T = typename Tr::elem_t;
  constexpr int kM = Tr::kMaxM, kBN = Tr::kBN;
  extern __shared__ float4 skinny_smem[];
  float* ps = reinterpret_cast<float*>(skinny_smem);

  const SkinnyBlock<T> blk(g, kBN);
  const int split = blk.split, n0 = blk.n0, k_begin = blk.k_begin, k_end = blk.k_end;
  const int64_t z = blk.z;
  const T* __restrict__ x = blk.x;
  const T* __restrict__ w = blk.w;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int wn = warp % Tr::kWarpsN, wk = warp / Tr::kWarpsN;
  const int nw = n0 + wn * Tr::kWarpCols;

  float acc[Tr::kTiles][4];
#pragma unroll
  for (int t = 0; t < Tr::kTiles; ++t)
#pragma unroll
    for (int q = 0; q < 4; ++q) acc[t][q] = 0.f;
  if constexpr (Tr::kAlongK) skinny_tc_along_k<Tr>(g, x, w, nw, wk, k_begin, k_end, acc);
  else skinny_tc_along_n<Tr>(g, x, w, nw, wk, k_begin, k_end, acc);

  // The block's sum in ps[m][n - n0]: the kWarpsK warps of a column range add in turn (fixed order).
  // Accumulator q of tile t is row g + 8 (q / 2), logical column 2c + q % 2.
  const int gr = lane >> 2, c = lane & 3;
  for (int turn = 0; turn < Tr::kWarpsK; ++turn) {
    if (wk == turn) {
#pragma unroll
      for (int t = 0; t < Tr::kTiles; ++t)
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          const int m = gr + 8 * (q / 2), j = 2 * c + q % 2;
          if (m >= kM) continue;
          const int n = wn * Tr::kWarpCols + (Tr::kAlongK ? 8 * t + j : 8 * j + t);
          float* p = ps + m * kBN + n;
          *p = turn == 0 ? acc[t][q] : *p + acc[t][q];
        }
    }
    __syncthreads();
  }
  skinny_finish<T, kM, kBN>(g, ps, split, n0, z);
}

// The tensor-core kernel where it can read B; false where it cannot (B's rows K-contiguous but not
// 16-byte aligned, or neither stride 1: the FFMA kernel takes those).
template <typename T>
bool skinny_tc_cuda(const MatmulParams& p, gpuStream_t stream) {
  if (!skinny_tc_reads_b(p, sizeof(T))) return false;
  const SkinnyBLayout b = skinny_b_layout(p, sizeof(T));
  // One row of A with B's rows off 16 bytes: the FFMA kernel's element loads were faster (1 x 32001 x
  // 4096 bf16 on the H100: 150 us against 182, session 22); two rows and more, the tensor cores (7 x
  // 32001 x 4096: 182 against 244).
  if (p.m <= 1 && b != SkinnyBLayout::kKVec && b != SkinnyBLayout::kNVec) return false;
  const SkinnyTcLoad load = b == SkinnyBLayout::kKVec   ? SkinnyTcLoad::kK
                            : b == SkinnyBLayout::kNVec ? SkinnyTcLoad::kN
                                                        : SkinnyTcLoad::kNShift;
  auto go = [&](auto max_m) {
    constexpr int kM = decltype(max_m)::value;
    auto launch = [&](auto traits) {
      using Tr = decltype(traits);
      skinny_launch<Tr>(p, stream, matmul_skinny_tc_kernel<Tr>);
    };
    switch (load) {
      case SkinnyTcLoad::kK: return launch(SkinnyTcTraits<T, kM, SkinnyTcLoad::kK>{});
      case SkinnyTcLoad::kN: return launch(SkinnyTcTraits<T, kM, SkinnyTcLoad::kN>{});
      case SkinnyTcLoad::kNShift: return launch(SkinnyTcTraits<T, kM, SkinnyTcLoad::kNShift>{});
    }
  };
  if (p.m <= 8) go(std::integral_constant<int, 8>{});
  else go(std::integral_constant<int, 16>{});
  return true;
}

#endif  // AITER_LITE_CUDA

// The skinny kernel for one slice: fp16/bf16 on CUDA run the tensor-core kernel where it reads B,
// everything else the FFMA kernel.
template <typename T>
void skinny_cuda(const MatmulParams& p, gpuStream_t stream) {
#if defined(AITER_LITE_CUDA)
  if constexpr (sizeof(T) == 2) {
    if (skinny_tc_cuda<T>(p, stream)) return;
  }
#endif
  skinny_ffma_cuda<T>(p, stream);
}

}  // namespace matmul_detail
}  // namespace aiter_lite
