// Tensor-core matmul through mma.sync (sm_80+; runs unchanged on sm_90): fp16/bf16 with m16n8k16 and
// fp32-as-tf32 with m16n8k8, fp32 accumulators. CUDA only (the PTX lives in mma.cuh).
//
// Shape of the kernel (a block loops over kBM x kBN output tiles, see matmul_tc_kernel):
//   global --cp.async 16 B, zero-filled tails--> kStages shared stages (XOR-swizzled)
//          --ldmatrix (or 32-bit loads for MN-contiguous tf32)--> double-buffered register fragments
//          (tf32: rounded to nearest, mma::to_tf32)
//          --mma.sync--> fp32 accumulators (kMTiles x kNTiles tiles of 16x8 per warp)
//          --> clipped stores, 2 columns at a time where out rows are contiguous.
// Operand orientation is a template flag: A is K-contiguous ([m][k] rows in shared memory, plain
// ldmatrix) or M-contiguous ([k][m] rows, ldmatrix.trans); B is K-contiguous ([n][k], plain) or
// N-contiguous ([k][n], .trans). Either way cp.async copies 16-byte chunks along the contiguous dim.
// The main loop exists twice (tc_mainloop<kGuarded>): tiles entirely inside M and N with K a
// multiple of kBK copy without any bounds arithmetic; edge tiles zero-fill per chunk. (With one copy
// and a per-k-tile test, the compiler predicates both paths into the loop: the split took the H100
// from 424 to 463 TFLOP/s at 4096^3 fp16, and tensor-pipe activity from 61% to 74%.)
// The grid is persistent (as many blocks as fit at once): when a block's main loop ends it issues
// the next tile's first k-tiles before storing the finished tile, so the next tile's loads are in
// flight during the epilogue instead of after it. A k-tile's copies are spread over the k-steps of
// the k-tile before (all but the last), not issued in one burst.
// tf32 (fp32 inputs): configs with BK = 32, 4 k-steps of m16n8k8 per k-tile and barrier; fragments
// rounded by mma::to_tf32 (one F2FP per element on sm_90). An N-contiguous B stays on 32-bit loads:
// 16-byte loads need the warp's columns permuted, and since b0 and b1 of an mma come from different
// k-rows, ptxas then moves every element into the aligned register pair mma reads (tried: 169 moves
// per 128 mma against 48 fewer loads).
#pragma once

#include <numeric>
#include <type_traits>
#include <utility>

#include "matmul_common.cuh"
#include "matmul_configs.h"
#include "mma.cuh"

#if defined(AITER_LITE_CUDA)

namespace aiter_lite {
namespace matmul_detail {

// A kRows x kCols tile of T in shared memory, stored as 16-byte chunks with an XOR swizzle so that
// both the cp.async writes (8 consecutive chunks of a row per quarter-warp) and the fragment reads
// hit 8 different 16-byte bank groups:
//   - ldmatrix reads one logical chunk column from 8 consecutive rows (first row a multiple of 8);
//   - tf32 fragments of an MN-contiguous tile read 2 adjacent chunks from 4 consecutive rows.
// Rows of >= 8 chunks: the chunk's low 3 bits are XORed with key(row % 8), key = 0,2,4,6,1,3,5,7
// (8 rows -> 8 different keys; rows 0-3 and 4-7 -> keys differing in bits 1-2, for the tf32 case).
// Rows of 4 chunks (64 bytes): two rows share a 128-byte line, and the line index (row / 2) keys
// the XOR of the 3 low bits of the linear chunk index.
template <typename T, int kRows_, int kCols_>
struct SwizzledSmemTile {
  static constexpr int kRows = kRows_, kCols = kCols_;
  static constexpr int kChunkElems = 16 / static_cast<int>(sizeof(T));
  static constexpr int kRowChunks = kCols / kChunkElems;
  static constexpr int kChunks = kRows * kRowChunks;
  static constexpr int kBytes = kChunks * 16;
  static_assert(kCols % kChunkElems == 0, "rows are whole 16-byte chunks");
  static_assert(kRowChunks == 4 || kRowChunks % 8 == 0, "swizzle defined for 64-byte rows or multiples of 128");
  static_assert(kChunks % 8 == 0, "swizzle permutes groups of 8 chunks");

  __device__ static __forceinline__ uint32_t chunk_offset(int row, int chunk) {
    if constexpr (kRowChunks == 4) {
      const int linear = row * 4 + chunk;
      return static_cast<uint32_t>(linear ^ ((linear >> 3) & 7)) * 16u;
    } else {
      const int r = row & 7;
      const int key = ((r & 3) << 1) | (r >> 2);
      return static_cast<uint32_t>(row * kRowChunks + (chunk ^ key)) * 16u;
    }
  }
  // Byte offset of element (row, col).
  __device__ static __forceinline__ uint32_t elem_offset(int row, int col) {
    return chunk_offset(row, col / kChunkElems) + static_cast<uint32_t>((col % kChunkElems) * sizeof(T));
  }
};

// Issues the cp.async copies of one operand tile. The tile's shared rows run along the operand's
// strided ("outer") dim, its chunks along the contiguous ("inner") dim; kKInner says whether K is
// the inner dim (A K-contiguous / B K-contiguous) or the outer one. Thread t copies chunk column
// t % kRowChunks of rows t / kRowChunks + i * kRowStep, so its chunks share one column and one
// inner-dim bound, and its global addresses differ by multiples of row_step. The swizzle key
// repeats every kKeyRows rows, so the shared offsets need only kPeriod registers.
template <typename T, class Tile, int kThreads, bool kKInner>
struct TcTileLoader {
  static constexpr int kRowStep = kThreads / Tile::kRowChunks;
  static constexpr int kChunksPerThread = Tile::kChunks / kThreads;
  static constexpr int kChunkElems = Tile::kChunkElems;
  static constexpr int kRowBytes = Tile::kRowChunks * 16;
  static constexpr int kKeyRows = Tile::kRowChunks == 4 ? 16 : 8;
  static constexpr int kFullPeriod = kKeyRows / std::gcd(kRowStep, kKeyRows);
  static constexpr int kPeriod = kChunksPerThread < kFullPeriod ? kChunksPerThread : kFullPeriod;
  static_assert(kThreads % Tile::kRowChunks == 0, "a thread's chunks must share a chunk column");
  static_assert(Tile::kChunks % kThreads == 0, "each thread copies whole chunks");
  static_assert(kChunksPerThread <= 32, "row mask is 32 bits");

  const T* any_valid;    // a valid address for zero-byte copies (the kernel argument, not a register)
  const T* src;          // this thread's first chunk of the next k-tile to copy (advance() moves it)
  int64_t outer_stride;  // elements between outer indices
  int64_t row_step;      // kRowStep * outer_stride
  uint32_t dst[kPeriod]; // shared offsets of chunks 0 .. kPeriod-1 inside a stage
  uint32_t row_mask;     // kKInner: bit i set if row i is inside the operand
  int outer_left;        // !kKInner: k-rows left from this thread's first row (K - row0)
  int inner_left;        // elements left along the inner dim from this thread's chunk (at k-tile 0)

  // outer0/inner0: tile origin along the outer/inner dim (the K part is 0).
  __device__ __forceinline__ TcTileLoader(const T* base, const T* any_valid_, int64_t outer_stride_, int outer0,
                                          int outer_size, int inner0, int inner_size, int tid)
      : any_valid(any_valid_), outer_stride(outer_stride_) {
    const int row0 = tid / Tile::kRowChunks, chunk = tid % Tile::kRowChunks;
    row_step = kRowStep * outer_stride;
    src = base + (outer0 + row0) * outer_stride + inner0 + chunk * kChunkElems;
    inner_left = inner_size - inner0 - chunk * kChunkElems;
    outer_left = outer_size - outer0 - row0;
    row_mask = 0;
#pragma unroll
    for (int i = 0; i < kChunksPerThread; ++i)
      if (i * kRowStep < outer_left) row_mask |= 1u << i;
#pragma unroll
    for (int i = 0; i < kPeriod; ++i) dst[i] = Tile::chunk_offset(row0 + i * kRowStep, chunk);
  }

  __device__ __forceinline__ uint32_t dst_offset(int i) const {
    return dst[i % kPeriod] + (i / kPeriod) * (kPeriod * kRowStep * kRowBytes);
  }

  // Moves src on by `tiles` k-tiles (kBK = the tile's K extent; a whole number of row steps).
  __device__ __forceinline__ void advance(int tiles = 1) {
    if constexpr (kKInner)
      src += tiles * Tile::kCols;
    else
      src += tiles * (Tile::kRows / kRowStep) * row_step;
  }

  // Copies this thread's chunks kBegin .. kEnd-1 of the k-tile at src (starting at K index k0,
  // which only the bounds checks use) into the stage at shared address `stage`. Unguarded: the
  // caller knows every chunk is inside the operand (interior block, K a multiple of kBK).
  template <bool kGuarded, int kBegin, int kEnd>
  __device__ __forceinline__ void issue(uint32_t stage, int k0) const {
    static_assert(Tile::kRows % kRowStep == 0, "a k-tile is a whole number of row steps");
    if constexpr (kBegin < kEnd) {
      const T* tile_src = src;
      if constexpr (!kGuarded) {
#pragma unroll
        for (int i = kBegin; i < kEnd; ++i) mma::cp_async_16(stage + dst_offset(i), tile_src + i * row_step);
      } else {
        const int inner_elems = min(max(kKInner ? inner_left - k0 : inner_left, 0), kChunkElems);
#pragma unroll
        for (int i = kBegin; i < kEnd; ++i) {
          const bool row_ok = kKInner ? ((row_mask >> i) & 1u) != 0 : i * kRowStep + k0 < outer_left;
          const int bytes = row_ok ? inner_elems * static_cast<int>(sizeof(T)) : 0;
          const T* p = tile_src + i * row_step;
          mma::cp_async_16_zfill(stage + dst_offset(i), bytes > 0 ? p : any_valid, bytes);
        }
      }
    }
  }
};

template <typename T, int kConfig, bool kAKMajor_, bool kBKMajor_>
struct TcMatmulTraits {
  using elem_t = T;
  static constexpr bool kAKMajor = kAKMajor_;  // A contiguous along K (else along M)
  static constexpr bool kBKMajor = kBKMajor_;  // B contiguous along K (else along N)
  static constexpr bool kTf32 = std::is_same<T, float>::value;
  static constexpr bool kOnSm90 = tc_config_on_sm90(kConfig);  // compiled for sm_90a (matmul_configs.h)
  static constexpr MatmulTileConfig kCfg = kMatmulConfigs[kConfig];
  static_assert(kCfg.path == (kTf32 ? MatmulPath::kTensorCoreTf32 : MatmulPath::kTensorCore16),
                "config is for another path");

  static constexpr int kBM = kCfg.bm, kBN = kCfg.bn, kBK = kCfg.bk, kStages = kCfg.stages;
  static constexpr int kWarpsM = kCfg.warps_m, kWarpsN = kCfg.warps_n;
  static constexpr int kThreads = matmul_config_threads(kCfg);
  static constexpr int kWarpTileM = kBM / kWarpsM, kWarpTileN = kBN / kWarpsN;
  static constexpr int kMmaM = 16, kMmaN = 8, kMmaK = kTf32 ? 8 : 16;
  static constexpr int kMTiles = kWarpTileM / kMmaM, kNTiles = kWarpTileN / kMmaN;
  static constexpr int kKSteps = kBK / kMmaK;
  // The k-tile's copies are spread over its first kCopySteps k-steps (all but the last, which
  // waits for the next k-tile), so that cp.async and ldmatrix do not queue up in one burst.
  static constexpr int kCopySteps = kKSteps > 1 ? kKSteps - 1 : 1;

  // Shared tiles: rows along the strided dim, 16-byte chunks along the contiguous one.
  using a_tile = SwizzledSmemTile<T, kAKMajor ? kBM : kBK, kAKMajor ? kBK : kBM>;
  using b_tile = SwizzledSmemTile<T, kBKMajor ? kBN : kBK, kBKMajor ? kBK : kBN>;
  using a_loader = TcTileLoader<T, a_tile, kThreads, kAKMajor>;
  using b_loader = TcTileLoader<T, b_tile, kThreads, kBKMajor>;

  // Dynamic shared memory: kStages A tiles, then kStages B tiles.
  struct SmemLayout {
    static constexpr int kAStage = a_tile::kBytes, kBStage = b_tile::kBytes;
    static constexpr int kAOffset = 0;
    static constexpr int kBOffset = kStages * kAStage;
    static constexpr int kBytes = kBOffset + kStages * kBStage;
    __device__ static __forceinline__ uint32_t a(uint32_t base, int stage) { return base + kAOffset + stage * kAStage; }
    __device__ static __forceinline__ uint32_t b(uint32_t base, int stage) { return base + kBOffset + stage * kBStage; }
  };
  static constexpr int kSmemBytes = SmemLayout::kBytes;

  // Register tiles of one warp.
  using a_frags = uint32_t[kMTiles][4];
  using b_frags = uint32_t[kNTiles][2];
  using accumulators = float[kMTiles][kNTiles][4];

  static_assert(kStages >= 2, "cp.async pipeline needs two stages");
  static_assert(kBM % (kWarpsM * kMmaM) == 0 && kBN % (kWarpsN * 2 * kMmaN) == 0,
                "warp tiles are whole mma tiles (pairs along N for ldmatrix.x4)");
  static_assert(kBK % kMmaK == 0 && kKSteps % 2 == 0, "fragment double buffering alternates within a k-tile");
  static_assert(a_tile::kChunkElems * 2 == kMmaK, "a k-step spans two 16-byte chunks");
  static_assert(!kTf32 || (kAKMajor || a_tile::kRowChunks % 8 == 0) && (kBKMajor || b_tile::kRowChunks % 8 == 0),
                "tf32 MN-contiguous tiles: 8 k-rows apart must share the swizzle key (rows of >= 8 chunks)");
  static_assert(kSmemBytes == matmul_config_smem_bytes(kCfg, sizeof(T)), "smem size disagrees with the table");
};

// Per-thread shared-memory byte offsets (inside a stage) of every fragment load, computed once.
// The swizzle is an XOR, so offsets are not affine in (mt, nt, kk); but moving 16 rows along a
// K-contiguous tile, or 8 rows / 8 chunks along an MN-contiguous one, keeps the XOR key and adds a
// constant. So each operand keeps only the offsets that differ in the key bits, and every load
// is `stage + offset[i] + compile-time constant`, which ptxas folds into the instruction.
//   K-contiguous (ldmatrix):            one offset per k-step;  + mt * 16 rows (A) / np * 16 rows (B)
//   MN-contiguous 16-bit (ldmatrix.trans): one per mt (A) / per pair np (B); + kk * 16 rows
//   MN-contiguous tf32 (32-bit loads):  one per (mt % 2, reg) (A) / (nt % 4, reg) (B);
//                                       + (mt / 2) * 128 B / (nt / 4) * 128 B, + kk * 8 rows
template <class Traits>
struct TcFragmentOffsets {
  using a_tile = typename Traits::a_tile;
  using b_tile = typename Traits::b_tile;
  static constexpr int kARowBytes = a_tile::kRowChunks * 16, kBRowBytes = b_tile::kRowChunks * 16;
  static constexpr int kMTiles = Traits::kMTiles, kNPairs = Traits::kNTiles / 2, kKSteps = Traits::kKSteps;
  static constexpr bool kAScalar = Traits::kTf32 && !Traits::kAKMajor;
  static constexpr bool kBScalar = Traits::kTf32 && !Traits::kBKMajor;
  static constexpr int kATf32Tiles = kMTiles < 2 ? kMTiles : 2;
  static constexpr int kBTf32Tiles = Traits::kNTiles < 4 ? Traits::kNTiles : 4;
  static constexpr int kANum = Traits::kAKMajor ? kKSteps : kAScalar ? 4 * kATf32Tiles : kMTiles;
  static constexpr int kBNum = Traits::kBKMajor ? kKSteps : kBScalar ? 2 * kBTf32Tiles : kNPairs;

  uint32_t a[kANum];
  uint32_t b[kBNum];

  __device__ __forceinline__ TcFragmentOffsets(int warp_m, int warp_n, int lane) {
    const int mat = lane >> 3, mat_row = lane & 7;  // ldmatrix: matrix and row this lane addresses
    const int g = lane >> 2, t = lane & 3;          // mma fragment coordinates
    const int m_warp = warp_m * Traits::kWarpTileM, n_warp = warp_n * Traits::kWarpTileN;
    // A matrices (ldmatrix.x4): (m 0-7, k lo) (m 8-15, k lo) (m 0-7, k hi) (m 8-15, k hi).
    if constexpr (Traits::kAKMajor) {
#pragma unroll
      for (int kk = 0; kk < kKSteps; ++kk)
        a[kk] = a_tile::chunk_offset(m_warp + (mat & 1) * 8 + mat_row, kk * 2 + (mat >> 1));
    } else if constexpr (!kAScalar) {
#pragma unroll
      for (int mt = 0; mt < kMTiles; ++mt)
        a[mt] = a_tile::chunk_offset((mat >> 1) * 8 + mat_row, (m_warp + mt * 16) / 8 + (mat & 1));
    } else {  // tf32 a0..a3 = (g, t) (g+8, t) (g, t+4) (g+8, t+4) of [k][m]
#pragma unroll
      for (int mt = 0; mt < kATf32Tiles; ++mt)
#pragma unroll
        for (int j = 0; j < 4; ++j)
          a[mt * 4 + j] = a_tile::elem_offset(t + (j >> 1) * 4, m_warp + mt * 16 + (j & 1) * 8 + g);
    }
    // B matrices (ldmatrix.x4): (n 0-7, k lo) (n 0-7, k hi) (n 8-15, k lo) (n 8-15, k hi).
    if constexpr (Traits::kBKMajor) {
#pragma unroll
      for (int kk = 0; kk < kKSteps; ++kk)
        b[kk] = b_tile::chunk_offset(n_warp + (mat >> 1) * 8 + mat_row, kk * 2 + (mat & 1));
    } else if constexpr (!kBScalar) {
#pragma unroll
      for (int np = 0; np < kNPairs; ++np)
        b[np] = b_tile::chunk_offset((mat & 1) * 8 + mat_row, (n_warp + np * 16) / 8 + (mat >> 1));
    } else {  // tf32 b0, b1 = (k t, n g) (k t+4, n g) of [k][n]
#pragma unroll
      for (int nt = 0; nt < kBTf32Tiles; ++nt)
#pragma unroll
        for (int j = 0; j < 2; ++j) b[nt * 2 + j] = b_tile::elem_offset(t + j * 4, n_warp + nt * 8 + g);
    }
  }
};

// Loads the warp's A and B fragments of k-step kk (a compile-time constant after unrolling).
template <class Traits>
__device__ __forceinline__ void tc_load_fragments(typename Traits::a_frags& fa, typename Traits::b_frags& fb,
                                                  uint32_t a_stage, uint32_t b_stage, int kk,
                                                  const TcFragmentOffsets<Traits>& off) {
  using Off = TcFragmentOffsets<Traits>;
#pragma unroll
  for (int mt = 0; mt < Traits::kMTiles; ++mt) {
    if constexpr (Traits::kAKMajor) {
      mma::ldmatrix_x4(fa[mt], a_stage + off.a[kk] + mt * 16 * Off::kARowBytes);
    } else if constexpr (!Off::kAScalar) {
      mma::ldmatrix_x4_trans(fa[mt], a_stage + off.a[mt] + kk * 16 * Off::kARowBytes);
    } else {
#pragma unroll
      for (int j = 0; j < 4; ++j)
        fa[mt][j] = mma::lds_b32(a_stage + off.a[(mt % 2) * 4 + j] + (mt / 2) * 128 + kk * 8 * Off::kARowBytes);
    }
  }
#pragma unroll
  for (int np = 0; np < Off::kNPairs; ++np) {
    if constexpr (!Off::kBScalar) {
      uint32_t r[4];
      if constexpr (Traits::kBKMajor)
        mma::ldmatrix_x4(r, b_stage + off.b[kk] + np * 16 * Off::kBRowBytes);
      else
        mma::ldmatrix_x4_trans(r, b_stage + off.b[np] + kk * 16 * Off::kBRowBytes);
      fb[2 * np][0] = r[0];
      fb[2 * np][1] = r[1];
      fb[2 * np + 1][0] = r[2];
      fb[2 * np + 1][1] = r[3];
    } else {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int nt = 2 * np + h;
#pragma unroll
        for (int j = 0; j < 2; ++j)
          fb[nt][j] = mma::lds_b32(b_stage + off.b[(nt % 4) * 2 + j] + (nt / 4) * 128 + kk * 8 * Off::kBRowBytes);
      }
    }
  }

  if constexpr (Traits::kTf32) {  // round to nearest instead of the tensor core's truncation
#pragma unroll
    for (int mt = 0; mt < Traits::kMTiles; ++mt)
#pragma unroll
      for (int j = 0; j < 4; ++j) fa[mt][j] = mma::to_tf32(fa[mt][j]);
#pragma unroll
    for (int nt = 0; nt < Traits::kNTiles; ++nt)
#pragma unroll
      for (int j = 0; j < 2; ++j) fb[nt][j] = mma::to_tf32(fb[nt][j]);
  }
}

// One k-step of the warp tile. Serpentine order (n-tiles forwards for even m-tiles, backwards for
// odd ones): consecutive mma share an A fragment, or at a row change the B fragment, so every
// instruction reuses one operand from the register reuse cache.
template <class Traits>
__device__ __forceinline__ void tc_mma_step(typename Traits::accumulators& acc, const typename Traits::a_frags& fa,
                                            const typename Traits::b_frags& fb) {
#pragma unroll
  for (int mt = 0; mt < Traits::kMTiles; ++mt)
#pragma unroll
    for (int i = 0; i < Traits::kNTiles; ++i) {
      const int nt = mt % 2 == 0 ? i : Traits::kNTiles - 1 - i;
      if constexpr (Traits::kTf32)
        mma::mma_m16n8k8_tf32(acc[mt][nt], fa[mt], fb[nt]);
      else if constexpr (std::is_same<typename Traits::elem_t, half_t>::value)
        mma::mma_m16n8k16(acc[mt][nt], fa[mt], fb[nt], mma::F16Tag{});
      else
        mma::mma_m16n8k16(acc[mt][nt], fa[mt], fb[nt], mma::BF16Tag{});
    }
}

// One output tile of one batch entry: the unit of work of the persistent loop.
struct TcWork {
  int32_t z;        // batch entry (of this launch)
  TileOrigin tile;  // output tile origin
  bool interior;    // entirely inside M and N, and K a multiple of kBK: copies need no bounds checks
};

// Work item w (0 .. tiles * batch - 1, which the host keeps below 2^31): batch-major, tiles in the
// grouped order inside a batch entry.
template <class Traits>
__device__ __forceinline__ TcWork tc_work(const GemmArgs<typename Traits::elem_t>& args, int32_t w) {
  const int32_t tiles = args.tiles_m * args.tiles_n;
  const int32_t z = args.batch == 1 ? 0 : w / tiles;
  const int32_t t = w - z * tiles;
  const TileOrigin o = grouped_tile_origin<Traits::kBM, Traits::kBN>(t, args.tiles_m, args.tiles_n);
  const bool interior = o.m0 + Traits::kBM <= args.m && o.n0 + Traits::kBN <= args.n && args.k % Traits::kBK == 0;
  return {z, o, interior};
}

// The copy state of one work item's A and B tiles.
template <class Traits>
struct TcLoaders {
  typename Traits::a_loader a;
  typename Traits::b_loader b;

  __device__ __forceinline__ TcLoaders(const GemmArgs<typename Traits::elem_t>& args, const TcWork& w, int tid)
      : a(make_a(args, w, tid)), b(make_b(args, w, tid)) {}

  // A: outer/inner = m/k (K-contiguous) or k/m. B: outer/inner = n/k (K-contiguous) or k/n.
  __device__ static __forceinline__ typename Traits::a_loader make_a(const GemmArgs<typename Traits::elem_t>& args,
                                                                     const TcWork& w, int tid) {
    const auto* a = args.a + static_cast<int64_t>(w.z) * args.a_batch_stride;
    if constexpr (Traits::kAKMajor)
      return typename Traits::a_loader(a, args.a, args.a_row_stride, w.tile.m0, args.m, 0, args.k, tid);
    else
      return typename Traits::a_loader(a, args.a, args.a_col_stride, 0, args.k, w.tile.m0, args.m, tid);
  }
  __device__ static __forceinline__ typename Traits::b_loader make_b(const GemmArgs<typename Traits::elem_t>& args,
                                                                     const TcWork& w, int tid) {
    const auto* b = args.b + static_cast<int64_t>(w.z) * args.b_batch_stride;
    if constexpr (Traits::kBKMajor)
      return typename Traits::b_loader(b, args.b, args.b_col_stride, w.tile.n0, args.n, 0, args.k, tid);
    else
      return typename Traits::b_loader(b, args.b, args.b_row_stride, 0, args.k, w.tile.n0, args.n, tid);
  }

  __device__ __forceinline__ void advance(int tiles = 1) {
    a.advance(tiles);
    b.advance(tiles);
  }

  // Part kPart of kParts of this thread's copies of the next k-tile (at K index k0) into shared
  // stage `stage`: A's chunks, then B's, split evenly by count.
  template <bool kGuarded, int kPart, int kParts>
  __device__ __forceinline__ void issue(uint32_t smem, int stage, int k0) const {
    using Smem = typename Traits::SmemLayout;
    constexpr int kA = Traits::a_loader::kChunksPerThread, kB = Traits::b_loader::kChunksPerThread;
    constexpr int kLo = kPart * (kA + kB) / kParts, kHi = (kPart + 1) * (kA + kB) / kParts;
    a.template issue<kGuarded, (kLo < kA ? kLo : kA), (kHi < kA ? kHi : kA)>(Smem::a(smem, stage), k0);
    b.template issue<kGuarded, (kLo > kA ? kLo - kA : 0), (kHi > kA ? kHi - kA : 0)>(Smem::b(smem, stage), k0);
  }
};

__device__ __forceinline__ int tc_next_stage(int stage, int stages) { return stage + 1 == stages ? 0 : stage + 1; }

// threadIdx.x, read afresh (volatile) wherever a work item needs it: values derived from it once,
// before the persistent loop, would be held in registers through every main loop, where the tf32
// and some 16-bit kernels have none to spare (ptxas spills them). Deriving them again per work item
// costs a few instructions per tile.
__device__ __forceinline__ int tc_tid() {
  uint32_t tid;
  asm volatile("mov.u32 %0, %%tid.x;\n" : "=r"(tid));
  return static_cast<int>(tid);
}

// Calls f(std::integral_constant<int, i>{}) for i = kIs... in order (a loop with a compile-time index).
template <int... kIs, typename F>
__device__ __forceinline__ void tc_static_for(std::integer_sequence<int, kIs...>, F&& f) {
  (f(std::integral_constant<int, kIs>{}), ...);
}

// Prologue of a work item: its k-tiles 0 .. kStages-2 into the stages ring, ring+1, ... (mod
// kStages), one commit group each (empty past the end of K).
template <class Traits, bool kGuarded>
__device__ __forceinline__ void tc_prologue(const GemmArgs<typename Traits::elem_t>& args, const TcWork& w,
                                            uint32_t smem, int ring) {
  TcLoaders<Traits> ld(args, w, tc_tid());
  const int num_k_tiles = (args.k + Traits::kBK - 1) / Traits::kBK;
  int stage = ring;
#pragma unroll
  for (int s = 0; s < Traits::kStages - 1; ++s) {
    if (s < num_k_tiles) {
      ld.template issue<kGuarded, 0, 1>(smem, stage, s * Traits::kBK);
      ld.advance();
    }
    mma::cp_async_commit();
    stage = tc_next_stage(stage, Traits::kStages);
  }
}

// Main loop of one work item whose prologue is in flight, its k-tile 0 in stage `ring`. Leaves the
// sums in acc and `ring` at the stage after its last k-tile's. kGuarded: bounds-checked copies
// (edge tiles, or K not a multiple of kBK); the unguarded copy of this function serves interior
// tiles with no per-chunk predicates (a run-time branch inside the loop would be if-converted and
// cost both paths).
// On return every thread has passed a barrier after its last shared-memory read of this item, and
// all of the item's copies have landed: the caller may refill any stage.
template <class Traits, bool kGuarded>
__device__ __forceinline__ void tc_mainloop(typename Traits::accumulators& acc,
                                            const GemmArgs<typename Traits::elem_t>& args, const TcWork& w,
                                            uint32_t smem, int& ring) {
  using Smem = typename Traits::SmemLayout;
  constexpr int kStages = Traits::kStages, kBK = Traits::kBK, kKSteps = Traits::kKSteps;
  constexpr int kCopySteps = Traits::kCopySteps;
  const int tid = tc_tid(), warp = tid / 32;
  TcLoaders<Traits> ld(args, w, tid);
  ld.advance(kStages - 1);  // the prologue copied k-tiles 0 .. kStages-2
  const TcFragmentOffsets<Traits> frag_off(warp / Traits::kWarpsN, warp % Traits::kWarpsN, tid % 32);
  const int num_k_tiles = (args.k + kBK - 1) / kBK;

#pragma unroll
  for (int mt = 0; mt < Traits::kMTiles; ++mt)
#pragma unroll
    for (int nt = 0; nt < Traits::kNTiles; ++nt)
#pragma unroll
      for (int j = 0; j < 4; ++j) acc[mt][nt][j] = 0.f;
  if (num_k_tiles == 0) return;  // K = 0: nothing was copied

  typename Traits::a_frags fa[2];
  typename Traits::b_frags fb[2];
  int read_stage = ring, write_stage = ring == 0 ? kStages - 1 : ring - 1;

  mma::cp_async_wait<kStages - 2>();  // k-tile 0 has landed
  __syncthreads();
  tc_load_fragments<Traits>(fa[0], fb[0], Smem::a(smem, read_stage), Smem::b(smem, read_stage), 0, frag_off);

  // Groups committed before the wait in k-tile kt: (kStages - 1) + (kt + 1) (the copies of k-tile
  // kt + kStages - 1 are issued over k-steps 0 .. kCopySteps-1 and committed at the last of them),
  // so wait<kStages - 2> means k-tile kt + 1 has landed. The barrier there also orders every read
  // of the stage consumed in k-tile kt (its last k-step's fragments were loaded one step earlier)
  // before that stage's refill, issued from k-step 0 of k-tile kt + 1 on.
  for (int kt = 0; kt < num_k_tiles; ++kt) {
    tc_static_for(std::make_integer_sequence<int, kKSteps>{}, [&](auto kk_constant) {
      constexpr int kk = decltype(kk_constant)::value;
      int frag_stage = read_stage;
      if constexpr (kk == kKSteps - 1) {
        mma::cp_async_wait<kStages - 2>();
        __syncthreads();
        read_stage = tc_next_stage(read_stage, kStages);
        // After the last k-tile the next stage is the first one the next work item's prologue
        // refills: the (unused) fragments are read from this k-tile's stage instead, which stays
        // untouched until the next item's first barrier. (A select, not a branch: predicated
        // loads would be if-converted into the whole k-step.)
        frag_stage = kt + 1 < num_k_tiles ? read_stage : frag_stage;
      }
      // Fragments of the next k-step (the next k-tile's first one after the barrier).
      tc_load_fragments<Traits>(fa[(kk + 1) % 2], fb[(kk + 1) % 2], Smem::a(smem, frag_stage),
                                Smem::b(smem, frag_stage), (kk + 1) % kKSteps, frag_off);
      if constexpr (kk < kCopySteps) {
        const int next = kt + kStages - 1;
        if (next < num_k_tiles) {
          ld.template issue<kGuarded, kk, kCopySteps>(smem, write_stage, next * kBK);
          if constexpr (kk == kCopySteps - 1) ld.advance();
        }
        if constexpr (kk == kCopySteps - 1) {
          mma::cp_async_commit();
          write_stage = tc_next_stage(write_stage, kStages);
        }
      }
      tc_mma_step<Traits>(acc, fa[kk % 2], fb[kk % 2]);
    });
  }
  ring = read_stage;
}

// The fused epilogue (MatmulEpilogue) on a thread's accumulators, in place: acc[mt][nt][r] is
// out[row_base + 16 mt + 8 (r / 2)][col_base + 8 nt + r % 2]. One rolled loop over a stack copy, so the
// epilogue's code (the activations included) is in the kernel once instead of once per accumulator:
// unrolled, it made ptxas take about 7x as long on these kernels and moved their register counts.
template <class Traits>
__device__ __forceinline__ void tc_apply_epilogue(typename Traits::accumulators& acc,
                                                  const GemmArgs<typename Traits::elem_t>& args, int32_t z,
                                                  int32_t row_base, int32_t col_base) {
  constexpr int kNT = Traits::kNTiles, kCount = Traits::kMTiles * kNT * 4;
  float v[kCount];
#pragma unroll
  for (int i = 0; i < kCount; ++i) v[i] = acc[i / (4 * kNT)][i / 4 % kNT][i % 4];
#pragma unroll 1
  for (int i = 0; i < kCount; ++i) {
    const int r = i % 4, nt = i / 4 % kNT, mt = i / (4 * kNT);
    const int32_t row = row_base + 16 * mt + 8 * (r / 2), col = col_base + 8 * nt + r % 2;
    if (row < args.m && col < args.n) v[i] = apply_epilogue<typename Traits::elem_t>(args.epi, v[i], z, row, col);
  }
#pragma unroll
  for (int i = 0; i < kCount; ++i) acc[i / (4 * kNT)][i / 4 % kNT][i % 4] = v[i];
}

// Stores a work item's tile: accumulator pairs (c0, c1) and (c2, c3) are 2 adjacent columns of rows
// g and g + 8.
template <class Traits>
__device__ __forceinline__ void tc_epilogue(const typename Traits::accumulators& acc_in,
                                            const GemmArgs<typename Traits::elem_t>& args, const TcWork& w) {
  using T = typename Traits::elem_t;
  const int tid = tc_tid();
  const int lane = tid % 32, warp = tid / 32;
  const int warp_m = warp / Traits::kWarpsN, warp_n = warp % Traits::kWarpsN;
  const int g = lane >> 2, t = lane & 3;
  typename Traits::accumulators acc;
#pragma unroll
  for (int mt = 0; mt < Traits::kMTiles; ++mt)
#pragma unroll
    for (int nt = 0; nt < Traits::kNTiles; ++nt)
#pragma unroll
      for (int r = 0; r < 4; ++r) acc[mt][nt][r] = acc_in[mt][nt][r];
  if (args.epi_active)
    tc_apply_epilogue<Traits>(acc, args, w.z, w.tile.m0 + warp_m * Traits::kWarpTileM + g,
                              w.tile.n0 + warp_n * Traits::kWarpTileN + 2 * t);
  with_out_type(args.out, args.epi.out_fp32, [&](auto* out_base) {
    using O = std::remove_pointer_t<decltype(out_base)>;
    O* out = out_base + static_cast<int64_t>(w.z) * args.out_batch_stride;
#pragma unroll
    for (int mt = 0; mt < Traits::kMTiles; ++mt) {
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int row = w.tile.m0 + warp_m * Traits::kWarpTileM + mt * 16 + half * 8 + g;
        if (row >= args.m) continue;
        O* out_row = out + row * args.out_row_stride;
#pragma unroll
        for (int nt = 0; nt < Traits::kNTiles; ++nt) {
          const int col = w.tile.n0 + warp_n * Traits::kWarpTileN + nt * 8 + 2 * t;
          const float x = acc[mt][nt][2 * half], y = acc[mt][nt][2 * half + 1];
          if (args.out_vec && col + 1 < args.n) {
            store2<O>(out_row + col, x, y);
          } else {
            if (col < args.n) out_row[col * args.out_col_stride] = from_float<O>(x);
            if (col + 1 < args.n) out_row[(col + 1) * args.out_col_stride] = from_float<O>(y);
          }
        }
      }
    }
  });
}

// Persistent kernel: block b runs work items b, b + gridDim.x, ... (the host launches at most as
// many blocks as fit on the device at once). The next item's prologue is issued as soon as the
// current main loop ends, so its copies are in flight while the current tile is stored.
template <class Traits>
__device__ __forceinline__ void matmul_tc_body(const GemmArgs<typename Traits::elem_t>& args) {
  extern __shared__ __align__(128) unsigned char matmul_smem[];
  const uint32_t smem = mma::smem_u32(matmul_smem);
  int32_t w = blockIdx.x;
  if (w >= args.work_items) return;

  int ring = 0;  // stage of the current item's k-tile 0
  {
    const TcWork first = tc_work<Traits>(args, w);
    if (first.interior)
      tc_prologue<Traits, false>(args, first, smem, ring);
    else
      tc_prologue<Traits, true>(args, first, smem, ring);
  }
  for (;;) {
    typename Traits::accumulators acc;
    {
      const TcWork cur = tc_work<Traits>(args, w);
      if (cur.interior)
        tc_mainloop<Traits, false>(acc, args, cur, smem, ring);
      else
        tc_mainloop<Traits, true>(acc, args, cur, smem, ring);
    }
    // Only w (and ring) live through the main loop: the item is derived from it again for the
    // epilogue (the empty asm hides that it is the same value, so the compiler does not keep the
    // first derivation in registers; see tc_tid).
    asm volatile("" : "+r"(w));
    const bool more = w < args.work_items - static_cast<int32_t>(gridDim.x);  // no overflow near 2^31
    if (more) {
      const TcWork next = tc_work<Traits>(args, w + static_cast<int32_t>(gridDim.x));
      if (next.interior)
        tc_prologue<Traits, false>(args, next, smem, ring);
      else
        tc_prologue<Traits, true>(args, next, smem, ring);
    }
    tc_epilogue<Traits>(acc, args, tc_work<Traits>(args, w));
    if (!more) break;
    w += gridDim.x;
  }
  mma::cp_async_wait<0>();
}

// The sm_90a image holds only the configs the planner routes to there (tc_config_on_sm90); the others
// trap, and the planner never launches them on sm_90 (plan_tensor_core).
template <class Traits>
__global__ void __launch_bounds__(Traits::kThreads, 1)
    matmul_tc_kernel(const GemmArgs<typename Traits::elem_t> args) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  if constexpr (!Traits::kOnSm90) {
    __trap();
  } else
#endif
  {
    matmul_tc_body<Traits>(args);
  }
}

}  // namespace matmul_detail
}  // namespace aiter_lite

#endif  // AITER_LITE_CUDA
