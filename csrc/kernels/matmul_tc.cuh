// Tensor-core matmul through mma.sync (sm_80+; runs unchanged on sm_90): fp16/bf16 with m16n8k16 and
// fp32-as-tf32 with m16n8k8, fp32 accumulators. CUDA only (the PTX lives in mma.cuh).
//
// Shape of the kernel (one block = one kBM x kBN output tile):
//   global --cp.async 16 B, zero-filled tails--> kStages shared stages (XOR-swizzled)
//          --ldmatrix (or 32-bit loads for MN-contiguous tf32)--> double-buffered register fragments
//          --mma.sync--> fp32 accumulators (kMTiles x kNTiles tiles of 16x8 per warp)
//          --> clipped stores, 2 columns at a time where out rows are contiguous.
// Operand orientation is a template flag: A is K-contiguous ([m][k] rows in shared memory, plain
// ldmatrix) or M-contiguous ([k][m] rows, ldmatrix.trans); B is K-contiguous ([n][k], plain) or
// N-contiguous ([k][n], .trans). Either way cp.async copies 16-byte chunks along the contiguous dim.
// The block's main loop exists twice (tc_block_tile<kGuarded>): blocks entirely inside M and N
// with K a multiple of kBK copy without any bounds arithmetic; edge blocks zero-fill per chunk.
// (With one copy and a per-k-tile test, the compiler predicates both paths into the loop: the
// split took the H100 from 424 to 463 TFLOP/s at 4096^3 fp16, and tensor-pipe activity from 61% to 74%.)
#pragma once

#include <numeric>
#include <type_traits>

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
  const T* src;          // this thread's first chunk, k-tile 0
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

  // Copies the k-tile starting at k0 into the stage at shared address `stage`. Unguarded: the
  // caller knows every chunk is inside the operand (interior block, K a multiple of kBK).
  template <bool kGuarded>
  __device__ __forceinline__ void issue(uint32_t stage, int k0) const {
    const T* tile_src = src + (kKInner ? static_cast<int64_t>(k0) : k0 * outer_stride);
    if constexpr (!kGuarded) {
#pragma unroll
      for (int i = 0; i < kChunksPerThread; ++i) mma::cp_async_16(stage + dst_offset(i), tile_src + i * row_step);
    } else {
      const int inner_elems = min(max(kKInner ? inner_left - k0 : inner_left, 0), kChunkElems);
#pragma unroll
      for (int i = 0; i < kChunksPerThread; ++i) {
        const bool row_ok = kKInner ? ((row_mask >> i) & 1u) != 0 : i * kRowStep + k0 < outer_left;
        const int bytes = row_ok ? inner_elems * static_cast<int>(sizeof(T)) : 0;
        const T* p = tile_src + i * row_step;
        mma::cp_async_16_zfill(stage + dst_offset(i), bytes > 0 ? p : any_valid, bytes);
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

template <class Traits>
__device__ __forceinline__ void tc_mma_step(typename Traits::accumulators& acc, const typename Traits::a_frags& fa,
                                            const typename Traits::b_frags& fb) {
#pragma unroll
  for (int mt = 0; mt < Traits::kMTiles; ++mt)
#pragma unroll
    for (int nt = 0; nt < Traits::kNTiles; ++nt) {
      if constexpr (Traits::kTf32)
        mma::mma_m16n8k8_tf32(acc[mt][nt], fa[mt], fb[nt]);
      else if constexpr (std::is_same<typename Traits::elem_t, half_t>::value)
        mma::mma_m16n8k16(acc[mt][nt], fa[mt], fb[nt], mma::F16Tag{});
      else
        mma::mma_m16n8k16(acc[mt][nt], fa[mt], fb[nt], mma::BF16Tag{});
    }
}

// One block tile of one batch entry. kGuarded: bounds-checked copies (edge blocks, or K not a
// multiple of kBK); the unguarded copy of this function serves interior blocks with no per-chunk
// predicates (a run-time branch inside the loop would be if-converted and cost both paths).
template <class Traits, bool kGuarded>
__device__ __forceinline__ void tc_block_tile(const GemmArgs<typename Traits::elem_t>& args, TileOrigin tile,
                                              uint32_t smem, int tid, const TcFragmentOffsets<Traits>& frag_off) {
  using T = typename Traits::elem_t;
  using Smem = typename Traits::SmemLayout;
  constexpr int kStages = Traits::kStages, kBK = Traits::kBK, kKSteps = Traits::kKSteps;
  const int warp = tid / 32, lane = tid % 32;
  const int warp_m = warp / Traits::kWarpsN, warp_n = warp % Traits::kWarpsN;
  const int num_k_tiles = (args.k + kBK - 1) / kBK;
  const int64_t z = blockIdx.z;  // the host launches batches above 65535 in slices
  const T* a = args.a + z * args.a_batch_stride;
  const T* b = args.b + z * args.b_batch_stride;
  // A: outer/inner = m/k (K-contiguous) or k/m. B: outer/inner = n/k (K-contiguous) or k/n.
  const typename Traits::a_loader a_ld =
      Traits::kAKMajor ? typename Traits::a_loader(a, args.a, args.a_row_stride, tile.m0, args.m, 0, args.k, tid)
                       : typename Traits::a_loader(a, args.a, args.a_col_stride, 0, args.k, tile.m0, args.m, tid);
  const typename Traits::b_loader b_ld =
      Traits::kBKMajor ? typename Traits::b_loader(b, args.b, args.b_col_stride, tile.n0, args.n, 0, args.k, tid)
                       : typename Traits::b_loader(b, args.b, args.b_row_stride, 0, args.k, tile.n0, args.n, tid);

  // Prologue: k-tiles 0 .. kStages-2 in flight, one commit group each (empty past the end).
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < num_k_tiles) {
      a_ld.template issue<kGuarded>(Smem::a(smem, s), s * kBK);
      b_ld.template issue<kGuarded>(Smem::b(smem, s), s * kBK);
    }
    mma::cp_async_commit();
  }

  typename Traits::accumulators acc;
#pragma unroll
  for (int mt = 0; mt < Traits::kMTiles; ++mt)
#pragma unroll
    for (int nt = 0; nt < Traits::kNTiles; ++nt)
#pragma unroll
      for (int j = 0; j < 4; ++j) acc[mt][nt][j] = 0.f;

  typename Traits::a_frags fa[2];
  typename Traits::b_frags fb[2];
  int read_stage = 0, write_stage = kStages - 1;

  mma::cp_async_wait<kStages - 2>();  // k-tile 0 has landed
  __syncthreads();
  tc_load_fragments<Traits>(fa[0], fb[0], Smem::a(smem, 0), Smem::b(smem, 0), 0, frag_off);

  // Main loop. Groups committed before the wait in k-tile kt: (kStages - 1) + (kt + 1), so
  // wait<kStages - 2> means k-tile kt + 1 has landed. The barrier there also orders every read of
  // the stage consumed in k-tile kt - 1 before its refill, issued at kk == 0 of k-tile kt.
  for (int kt = 0; kt < num_k_tiles; ++kt) {
#pragma unroll
    for (int kk = 0; kk < kKSteps; ++kk) {
      if (kk == kKSteps - 1) {
        mma::cp_async_wait<kStages - 2>();
        __syncthreads();
        read_stage = read_stage + 1 == kStages ? 0 : read_stage + 1;
      }
      // Fragments of the next k-step (the next k-tile's first one after the barrier).
      tc_load_fragments<Traits>(fa[(kk + 1) % 2], fb[(kk + 1) % 2], Smem::a(smem, read_stage),
                                Smem::b(smem, read_stage), (kk + 1) % kKSteps, frag_off);
      if (kk == 0) {
        const int next = kt + kStages - 1;
        if (next < num_k_tiles) {
          a_ld.template issue<kGuarded>(Smem::a(smem, write_stage), next * kBK);
          b_ld.template issue<kGuarded>(Smem::b(smem, write_stage), next * kBK);
        }
        mma::cp_async_commit();
        write_stage = write_stage + 1 == kStages ? 0 : write_stage + 1;
      }
      tc_mma_step<Traits>(acc, fa[kk % 2], fb[kk % 2]);
    }
  }
  mma::cp_async_wait<0>();

  // Epilogue: accumulator pairs (c0, c1) and (c2, c3) are 2 adjacent columns of rows g and g + 8.
  T* out = args.out + z * args.out_batch_stride;
  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int mt = 0; mt < Traits::kMTiles; ++mt) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int row = tile.m0 + warp_m * Traits::kWarpTileM + mt * 16 + half * 8 + g;
      if (row >= args.m) continue;
      T* out_row = out + row * args.out_row_stride;
#pragma unroll
      for (int nt = 0; nt < Traits::kNTiles; ++nt) {
        const int col = tile.n0 + warp_n * Traits::kWarpTileN + nt * 8 + 2 * t;
        const float x = acc[mt][nt][2 * half], y = acc[mt][nt][2 * half + 1];
        if (args.out_vec && col + 1 < args.n) {
          store2<T>(out_row + col, x, y);
        } else {
          if (col < args.n) out_row[col * args.out_col_stride] = from_float<T>(x);
          if (col + 1 < args.n) out_row[(col + 1) * args.out_col_stride] = from_float<T>(y);
        }
      }
    }
  }
}

template <class Traits>
__global__ void __launch_bounds__(Traits::kThreads, 1)
    matmul_tc_kernel(const GemmArgs<typename Traits::elem_t> args) {
  extern __shared__ __align__(128) unsigned char matmul_smem[];
  const uint32_t smem = mma::smem_u32(matmul_smem);
  const int tid = threadIdx.x;
  const int warp = tid / 32;
  const TcFragmentOffsets<Traits> frag_off(warp / Traits::kWarpsN, warp % Traits::kWarpsN, tid % 32);
  const TileOrigin tile = grouped_tile_origin<Traits::kBM, Traits::kBN>(blockIdx.x, args.tiles_m, args.tiles_n);
  const bool interior =
      tile.m0 + Traits::kBM <= args.m && tile.n0 + Traits::kBN <= args.n && args.k % Traits::kBK == 0;
  if (interior)
    tc_block_tile<Traits, false>(args, tile, smem, tid, frag_off);
  else
    tc_block_tile<Traits, true>(args, tile, smem, tid, frag_off);
}

}  // namespace matmul_detail
}  // namespace aiter_lite

#endif  // AITER_LITE_CUDA
