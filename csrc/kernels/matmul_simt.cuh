// Register-blocked SIMT matmul (FFMA, fp32 accumulation): the strict-fp32 kernel, the kTiled
// variant for every dtype, and the fallback for layouts the tensor-core kernels can't take.
//
// Block tile kBM x kBN, K in steps of kBK through two shared-memory stages. Each 32-thread group
// ("warp"; on HIP half a wavefront, which only changes speed) owns a kWarpTileM x kWarpTileN warp
// tile as a 4 (M) x 8 (N) grid of threads; each thread owns kThreadTileM x kThreadTileN outputs in
// 4x4 sub-tiles spaced 16 rows / 32 columns apart, so its A and B fragments are 16-byte shared-memory
// loads that a warp serves from 4 (A) and 8 (B) distinct vectors.
//
// Global -> shared: every thread loads its share of the next tile into registers before computing
// the current one, then stores it (converted to fp32) into the other stage: one barrier per tile.
// Shared tiles are K-major rows ([kBK][kBM + pad] for A, [kBK][kBN + pad] for B) whatever the
// global layout: operands contiguous along K are transposed on the way in.
#pragma once

#include "matmul_common.cuh"
#include "matmul_configs.h"

namespace aiter_lite {
namespace matmul_detail {

// Moves one operand's kMN x kBK tiles (mn = M for A, N for B) from global memory through registers
// into a shared [kBK][kPitch] fp32 tile. Each thread owns kPacks packs of 4 elements, consecutive
// along K or along mn (the mode's direction, one per operand and launch); the mode also says
// whether a pack may be one vector load (the host checked that the pack's stride is 1 and that the
// pointer and the other strides are 4-element aligned). Packs along K are transposed into the
// shared tile with 4 scalar stores; packs along mn are one 16-byte store. Everything that depends
// on the direction is resolved once, in the constructor, so the k-loop only bumps a pointer.
template <typename T, int kMN, int kBK, int kThreads>
struct SimtTileLoader {
  static constexpr int kPitch = kMN + kMatmulSimtSmemPad;
  static constexpr int kPacks = kMN * kBK / (4 * kThreads);  // per thread
  static constexpr int kKVecs = kBK / 4;    // packs per mn-row, along K
  static constexpr int kMNVecs = kMN / 4;   // packs per k-row, along mn
  static constexpr int kPackRowsK = kThreads / kKVecs;    // mn-rows between a thread's packs (along K)
  static constexpr int kPackRowsMN = kThreads / kMNVecs;  // k-rows between a thread's packs (along mn)
  static_assert(kMN % 4 == 0 && kBK % 4 == 0, "tile sides must be multiples of the pack width");
  static_assert((kMN * kBK) % (4 * kThreads) == 0, "each thread moves whole packs");
  static_assert(kThreads % kKVecs == 0 && kThreads % kMNVecs == 0, "a thread's packs share a column");
  static_assert(kPitch % 4 == 0, "shared rows must stay 16-byte aligned");

  using pack = Pack4<T>;
  typename pack::type regs[kPacks];
  const T* src;          // first element of pack 0 in the next k-tile to load
  int64_t pack_stride;   // elements between a thread's consecutive packs
  int64_t elem_stride;   // elements between the 4 elements of a pack
  int64_t tile_stride;   // elements between k-tiles
  uint32_t smem_off;     // float offset of pack 0 in a shared tile
  int left;              // elements of pack 0 along its direction still inside the operand
  int rows;              // > 0 while pack 0's row (an mn-row along K, a k-row along mn) is inside
  bool k_dir, vec;

  __device__ __forceinline__ SimtTileLoader(const T* ptr, int64_t mn_stride, int64_t k_stride, int mn0, int mn_size,
                                            int k_size, SimtLoad mode, int tid) {
    k_dir = mode == SimtLoad::kVecK || mode == SimtLoad::kScalarK;
    vec = mode == SimtLoad::kVecK || mode == SimtLoad::kVecMN;
    int mn, k;
    if (k_dir) {
      mn = tid / kKVecs;
      k = (tid % kKVecs) * 4;
      pack_stride = kPackRowsK * mn_stride;
      elem_stride = k_stride;
      left = k_size - k;
      rows = mn_size - mn0 - mn;
    } else {
      k = tid / kMNVecs;
      mn = (tid % kMNVecs) * 4;
      pack_stride = kPackRowsMN * k_stride;
      elem_stride = mn_stride;
      left = mn_size - mn0 - mn;
      rows = k_size - k;
    }
    src = ptr + (mn0 + mn) * mn_stride + k * k_stride;
    tile_stride = kBK * k_stride;
    smem_off = static_cast<uint32_t>(k * kPitch + mn);
  }

  // Loads the next k-tile into registers (zeros outside the operand) and advances.
  __device__ __forceinline__ void load() {
#pragma unroll
    for (int p = 0; p < kPacks; ++p) {
      const T* p_src = src + p * pack_stride;
      const bool inside = rows - p * (k_dir ? kPackRowsK : kPackRowsMN) > 0;
      if (vec && inside && left >= 4) {
        regs[p] = pack::load(p_src);
      } else {
        regs[p] = pack::zero();
#pragma unroll
        for (int j = 0; j < 4; ++j)
          if (inside && j < left) pack::set(regs[p], j, p_src[j * elem_stride]);
      }
    }
    src += tile_stride;
    if (k_dir) left -= kBK;
    else rows -= kBK;
  }

  // Stores the loaded tile (as fp32) into a shared [kBK][kPitch] tile.
  __device__ __forceinline__ void store(float* tile) const {
#pragma unroll
    for (int p = 0; p < kPacks; ++p) {
      if (k_dir) {
        float* dst = tile + smem_off + p * kPackRowsK;
#pragma unroll
        for (int j = 0; j < 4; ++j) dst[j * kPitch] = pack::get(regs[p], j);
      } else {
        float* dst = tile + smem_off + p * kPackRowsMN * kPitch;
        *reinterpret_cast<float4*>(dst) =
            make_float4(pack::get(regs[p], 0), pack::get(regs[p], 1), pack::get(regs[p], 2), pack::get(regs[p], 3));
      }
    }
  }
};

template <typename T, int kConfig>
struct SimtMatmulTraits {
  using elem_t = T;
  static constexpr MatmulTileConfig kCfg = kMatmulConfigs[kConfig];
  static_assert(kCfg.path == MatmulPath::kSimt, "not a SIMT config");
  static constexpr int kBM = kCfg.bm, kBN = kCfg.bn, kBK = kCfg.bk;
  static constexpr int kWarpsM = kCfg.warps_m, kWarpsN = kCfg.warps_n;
  static constexpr int kThreads = matmul_config_threads(kCfg);
  static constexpr int kWarpTileM = kBM / kWarpsM, kWarpTileN = kBN / kWarpsN;
  static constexpr int kLanesM = 4, kLanesN = 8;  // thread grid of a warp
  static constexpr int kThreadTileM = kWarpTileM / kLanesM, kThreadTileN = kWarpTileN / kLanesN;
  static constexpr int kSubM = kThreadTileM / 4, kSubN = kThreadTileN / 4;  // 4x4 sub-tiles per thread
  static constexpr int kSubStrideM = kLanesM * 4, kSubStrideN = kLanesN * 4;
  // Blocks per SM to plan registers for: 8x8 thread tiles fit in 128 registers.
  static constexpr int kMinBlocks =
      kThreadTileM * kThreadTileN <= 64 ? (65536 / 128) / kThreads : 1;

  using a_loader = SimtTileLoader<T, kBM, kBK, kThreads>;
  using b_loader = SimtTileLoader<T, kBN, kBK, kThreads>;

  // Dynamic shared memory: two stages of the A and B tiles, K-major rows, fp32.
  struct SmemLayout {
    float a[2][kBK][a_loader::kPitch];
    float b[2][kBK][b_loader::kPitch];
  };
  static constexpr int kSmemBytes = static_cast<int>(sizeof(SmemLayout));

  static_assert(kCfg.stages == 2, "the SIMT kernel double-buffers shared memory");
  static_assert(kBM % kWarpsM == 0 && kBN % kWarpsN == 0, "warp grid must divide the block tile");
  static_assert(kWarpTileM % (4 * kLanesM) == 0 && kWarpTileN % (4 * kLanesN) == 0,
                "thread tiles are made of 4x4 sub-tiles");
  static_assert(kThreadTileM * kThreadTileN <= 128, "accumulators would not fit in registers");
  static_assert(kSmemBytes == matmul_config_smem_bytes(kCfg, sizeof(T)), "smem size disagrees with the table");
};

template <class Traits>
__global__ void __launch_bounds__(Traits::kThreads, Traits::kMinBlocks)
    matmul_simt_kernel(const GemmArgs<typename Traits::elem_t> args) {
  using T = typename Traits::elem_t;
  using SmemLayout = typename Traits::SmemLayout;
  constexpr int kBK = Traits::kBK;
  constexpr int kTM = Traits::kThreadTileM, kTN = Traits::kThreadTileN;

  extern __shared__ __align__(128) unsigned char matmul_smem[];
  SmemLayout& smem = *reinterpret_cast<SmemLayout*>(matmul_smem);

  const int tid = threadIdx.x;
  const int warp = tid / 32, lane = tid % 32;
  const int warp_m = warp / Traits::kWarpsN, warp_n = warp % Traits::kWarpsN;
  const int lane_m = lane / Traits::kLanesN, lane_n = lane % Traits::kLanesN;
  // First row / column of the thread's first sub-tile, inside the block tile.
  const int row_in_tile = warp_m * Traits::kWarpTileM + lane_m * 4;
  const int col_in_tile = warp_n * Traits::kWarpTileN + lane_n * 4;

  const TileOrigin tile =
      grouped_tile_origin<Traits::kBM, Traits::kBN>(blockIdx.x, args.tiles_m, args.tiles_n);
  const int num_k_tiles = (args.k + kBK - 1) / kBK;

  {
    const int64_t z = blockIdx.z;  // the host launches batches above 65535 in slices
    const T* __restrict__ a = args.a + z * args.a_batch_stride;
    const T* __restrict__ b = args.b + z * args.b_batch_stride;

    // A tile: mn = m (row stride), k = column stride. B tile: mn = n (column stride), k = row stride.
    typename Traits::a_loader a_ld(a, args.a_row_stride, args.a_col_stride, tile.m0, args.m, args.k, args.a_load, tid);
    typename Traits::b_loader b_ld(b, args.b_col_stride, args.b_row_stride, tile.n0, args.n, args.k, args.b_load, tid);
    a_ld.load();
    b_ld.load();
    a_ld.store(&smem.a[0][0][0]);
    b_ld.store(&smem.b[0][0][0]);
    __syncthreads();

    float acc[kTM][kTN];
#pragma unroll
    for (int i = 0; i < kTM; ++i)
#pragma unroll
      for (int j = 0; j < kTN; ++j) acc[i][j] = 0.f;

    for (int kt = 0; kt < num_k_tiles; ++kt) {
      const int cur = kt & 1;
      const bool has_next = kt + 1 < num_k_tiles;
      if (has_next) {  // global loads in flight while this tile is computed
        a_ld.load();
        b_ld.load();
      }
#pragma unroll
      for (int kk = 0; kk < kBK; ++kk) {
        float a_frag[kTM], b_frag[kTN];
#pragma unroll
        for (int s = 0; s < Traits::kSubM; ++s) {
          const float4 v = *reinterpret_cast<const float4*>(&smem.a[cur][kk][row_in_tile + s * Traits::kSubStrideM]);
          a_frag[4 * s + 0] = v.x; a_frag[4 * s + 1] = v.y; a_frag[4 * s + 2] = v.z; a_frag[4 * s + 3] = v.w;
        }
#pragma unroll
        for (int s = 0; s < Traits::kSubN; ++s) {
          const float4 v = *reinterpret_cast<const float4*>(&smem.b[cur][kk][col_in_tile + s * Traits::kSubStrideN]);
          b_frag[4 * s + 0] = v.x; b_frag[4 * s + 1] = v.y; b_frag[4 * s + 2] = v.z; b_frag[4 * s + 3] = v.w;
        }
#pragma unroll
        for (int i = 0; i < kTM; ++i)
#pragma unroll
          for (int j = 0; j < kTN; ++j) acc[i][j] = fmaf(a_frag[i], b_frag[j], acc[i][j]);
      }
      if (has_next) {
        a_ld.store(&smem.a[cur ^ 1][0][0]);
        b_ld.store(&smem.b[cur ^ 1][0][0]);
      }
      __syncthreads();
    }

    // Epilogue: the fused epilogue in place (one rolled loop over a stack copy: its code once in the
    // kernel, not once per accumulator), then 4 consecutive columns per store where out rows are
    // contiguous, else scalars. acc[i][4 s + j] is out[row of i (below)][col of s (below) + j].
    if (args.epi_active) {
      float v[kTM * kTN];
#pragma unroll
      for (int e = 0; e < kTM * kTN; ++e) v[e] = acc[e / kTN][e % kTN];
#pragma unroll 1
      for (int e = 0; e < kTM * kTN; ++e) {
        const int i = e / kTN, s = e % kTN / 4, j = e % 4;
        const int row = tile.m0 + row_in_tile + (i / 4) * Traits::kSubStrideM + i % 4;
        const int col = tile.n0 + col_in_tile + s * Traits::kSubStrideN + j;
        if (row < args.m && col < args.n) v[e] = apply_epilogue<T>(args.epi, v[e], z, row, col);
      }
#pragma unroll
      for (int e = 0; e < kTM * kTN; ++e) acc[e / kTN][e % kTN] = v[e];
    }
    with_out_type(args.out, args.epi.out_fp32, [&](auto* out_base) {
      using O = std::remove_pointer_t<decltype(out_base)>;
      O* __restrict__ out = out_base + z * args.out_batch_stride;
#pragma unroll
      for (int i = 0; i < kTM; ++i) {
        const int row = tile.m0 + row_in_tile + (i / 4) * Traits::kSubStrideM + i % 4;
        if (row >= args.m) continue;
        O* out_row = out + row * args.out_row_stride;
#pragma unroll
        for (int s = 0; s < Traits::kSubN; ++s) {
          const int col = tile.n0 + col_in_tile + s * Traits::kSubStrideN;
          const float* v = &acc[i][4 * s];
          if (args.out_vec && col + 3 < args.n) {
            store4<O>(out_row + col, v[0], v[1], v[2], v[3]);
          } else {
#pragma unroll
            for (int j = 0; j < 4; ++j)
              if (col + j < args.n) out_row[(col + j) * args.out_col_stride] = from_float<O>(v[j]);
          }
        }
      }
    });
  }
}

}  // namespace matmul_detail
}  // namespace aiter_lite
