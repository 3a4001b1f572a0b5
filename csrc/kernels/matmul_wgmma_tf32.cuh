// Hopper (sm_90a) matmul for fp32 inputs with TF32 allowed: TMA + mbarrier pipeline, a producer
// warpgroup and one or two consumer warpgroups, wgmma m64nNk8 tf32 with fp32 accumulators, persistent
// grouped grid. The ring, the tile order and the tensor maps are those of the fp16/bf16 kernel
// (matmul_wgmma.cuh, whose helpers this file reuses); what differs is the orientation.
//
// Why transposed: a tf32 wgmma reads shared-memory operands K-major only (there is no transpose bit
// for 32-bit types). A row-major A [M, K] is K-major, but a row-major B [K, N] is N-major. So the
// kernel computes out^T = B^T A^T: wgmma's "A" (64 rows x k8, allowed to come from registers, so any
// shared layout works) is a 64-row slice of B^T, i.e. 64 columns n of the tile, and wgmma's "B"
// (k8 x N') is A^T, i.e. the A tile exactly as TMA loads it (rows m, 128-byte swizzled K-major), with
// N' = BM. Each consumer warpgroup owns 64 columns n of the BM x BN output tile (BN = 64 x
// consumers) and holds out^T[64 n][BM m] in fp32 registers (BM / 2 per thread).
//
//   producer (warpgroup 0, 40 registers): one thread issues, per k-tile (BK = 32 fp32 = 128 bytes),
//       the A box {32 k, BM m} and the B boxes (N-major: BN / 32 boxes {32 n, 32 k}; K-major: one box
//       {32 k, BN n}) into the next stage of the ring, completing on the stage's "full" mbarrier.
//       Out-of-bounds elements (M, N, K tails) are zero-filled.
//   consumers (232 registers): per stage, wait on "full"; with an N-major B, load this consumer's
//       b^T fragments of the 4 k8 steps from the stage into registers (8 ld.shared.v2 per thread,
//       cvt.rna to tf32), issue 4 wgmma m64nBMk8 (A from registers, B = the A tile's descriptor),
//       commit, wait until the previous stage's group is done and release that stage. With a
//       K-major B (b = w.t()), the B tile is K-major too and both operands come from descriptors
//       (no register loads). Fragment registers are double-buffered by k-tile parity: a wgmma reads
//       its A registers asynchronously, so a buffer is rewritten only after wgmma_wait has retired
//       the group that read it (warpgroup_fence_regs keeps the compiler from reusing it earlier).
//
// Fragment loads (N-major B). Shared B stage: BN / 32 blocks of [32 k rows][32 n], 128-byte rows,
// the 16-byte chunk c of row k stored at chunk c ^ (k % 8) (TMA's 128-byte swizzle). The tf32 A
// fragment gives lane (g = l / 4, t = l % 4) of warp w rows 16w + g and 16w + g + 8 at k = t and
// t + 4 of each k8 step. Which n a fragment row holds is ours to choose (the epilogue follows it), so:
//   - rows 16w + g and 16w + g + 8 are the adjacent columns n, n + 1: one 8-byte load per k gives both;
//   - warp w reads column block 2 * consumer + w / 2 and, in it, the chunks {a, a + 4} for lanes
//     g < 4 and {a + 1, a + 5} for g >= 4 (a = 2 * (w % 2)): g % 4 = 2q + p picks chunk a(+1) + 4q
//     and the pair p of it. In one load, a half-warp (one 8-byte phase) covers t = 0..3 and q = 0, 1:
//     physical chunks (a ^ t) + 4 (q ^ s) (s: k = t or t + 4), all 8 distinct, 2 words each: all 32
//     banks, no conflict.
// The rounding of both operands to tf32 (round to nearest) is done by the copy engine: the tensor maps
// have type TFLOAT32 (cuTensorMapEncodeTiled), falling back to FLOAT32 (the tensor core then truncates
// the A operand) if the driver refuses it. The register fragments are rounded again with cvt.rna
// (a no-op on rounded values), so they do not depend on the copy engine's rounding.
//
// Epilogue: straight from registers. Thread (w, g, t) holds out[m][n] for its two columns n (n, n+1
// in the N-major case; n, n+8 in the K-major case) and m = 8j + 2t + {0, 1}, j < BM / 8. N-major: one
// 8-byte store per (m, j): a warp's store covers 4 rows x two 32-byte runs, whole 32-byte sectors, so
// DRAM and L2 see the same traffic as 128-byte rows while the store needs no shared-memory round trip.
// K-major: 4-byte stores, a warp writes 4 rows x one 32-byte run per store. Edge tiles (and outputs
// that are not row-contiguous and 8-byte aligned) store element by element, clipped.
#pragma once

#include "matmul_wgmma.cuh"

#if defined(AITER_LITE_CUDA)

namespace aiter_lite {
namespace matmul_detail {

template <int kConfig, bool kBKMajor_>
struct WgmmaTf32Traits {
  using elem_t = float;
  static constexpr MatmulTileConfig kCfg = kMatmulConfigs[kConfig];
  static_assert(kCfg.path == MatmulPath::kWgmmaTf32, "config is for another path");

  static constexpr bool kBKMajor = kBKMajor_;  // B contiguous along K (else along N)
  static constexpr int kBM = kCfg.bm, kBN = kCfg.bn, kBK = kCfg.bk, kStages = kCfg.stages;
  // The helpers shared with the fp16/bf16 kernel (wgmma_tile, wgmma_release, wgmma_max_ctas) read these.
  static constexpr int kCluster = 1, kClusterN = 1, kSplitK = 1, kMulticastSize = 1, kClusterSize = 1;
  static constexpr int kStageWriters = 1;
  static constexpr int kGroupM = 8;                        // unit-rows per raster group
  static constexpr int kConsumers = kCfg.warps_m / 4;      // consumer warpgroups, 64 columns each
  static constexpr int kThreads = matmul_config_threads(kCfg);
  static constexpr int kKSteps = kBK / 8;                  // wgmma k8 steps per k-tile
  static constexpr int kAccRegs = kBM / 2;                 // out^T[64 n][kBM m] / 128 threads
  static constexpr int kProducerRegs = 40, kConsumerRegs = 232;

  static constexpr int kRowBytes = kBK * 4;                // 128: one swizzle row
  static constexpr int kAStageBytes = kBM * kRowBytes;
  static constexpr int kBStageBytes = kBN * kRowBytes;
  static constexpr int kBBlockBytes = kBK * 128;           // N-major: one block of [kBK k][32 n]
  static constexpr int kStageTxBytes = kAStageBytes + kBStageBytes;
  static constexpr int kAOffset = 0;
  static constexpr int kBOffset = kStages * kAStageBytes;
  static constexpr int kBarOffset = kBOffset + kStages * kBStageBytes;
  static constexpr int kSmemBytes = static_cast<int>(matmul_config_smem_bytes(kCfg, 4));

  static_assert(kCfg.warps_n == 1 && kCfg.warps_m % 4 == 0 && (kConsumers == 1 || kConsumers == 2),
                "one or two consumer warpgroups side by side along N");
  static_assert(kBN == 64 * kConsumers, "a consumer owns 64 columns");
  static_assert(kBK == 32, "BK is one 128-byte swizzle row of fp32");
  static_assert(kBM == 64 || kBM == 128 || kBM == 192 || kBM == 256, "wgmma N (= BM) of 64, 128, 192 or 256");
  static_assert(kCfg.cluster_m == 1 && kCfg.cluster_n == 1 && kCfg.split_k == 1 && kCfg.epilogue_overlap == 0, "no clusters here");
  static_assert(kStages >= 2 && 2 * kStages * 8 <= 1024, "mbarriers fit their 1024 bytes");
  static_assert(kAStageBytes % 1024 == 0 && kBStageBytes % 1024 == 0, "stages start on swizzle atoms");
  static_assert(kBarOffset + 1024 + 1024 == kSmemBytes, "layout disagrees with matmul_config_smem_bytes");
};

// ---- producer --------------------------------------------------------------------------------------

template <class Traits>
__device__ __forceinline__ void tf32_producer(const CUtensorMap* tmap_a, const CUtensorMap* tmap_b,
                                              const WgmmaArgs<float>& args, uint32_t smem, int32_t first_unit,
                                              int32_t unit_step) {
  constexpr int kStages = Traits::kStages, kBK = Traits::kBK;
  const uint32_t full0 = smem + Traits::kBarOffset, empty0 = full0 + 8 * kStages;
  int stage = 0;
  uint32_t phase = 0;
  for (int32_t unit = first_unit; unit < args.total_units; unit += unit_step) {
    const WgmmaTile tile = wgmma_tile<Traits>(unit, args, 0);
    const int32_t za = tile.z * args.a_batched, zb = tile.z * args.b_batched;
    for (int32_t kt = 0; kt < args.k_tiles; ++kt) {
      const uint32_t full = full0 + 8 * stage;
      sm90::mbar_wait(empty0 + 8 * stage, phase ^ 1);  // the first pass finds every stage empty
      sm90::mbar_arrive_expect_tx(full, Traits::kStageTxBytes);
      const int32_t k0 = kt * kBK;
      const uint32_t a_dst = smem + Traits::kAOffset + stage * Traits::kAStageBytes;
      const uint32_t b_dst = smem + Traits::kBOffset + stage * Traits::kBStageBytes;
      sm90::tma_load_3d(a_dst, tmap_a, k0, tile.m0, za, full);
      if constexpr (Traits::kBKMajor) {
        sm90::tma_load_3d(b_dst, tmap_b, k0, tile.n0, zb, full);  // [kBN rows n][32 k]
      } else {
#pragma unroll
        for (int blk = 0; blk < Traits::kBN / 32; ++blk)  // [32 k rows][32 n] each
          sm90::tma_load_3d(b_dst + blk * Traits::kBBlockBytes, tmap_b, tile.n0 + 32 * blk, k0, zb, full);
      }
      if (++stage == kStages) {
        stage = 0;
        phase ^= 1;
      }
    }
  }
}

// ---- consumers -------------------------------------------------------------------------------------

// What a consumer thread needs to know about its place in the tile (see the top of this file).
struct Tf32Lane {
  uint32_t frag_off0, frag_off1;  // N-major B: byte offsets in a B stage of the loads at k = t, t + 4
  int32_t col0, col1;             // tile columns of accumulator rows 16w + g and 16w + g + 8
  int32_t row;                    // 2t: tile row of the first accumulator (8j + row + e after that)
};

template <class Traits>
__device__ __forceinline__ Tf32Lane tf32_lane(int consumer, int warp, int lane) {
  const int g = lane / 4, t = lane % 4;
  Tf32Lane l{};
  l.row = 2 * t;
  if constexpr (Traits::kBKMajor) {
    // The B tile's rows are the n of the tile in order; a consumer's wgmma reads its 64 of them.
    l.col0 = consumer * 64 + warp * 16 + g;
    l.col1 = l.col0 + 8;
  } else {
    const int q = (g % 4) / 2, p = g % 2;             // chunk a + 4q of the block, pair p of that chunk
    const int a = 2 * (warp % 2) + g / 4;             // chunk of the block for q = 0
    const int block = 2 * consumer + warp / 2;        // 32-column block of the tile
    const uint32_t base = block * Traits::kBBlockBytes + t * 128 + ((a ^ t) << 4) + 8 * p;
    l.frag_off0 = base + 64 * q;                       // k = t:     chunk (a + 4q) ^ t
    l.frag_off1 = base + 4 * 128 + 64 * (q ^ 1);       // k = t + 4: chunk (a + 4q) ^ (t + 4)
    l.col0 = block * 32 + 4 * (a + 4 * q) + 2 * p;
    l.col1 = l.col0 + 1;
  }
  return l;
}

__device__ __forceinline__ uint2 lds_64(uint32_t addr) {
  uint2 v;
  asm volatile("ld.shared.v2.b32 {%0, %1}, [%2];" : "=r"(v.x), "=r"(v.y) : "r"(addr) : "memory");
  return v;
}

__device__ __forceinline__ uint32_t to_tf32_rna(uint32_t bits) {
  uint32_t out;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(out) : "f"(__uint_as_float(bits)));
  return out;
}

template <class Traits>
using Tf32Frags = uint32_t[Traits::kKSteps][4];

template <class Traits>
__device__ __forceinline__ void tf32_fence_frags(Tf32Frags<Traits>& f) {
#pragma unroll
  for (int kk = 0; kk < Traits::kKSteps; ++kk) wgmma::warpgroup_fence_regs(f[kk]);
}

// One k-tile of the current tile: wait for its stage, (N-major B) load its fragments into `cur`,
// issue its wgmma group, then retire the previous k-tile's group (one stays in flight), which frees
// `prev` (the fragments it read) and lets its stage be refilled.
template <class Traits>
__device__ __forceinline__ void tf32_k_tile(float (&acc)[Traits::kAccRegs], Tf32Frags<Traits>& cur,
                                            Tf32Frags<Traits>& prev, uint32_t smem, int consumer, int lane,
                                            const Tf32Lane& ln, int32_t kt, int& stage, uint32_t& phase,
                                            int& prev_stage) {
  constexpr int kStages = Traits::kStages;
  constexpr uint64_t kDescK = wgmma::desc_base_k_major();
  const uint32_t full0 = smem + Traits::kBarOffset, empty0 = full0 + 8 * kStages;
  sm90::mbar_wait(full0 + 8 * stage, phase);
  const uint32_t a_stage = smem + Traits::kAOffset + stage * Traits::kAStageBytes;
  const uint32_t b_stage = smem + Traits::kBOffset + stage * Traits::kBStageBytes;
  if constexpr (!Traits::kBKMajor) {
#pragma unroll
    for (int kk = 0; kk < Traits::kKSteps; ++kk) {
      const uint2 lo = lds_64(b_stage + ln.frag_off0 + kk * 1024);  // k = 8kk + t:     columns col0, col1
      const uint2 hi = lds_64(b_stage + ln.frag_off1 + kk * 1024);  // k = 8kk + t + 4
      cur[kk][0] = to_tf32_rna(lo.x);
      cur[kk][1] = to_tf32_rna(lo.y);
      cur[kk][2] = to_tf32_rna(hi.x);
      cur[kk][3] = to_tf32_rna(hi.y);
    }
  }
  wgmma::warpgroup_fence_operands(acc);
  wgmma::wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < Traits::kKSteps; ++kk) {
    // wgmma's B: the A tile [BM rows m][32 k], K-major; k8 step kk is 32 bytes into each row.
    const uint64_t desc_b = wgmma::make_desc(kDescK, a_stage + kk * 32);
    const uint32_t scale_d = (kt > 0 || kk > 0) ? 1u : 0u;  // the tile's first step overwrites acc
    if constexpr (Traits::kBKMajor) {
      const uint64_t desc_a = wgmma::make_desc(kDescK, b_stage + consumer * 64 * Traits::kRowBytes + kk * 32);
      wgmma::mma_async_tf32<Traits::kBM>(acc, desc_a, desc_b, scale_d);
    } else {
      wgmma::mma_async_tf32<Traits::kBM>(acc, cur[kk], desc_b, scale_d);
    }
  }
  wgmma::wgmma_commit();
  wgmma::warpgroup_fence_operands(acc);
  if (kt > 0) {
    wgmma::wgmma_wait<1>();
    if constexpr (!Traits::kBKMajor) tf32_fence_frags<Traits>(prev);  // `prev` stays intact until here
    wgmma_release<Traits>(empty0 + 8 * prev_stage, lane);
  }
  prev_stage = stage;
  if (++stage == kStages) {
    stage = 0;
    phase ^= 1;
  }
}

// out[m][col] for this thread's accumulators (see the top of this file); kClip: edge tile or an
// output without 8-byte row access (element stores, bounds-checked).
template <class Traits, bool kClip>
__device__ __forceinline__ void tf32_store(const float (&acc)[Traits::kAccRegs], const WgmmaArgs<float>& args,
                                           const WgmmaTile& tile, const Tf32Lane& ln) {
  float* out = args.out + tile.z * args.out_batch_stride;
  const int32_t n0 = tile.n0 + ln.col0, n1 = tile.n0 + ln.col1;
  const int32_t m_first = tile.m0 + ln.row;
#pragma unroll
  for (int j = 0; j < Traits::kBM / 8; ++j) {
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const int32_t m = m_first + 8 * j + e;
      const float v0 = acc[4 * j + e], v1 = acc[4 * j + 2 + e];
      if constexpr (!kClip) {
        float* row = out + m * args.out_row_stride;
        if constexpr (!Traits::kBKMajor) {
          *reinterpret_cast<float2*>(row + n0) = make_float2(v0, v1);  // n1 == n0 + 1, n0 even
        } else {
          row[n0] = v0;
          row[n1] = v1;
        }
      } else if (m < args.m) {
        float* row = out + m * args.out_row_stride;
        if (n0 < args.n) row[n0 * args.out_col_stride] = v0;
        if (n1 < args.n) row[n1 * args.out_col_stride] = v1;
      }
    }
  }
}

template <class Traits>
__device__ __forceinline__ void tf32_consumer(const WgmmaArgs<float>& args, uint32_t smem, int32_t first_unit,
                                              int32_t unit_step, int consumer) {
  const int warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
  const Tf32Lane ln = tf32_lane<Traits>(consumer, warp, lane);
  float acc[Traits::kAccRegs];
#pragma unroll
  for (int i = 0; i < Traits::kAccRegs; ++i) acc[i] = 0.f;
  // Two fragment buffers (k-tile parity); zeroed so that the fences never read undefined registers.
  uint32_t frag_even[Traits::kKSteps][4] = {}, frag_odd[Traits::kKSteps][4] = {};

  int stage = 0, prev_stage = 0;
  uint32_t phase = 0;
  const int32_t k_tiles = args.k_tiles;
  for (int32_t unit = first_unit; unit < args.total_units; unit += unit_step) {
    const WgmmaTile tile = wgmma_tile<Traits>(unit, args, 0);
    for (int32_t kt = 0; kt < k_tiles; kt += 2) {  // unrolled by two: the buffers stay compile-time
      tf32_k_tile<Traits>(acc, frag_even, frag_odd, smem, consumer, lane, ln, kt, stage, phase, prev_stage);
      if (kt + 1 < k_tiles)
        tf32_k_tile<Traits>(acc, frag_odd, frag_even, smem, consumer, lane, ln, kt + 1, stage, phase, prev_stage);
    }
    wgmma::wgmma_wait<0>();
    wgmma::warpgroup_fence_operands(acc);
    if constexpr (!Traits::kBKMajor) {
      tf32_fence_frags<Traits>(frag_even);
      tf32_fence_frags<Traits>(frag_odd);
    }
    wgmma_release<Traits>(smem + Traits::kBarOffset + 8 * Traits::kStages + 8 * prev_stage, lane);
    // Epilogue; the producer is already filling the ring with the next tile's k-tiles meanwhile.
    const bool interior = tile.m0 + Traits::kBM <= args.m && tile.n0 + Traits::kBN <= args.n;
    if (interior && args.out_vec)
      tf32_store<Traits, false>(acc, args, tile, ln);
    else
      tf32_store<Traits, true>(acc, args, tile, ln);
  }
}

// ---- kernel ----------------------------------------------------------------------------------------

template <class Traits>
__global__ void __launch_bounds__(Traits::kThreads, 1)
    matmul_wgmma_tf32_kernel(const __grid_constant__ CUtensorMap tmap_a, const __grid_constant__ CUtensorMap tmap_b,
                             const WgmmaArgs<float> args) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ __align__(1024) unsigned char matmul_wgmma_tf32_smem[];
  const uint32_t smem = (sm90::smem_u32(matmul_wgmma_tf32_smem) + 1023u) & ~1023u;  // see matmul_wgmma.cuh
  const int warpgroup = threadIdx.x / 128;

  if (threadIdx.x == 0) wgmma_init_ring<Traits>(smem, &tmap_a, &tmap_b);  // kCluster is 1 here
  __syncthreads();

  const int32_t first_unit = static_cast<int32_t>(blockIdx.x);
  const int32_t unit_step = static_cast<int32_t>(gridDim.x);
  if (warpgroup == 0) {
    if constexpr (Traits::kConsumers > 1) sm90::setmaxnreg_dec<Traits::kProducerRegs>();
    if (threadIdx.x == 0) tf32_producer<Traits>(&tmap_a, &tmap_b, args, smem, first_unit, unit_step);
  } else {
    if constexpr (Traits::kConsumers > 1) sm90::setmaxnreg_inc<Traits::kConsumerRegs>();
    tf32_consumer<Traits>(args, smem, first_unit, unit_step, warpgroup - 1);
  }
#endif
}

// ---- host: tensor maps and launch -------------------------------------------------------------------

// The operand's map with the copy engine rounding fp32 to tf32 (TFLOAT32), or plain FLOAT32 where
// the driver does not take that.
inline bool tf32_operand_map(CUtensorMap* map, const void* ptr, int64_t inner, int64_t outer, int64_t batch,
                             int64_t outer_stride, int64_t batch_stride, uint32_t box_inner, uint32_t box_outer) {
  return wgmma_operand_map(map, CU_TENSOR_MAP_DATA_TYPE_TFLOAT32, ptr, inner, outer, batch, outer_stride,
                           batch_stride, box_inner, box_outer, 4) ||
         wgmma_operand_map(map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, ptr, inner, outer, batch, outer_stride,
                           batch_stride, box_inner, box_outer, 4);
}

template <class Traits>
bool wgmma_tf32_launch(const MatmulParams& p, gpuStream_t stream, bool launch) {
  const bool a_batched = p.batch > 1 && p.a_batch_stride != 0;
  const bool b_batched = p.batch > 1 && p.b_batch_stride != 0;
  CUtensorMap map_a, map_b;
  if (!tf32_operand_map(&map_a, p.a, p.k, p.m, a_batched ? p.batch : 1, p.a_row_stride, p.a_batch_stride, 32,
                        Traits::kBM))
    return false;
  const bool b_ok = Traits::kBKMajor
                        ? tf32_operand_map(&map_b, p.b, p.k, p.n, b_batched ? p.batch : 1, p.b_col_stride,
                                           p.b_batch_stride, 32, Traits::kBN)
                        : tf32_operand_map(&map_b, p.b, p.n, p.k, b_batched ? p.batch : 1, p.b_row_stride,
                                           p.b_batch_stride, 32, 32);
  if (!b_ok) return false;

  const int64_t tiles_m = (p.m + Traits::kBM - 1) / Traits::kBM, tiles_n = (p.n + Traits::kBN - 1) / Traits::kBN;
  const int64_t units = tiles_m * tiles_n * p.batch;
  if (units > kMaxDim) return false;
  if (!launch) return true;

  WgmmaArgs<float> args = make_wgmma_args<float>(p, Traits::kBK, tiles_n, tiles_m, units, a_batched, b_batched);
  args.out_vec = out_vec_ok(p, 2, 4);  // 8-byte (two-column) stores

  auto kernel = matmul_wgmma_tf32_kernel<Traits>;
  ensure_dynamic_smem<Traits>(kernel);
  const int64_t ctas = std::min<int64_t>(units, wgmma_max_ctas<Traits>(kernel));  // persistent
  void* kernel_args[] = {&map_a, &map_b, &args};
  AITER_LITE_GPU_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(kernel), dim3(static_cast<unsigned>(ctas)),
                                        dim3(Traits::kThreads), kernel_args, Traits::kSmemBytes, stream));
  AITER_LITE_LAUNCH_CHECK();
  return true;
}

}  // namespace matmul_detail
}  // namespace aiter_lite

#endif  // AITER_LITE_CUDA
