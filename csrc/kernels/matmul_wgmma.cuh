// Hopper (sm_90a) matmul for fp16/bf16: TMA + mbarrier pipeline, warp-specialized warpgroups,
// wgmma with fp32 accumulators, persistent grid, optional 2-CTA clusters with TMA multicast,
// optional split-K over a cluster (partials added through distributed shared memory), optional
// overlap of part of a tile's stores with the next tile's MMAs.
//
// Shape of the kernel (one CTA per SM, looping over output tiles):
//
//   warpgroup 0 (producer, 40 registers): one thread issues the TMA loads of every k-tile of
//       every tile this CTA (cluster) owns into a kStages-deep ring of shared stages. Per stage:
//       wait until the stage is empty, arm its "full" mbarrier with the stage's byte count, issue
//       the copies (they complete their bytes on that barrier). Out-of-bounds boxes (M, N and K
//       tails) are zero-filled by the copy engine, so the consumers never test bounds.
//   warpgroups 1.. (consumers, 232 registers): consumer c owns rows [c * kWgRows, +kWgRows) of
//       the BM x BN tile in fp32 registers (kWgRows / 64 wgmma m64nBNk16 per k16 step, BN = 64,
//       128, 192 or 256). Per stage:
//       wait on "full", issue 4 k16 steps of wgmma, commit, wait until the *previous* stage's
//       wgmma group is done (one group stays in flight) and release that stage ("empty" barrier,
//       one arrival per consumer warp and per CTA of the cluster). After the last k-tile: drain,
//       then the epilogue (below), then the next tile.
//
// Epilogue, per consumer warp and 16 x 64 piece of its accumulators: convert to the output type,
// stmatrix into the warp's own 2 KB shared buffer, read it back as 16-byte row chunks and store
// those (one 16-byte store each where out rows are contiguous and aligned; element by element,
// clipped at the M / N edges, otherwise). The stores of a warp then cover whole 128-byte row
// segments, and the bounds tests are per chunk rather than per accumulator pair, which kept the
// 128 accumulators of a 64 x 256 consumer from spilling.
//
// Overlapped epilogue (epilogue_overlap = d > 0, wgmma_consumer_overlap): the last d pieces of each
// warp's rows are only staged (stmatrix into d 2 KB slots); their read-back and global stores run
// inside the next tile's mainloop, once its first two k-tiles are issued, so that the tensor cores
// are busy while they drain. Nothing extra is held in registers (a first version that held the
// converted outputs in registers spilled at 64 x 256 per consumer).
//
// Shared memory (dynamic, aligned up to 1024 bytes: the 128-byte swizzle's atom):
//   A stages  kStages x [kBM rows][64 k]           K-major, 128-byte rows, TMA box {64, kBM}
//                        M-major: kBM / 64 blocks of [64 k rows][64 m], box {64, 64} each
//   B stages  kStages x  K-major: [kBN rows][64 k]  box {64, kBN / kCluster}
//                        N-major: kBN / 64 column blocks of [64 k rows][64 n], box {64, 64} each
//   epilogue  one [16 rows][64 columns] 16-bit slot per consumer warp (d with epilogue_overlap =
//             d > 1), 16-byte chunks of row r XOR-swizzled by r % 8 (stmatrix writes 8 rows of one
//             chunk column, the read-back 8 chunks of one row: both conflict-free)
//   partial   split-K configs only: BM x BN fp32, in accumulator-fragment order (float4 f of
//             consumer thread t at (f * 128 + t) * 16 bytes: every access a full 512-byte warp row)
//   mbarriers full[kStages], empty[kStages]
// Operand layouts: A K-contiguous (row-major [M, K]) or, with an N-contiguous B and a config without
// clusters, M-contiguous (a.t(): the A^T of a backward's dB = A^T dC), loaded as kBM / 64 blocks of
// [64 k rows][64 m] like an N-major B; B either N-contiguous (row-major [K, N]) or K-contiguous
// (b = w.t() for a [N, K] weight). wgmma's transpose bits read the MN-major tiles. Other layouts, and
// strides TMA cannot describe, run the mma.sync kernel (matmul.cu decides; matmul_launch.h lists
// which (config, A, B) combinations have a kernel: wgmma_has_kernel).
//
// Clusters (kCluster = 2): the two CTAs of a cluster take vertically adjacent tiles (same n0), so
// they need the same B tile. Each loads half of it and multicasts the half to both, and each
// stage's "empty" barrier collects the consumer warps of both CTAs before either producer refills
// it (the peer's multicast writes into this CTA's stage too). Both CTAs walk the same tile list;
// one whose tile lies below M still loads and releases (its rows are zero-filled, its stores
// clipped), so that its partner's pipeline keeps moving. kClusterN = 2 does the same along N for
// the A tile (each CTA loads half of its rows); both together make 2 x 2 clusters (rank = rank_m +
// 2 rank_n) in which a stage is written by three CTAs (this one, rank ^ 1, rank ^ 2), so its
// "empty" barrier counts the consumer warps of those three (kStageWriters). The planner runs them
// where B's lines start at odd multiples of 16 bytes (wgmma_b_rows_off_sector in matmul.cu).
//
// Split-K (kSplitK = 2 or 4; csrc/include/matmul_configs.h): a cluster of kSplitK CTAs takes one
// output tile; CTA r runs k-tiles [r * k_tiles / kSplitK, (r + 1) * k_tiles / kSplitK) through its
// own ring (no multicast: the CTAs load different K ranges). Then every CTA but the leader (rank 0)
// writes its fp32 accumulators to its "partial" buffer, all threads of the cluster meet at a cluster
// barrier (release / acquire: the partials are visible cluster-wide), the leader's consumer threads
// add rank 1, 2, ... partials from the peers' shared memory (ld.shared::cluster, the same fragment
// position as their own registers, in rank order: the sum, so the result, does not depend on timing)
// and run the ordinary epilogue, and a second cluster barrier keeps every peer's shared memory alive
// until the leader has read it. A CTA whose K range is empty (k_tiles < kSplitK) contributes zeros.
// These configs are not persistent: the grid is one cluster per tile, each runs one work unit.
//
// The tile order is persistent and grouped: work unit u (a cluster's pair of tiles, or one tile)
// goes to cluster u mod (clusters in the grid); units walk kGroupM unit-rows down M before moving
// along N, so the units in flight share A row-panels and B column-panels in L2. Batch entries are
// further units (each operand's tensor map has a batch dim; stride-0 batches use coordinate 0).
#pragma once

#include <cuda.h>  // CUtensorMap (a kernel parameter)

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <type_traits>

#include "matmul_common.cuh"
#include "matmul_configs.h"
#include "matmul_launch_impl.h"  // ensure_dynamic_smem, out_vec_ok, with_config, with_bool
#include "sm90.cuh"
#include "tma_desc.h"
#include "wgmma.cuh"

#if defined(AITER_LITE_CUDA)

// The timeline experiment (bench/lab/wgmma_timeline.py) records per-CTA clock stamps through these
// hooks. Its build (module_matmul_timeline in bench/lab/jit_experiments.json) defines the macro and
// puts bench/lab, where the recording header lives, on the include path; every shipped build gets
// the no-ops below, which compile to nothing.
#if AITER_LITE_WGMMA_EXPERIMENT_TIMELINE
#include "matmul_wgmma_timeline.cuh"
#else
namespace aiter_lite {
namespace wgmma_timeline {
constexpr bool kOn = false;
enum Event : int { kData = 0, kMainloopDone = 1, kEpilogueDone = 2 };
__device__ __forceinline__ void entry() {}
__device__ __forceinline__ void event(int, int, Event) {}
__device__ __forceinline__ void stamp_exit(int) {}
inline void after_launch(int, cudaStream_t) {}
}  // namespace wgmma_timeline
}  // namespace aiter_lite
#endif

// Unit-rows per raster group of the grouped tile order (see the top of this file). Other values are
// for measurements only (bench/lab/jit_experiments.json builds variants of the module with them).
#ifndef AITER_LITE_WGMMA_GROUP_M
#define AITER_LITE_WGMMA_GROUP_M 8
#endif
// k-tiles by which consumer 1 trails consumer 0 in each tile (0: none); for measurements only
// (wgmma_mainloop).
#ifndef AITER_LITE_WGMMA_EXPERIMENT_STAGGER
#define AITER_LITE_WGMMA_EXPERIMENT_STAGGER 0
#endif

namespace aiter_lite {
namespace matmul_detail {

template <typename T, int kConfig, bool kBKMajor_, bool kAKMajor_ = true, bool kEpilogue_ = false>
struct WgmmaMatmulTraits {
  using elem_t = T;
  using tag_t = typename std::conditional<std::is_same<T, half_t>::value, wgmma::WgmmaF16, wgmma::WgmmaBF16>::type;
  static_assert(std::is_same<T, half_t>::value || std::is_same<T, bfloat16_t>::value, "fp16 or bf16");
  static constexpr MatmulTileConfig kCfg = kMatmulConfigs[kConfig];
  static_assert(kCfg.path == MatmulPath::kWgmma16, "config is for another path");

  static constexpr bool kBKMajor = kBKMajor_;  // B contiguous along K (else along N)
  static constexpr bool kAKMajor = kAKMajor_;  // A contiguous along K (else along M: a.t(), the A^T of dB)
  static constexpr bool kEpilogue = kEpilogue_;  // the fused epilogue (WgmmaArgs::epi) before the rounding
  static constexpr int kBM = kCfg.bm, kBN = kCfg.bn, kBK = kCfg.bk, kStages = kCfg.stages;
  static constexpr int kCluster = kCfg.cluster_m;               // CTAs per cluster along M (multicast B)
  static constexpr int kClusterN = kCfg.cluster_n;              // CTAs per cluster along N (multicast A)
  static constexpr int kSplitK = kCfg.split_k;                  // CTAs per cluster along K (split-K)
  static constexpr int kMulticastSize = kCluster * kClusterN;   // CTAs of a tile-sharing cluster
  static constexpr int kClusterSize = kMulticastSize * kSplitK;
  // CTAs whose copies write into this CTA's stages (itself, its M partner, its N partner): each of
  // them must hear that a stage is empty before refilling it.
  static constexpr int kStageWriters = kCluster + kClusterN - 1;
  // N-major B under an M cluster: each CTA multicasts whole 64-column blocks when BN / 64 splits
  // evenly, else half of the k rows of every block (BN = 192).
  static constexpr bool kBSplitRows = !kBKMajor && kCluster > 1 && (kBN / 64) % kCluster != 0;
  // Rows of A a k-tile loads (kCfg.a_rows; the tile's kBM by default), and of those each CTA loads.
  static constexpr int kALoadRows = matmul_config_a_load_rows(kCfg);
  static constexpr int kARowsPerCta = kALoadRows / kClusterN;
  // 64-column pieces per consumer warp whose global stores wgmma_consumer_overlap defers into the
  // next tile's mainloop (0: wgmma_consumer); each waits in a 2 KB slot of the warp's epilogue buffer.
  static constexpr int kDeferredPieces = kCfg.epilogue_overlap;
  static constexpr bool kOverlapEpilogue = kDeferredPieces > 0;
  static constexpr int kEpiSlots = kOverlapEpilogue ? kDeferredPieces : 1;
  static constexpr int kConsumers = kCfg.warps_m / 4;         // consumer warpgroups
  static constexpr int kWgRows = kBM / kConsumers;            // rows of the tile per consumer
  static constexpr int kMBlocks = kWgRows / 64;               // wgmma m64 blocks per consumer
  static constexpr int kThreads = matmul_config_threads(kCfg);
  static constexpr int kKSteps = kBK / 16;                    // wgmma k16 steps per k-tile
  static constexpr int kAccRegs = kBN / 2;                    // fp32 accumulators per m64 block per thread
  static constexpr int kAccF4 = kMBlocks * kAccRegs / 4;      // the same, in float4
  static constexpr int kGroupM = AITER_LITE_WGMMA_GROUP_M;    // unit-rows per raster group

  // Register split after setmaxnreg (65536 per SM): 128 * 40 + 256 * 232 = 64512. With one consumer
  // the launch bound already gives every thread up to 255 registers, so nothing is moved.
  static constexpr int kProducerRegs = 40, kConsumerRegs = 232;

  // Shared-memory layout (offsets from the 1024-aligned base).
  static constexpr int kRowBytes = kBK * 2;                   // 128: one swizzle row
  static constexpr int kAStageBytes = kALoadRows * kRowBytes;
  static constexpr int kBStageBytes = kBN * kRowBytes;
  static constexpr int kBColumnBlockBytes = kBK * 128;        // N-major: one 64-wide block of kBK rows
  // M-major A: kBM / 64 blocks of [kBK k rows][64 m], 8 KB each. A block of 64 rows of m takes the
  // same 8 KB as 64 K-major rows, so a consumer's m64 block mb starts at the same offset either way.
  static constexpr int kAColumnBlockBytes = kBK * 128;
  static constexpr int kStageTxBytes = kAStageBytes + kBStageBytes;  // every byte lands in every CTA
  static constexpr int kEpiWarpBytes = kMatmulWgmmaEpilogueBytesPerWarp * kEpiSlots;  // slots of [16][64] 16-bit
  static constexpr int kAOffset = 0;
  static constexpr int kBOffset = kStages * kAStageBytes;
  static constexpr int kEpiOffset = kBOffset + kStages * kBStageBytes;
  static constexpr int kRedOffset = kEpiOffset + 4 * kConsumers * kEpiWarpBytes;  // split-K partial
  static constexpr int kRedConsumerBytes = kSplitK > 1 ? kAccF4 * 128 * 16 : 0;
  static constexpr int kBarOffset = kRedOffset + kConsumers * kRedConsumerBytes;
  static constexpr int kSmemBytes = static_cast<int>(matmul_config_smem_bytes(kCfg, 2));

  static_assert(kCfg.warps_n == 1 && kCfg.warps_m % 4 == 0 && (kConsumers == 1 || kConsumers == 2),
                "one or two consumer warpgroups stacked along M");
  static_assert(kBK == 64, "BK is one 128-byte swizzle row of 16-bit elements");
  static_assert(kWgRows % 64 == 0 && (kMBlocks == 1 || kMBlocks == 2), "a consumer owns 64 or 128 rows");
  static_assert(kBN == 64 || kBN == 128 || kBN == 192 || kBN == 256, "wgmma wrappers exist for N = 64, 128, 192, 256");
  static_assert(kBM <= 256 && kBN <= 256, "a TMA box dim is at most 256");
  static_assert(kCluster == 1 || kCluster == 2, "clusters of 1 or 2 CTAs along M");
  static_assert(kClusterN == 1 || kClusterN == 2, "clusters of 1 or 2 CTAs along N");
  static_assert((kBN / kCluster) % 8 == 0 && kARowsPerCta % 8 == 0, "each CTA multicasts whole 1024-byte swizzle atoms");
  static_assert(kSplitK == 1 || kSplitK == 2 || kSplitK == 4, "split-K over 1, 2 or 4 CTAs");
  static_assert(kMulticastSize == 1 || kSplitK == 1, "a cluster splits M and N, or K");
  static_assert(kConsumers * kRedConsumerBytes == (kSplitK > 1 ? kBM * kBN * 4 : 0), "partial: BM x BN fp32");
  static_assert(kStages >= 2 && 2 * kStages * 8 <= 1024, "mbarriers fit their 1024 bytes");
  static_assert(kAStageBytes % 1024 == 0 && kBStageBytes % 1024 == 0, "stages start on swizzle atoms");
  static_assert(kMatmulWgmmaEpilogueBytesPerWarp == 16 * 64 * 2, "epilogue slot: 16 rows x 64 columns of 16-bit outputs");
  static_assert(kDeferredPieces >= 0 && kDeferredPieces <= kBN / 64 && (kDeferredPieces == 0 || kSplitK == 1),
                "deferred epilogue pieces: at most BN / 64, persistent configs only");
  static_assert(kBarOffset + 1024 + 1024 == kSmemBytes, "layout disagrees with matmul_config_smem_bytes");
  static_assert(kStageWriters * kConsumers * 4 < (1 << 20), "arrival count");
  static_assert(kAKMajor || (kMulticastSize == 1 && kBM % 64 == 0), "M-major A: single CTAs, whole 64-row blocks");
  static_assert(kAColumnBlockBytes == 64 * kRowBytes, "an M-major block of 64 rows sits where 64 K-major rows would");
  // Fewer A rows than the tile's: the m64 wgmma of the last stage reads (kBM - kALoadRows) rows past its A stage,
  // which lie in the B stages that follow; one consumer, K-major A, no cluster or split.
  static_assert(kALoadRows == kBM || (kAKMajor && kClusterSize == 1 && kConsumers == 1 && kALoadRows % 8 == 0 &&
                                      kStages * kBStageBytes >= (kBM - kALoadRows) * kRowBytes),
                "a_rows: K-major A, single CTAs, one consumer, whole swizzle atoms");
};

// Kernel arguments besides the two tensor maps. Work units: total_units = batch * units_per_batch,
// units_per_batch = units_m * units_n, units_m = ceil(tiles_m / kCluster), units_n = ceil(tiles_n / kClusterN).
template <typename T>
struct WgmmaArgs {
  T* out;
  int64_t out_batch_stride, out_row_stride, out_col_stride;
  int32_t m, n, k;
  int32_t k_tiles;
  int32_t units_n, units_m, units_per_batch, total_units;
  int32_t a_batched, b_batched;  // 1: the operand's tensor map has the batch dim; 0: broadcast (coordinate 0)
  bool out_vec;                  // out rows contiguous, row/batch strides multiples of 8, pointer 16-byte aligned
  MatmulEpilogue epi;            // 16-bit kernels built with kEpilogue only (wgmma_store_fused)
};

struct WgmmaTile {
  int32_t m0, n0, z;
};

// The launch arguments both wgmma launchers (16-bit and tf32) fill the same way: units_m work-unit
// rows (tiles_m, or tile pairs under an M cluster) x units_n columns (tiles_n, or pairs under an N
// cluster) per batch entry; out_vec is the caller's.
template <typename T, typename Params>
WgmmaArgs<T> make_wgmma_args(const Params& p, int32_t bk, int64_t units_n, int64_t units_m, int64_t units,
                             bool a_batched, bool b_batched) {
  WgmmaArgs<T> args{};
  args.out = static_cast<T*>(p.out);
  args.out_batch_stride = p.out_batch_stride;
  args.out_row_stride = p.out_row_stride;
  args.out_col_stride = p.out_col_stride;
  args.m = static_cast<int32_t>(p.m);
  args.n = static_cast<int32_t>(p.n);
  args.k = static_cast<int32_t>(p.k);
  args.k_tiles = static_cast<int32_t>((p.k + bk - 1) / bk);
  args.units_n = static_cast<int32_t>(units_n);
  args.units_m = static_cast<int32_t>(units_m);
  args.units_per_batch = static_cast<int32_t>(units_m * units_n);
  args.total_units = static_cast<int32_t>(units);
  args.a_batched = a_batched ? 1 : 0;
  args.b_batched = b_batched ? 1 : 0;
  return args;
}

// Work unit -> tile of CTA `rank` of the cluster (grouped order, see the top of this file). rank
// picks the tile of an M cluster; the CTAs of a split-K cluster share the unit's one tile.
template <class Traits>
__device__ __forceinline__ WgmmaTile wgmma_tile(int32_t unit, const WgmmaArgs<typename Traits::elem_t>& args,
                                                uint32_t rank) {
  // Multicast clusters: rank = rank_m + kCluster * rank_n. Split-K CTAs share the unit's tile.
  const int32_t rank_m = Traits::kCluster > 1 ? static_cast<int32_t>(rank % Traits::kCluster) : 0;
  const int32_t rank_n = Traits::kClusterN > 1 ? static_cast<int32_t>(rank / Traits::kCluster) : 0;
  constexpr int32_t kGroupM = Traits::kGroupM;
  // Integer divisions cost about twenty instructions each, and this runs once or twice per tile in
  // every consumer thread: skip those whose divisor is known (one batch entry; a full raster group
  // of kGroupM rows, a power of two).
  const int32_t z = args.total_units == args.units_per_batch ? 0 : unit / args.units_per_batch;
  const int32_t r = unit - z * args.units_per_batch;
  const int32_t group_size = kGroupM * args.units_n;
  const int32_t group = r / group_size;
  const int32_t first_m = group * kGroupM;
  const int32_t group_m = min(args.units_m - first_m, kGroupM);
  const int32_t local = r - group * group_size;
  int32_t um, un;
  if (group_m == kGroupM) {
    um = first_m + static_cast<int32_t>(static_cast<uint32_t>(local) % kGroupM);  // local >= 0: a mask
    un = static_cast<int32_t>(static_cast<uint32_t>(local) / kGroupM);
  } else {  // the last, partial group
    um = first_m + local % group_m;
    un = local / group_m;
  }
  return {(um * Traits::kCluster + rank_m) * Traits::kBM, (un * Traits::kClusterN + rank_n) * Traits::kBN, z};
}

// The k-tiles [begin, end) of CTA `rank` of the cluster: all of them, or its share under split-K
// (balanced; empty where k_tiles < kSplitK). k_tiles < 2^26, so the products fit in 32 bits.
struct WgmmaKRange {
  int32_t begin, end;
};

template <class Traits>
__device__ __forceinline__ WgmmaKRange wgmma_k_range(int32_t k_tiles, uint32_t rank) {
  if constexpr (Traits::kSplitK == 1) {
    return {0, k_tiles};
  } else {
    const int32_t r = static_cast<int32_t>(rank);
    return {r * k_tiles / Traits::kSplitK, (r + 1) * k_tiles / Traits::kSplitK};
  }
}

// ---- producer --------------------------------------------------------------------------------------

template <class Traits>
__device__ __forceinline__ void wgmma_producer(const CUtensorMap* tmap_a, const CUtensorMap* tmap_b,
                                               const WgmmaArgs<typename Traits::elem_t>& args, uint32_t smem,
                                               uint32_t rank, int32_t first_unit, int32_t unit_step) {
  constexpr int kStages = Traits::kStages, kBK = Traits::kBK, kCluster = Traits::kCluster;
  constexpr int kClusterN = Traits::kClusterN;
  const uint32_t full0 = smem + Traits::kBarOffset, empty0 = full0 + 8 * kStages;
  int stage = 0;
  uint32_t phase = 0;
  const WgmmaKRange range = wgmma_k_range<Traits>(args.k_tiles, rank);
  // Multicast clusters (rank = rank_m + kCluster * rank_n): this CTA loads share rank_m of the B
  // tile for the CTAs of its column (same rank_n) and share rank_n of the A tile for those of its
  // row (same rank_m).
  const uint32_t rank_m = kCluster > 1 ? rank % kCluster : 0u;
  const uint32_t rank_n = kClusterN > 1 ? rank / kCluster : 0u;
  const uint16_t b_mask = static_cast<uint16_t>(((1u << kCluster) - 1) << (kCluster * rank_n));
  const uint16_t a_mask = static_cast<uint16_t>(kCluster == 1 ? 3u : (5u << rank_m));  // kClusterN == 2
  for (int32_t unit = first_unit; unit < args.total_units; unit += unit_step) {
    const WgmmaTile tile = wgmma_tile<Traits>(unit, args, rank);
    const int32_t za = tile.z * args.a_batched, zb = tile.z * args.b_batched;
    for (int32_t kt = range.begin; kt < range.end; ++kt) {
      const uint32_t full = full0 + 8 * stage;
      // Parity phase ^ 1: the first pass over the ring finds every stage empty.
      sm90::mbar_wait(empty0 + 8 * stage, phase ^ 1);
      sm90::mbar_arrive_expect_tx(full, Traits::kStageTxBytes);
      const int32_t k0 = kt * kBK;
      const uint32_t a_dst = smem + Traits::kAOffset + stage * Traits::kAStageBytes;
      const uint32_t b_dst = smem + Traits::kBOffset + stage * Traits::kBStageBytes;
      if constexpr (!Traits::kAKMajor) {
        // kBM / 64 blocks of [64 k rows][64 m] (the map's inner dim is M).
#pragma unroll
        for (int block = 0; block < Traits::kBM / 64; ++block)
          sm90::tma_load_3d(a_dst + block * Traits::kAColumnBlockBytes, tmap_a, tile.m0 + block * 64, k0, za, full);
      } else if constexpr (kClusterN == 1) {
        sm90::tma_load_3d(a_dst, tmap_a, k0, tile.m0, za, full);
      } else {
        // Rows [rank_n * kARowsPerCta, +kARowsPerCta) of the A tile, for both CTAs of the row.
        constexpr int kRows = Traits::kARowsPerCta;
        sm90::tma_load_3d_multicast(a_dst + rank_n * kRows * Traits::kRowBytes, tmap_a, k0,
                                    tile.m0 + static_cast<int32_t>(rank_n) * kRows, za, full, a_mask);
      }
      if constexpr (Traits::kBKMajor) {
        // [kBN rows of n][64 k]: CTA r of the column loads rows [r * kBN / kCluster, ...) for both.
        constexpr int kRows = Traits::kBN / kCluster;
        const uint32_t dst = b_dst + rank_m * kRows * Traits::kRowBytes;
        if constexpr (kCluster == 1)
          sm90::tma_load_3d(dst, tmap_b, k0, tile.n0, zb, full);
        else
          sm90::tma_load_3d_multicast(dst, tmap_b, k0, tile.n0 + static_cast<int32_t>(rank_m) * kRows, zb, full,
                                      b_mask);
      } else if constexpr (Traits::kBSplitRows) {
        // kBN / 64 column blocks of [64 k rows][64 n]; CTA r loads k rows [r * 64 / kCluster, ...)
        // of every block for both.
        constexpr int kRows = 64 / kCluster;
#pragma unroll
        for (int block = 0; block < Traits::kBN / 64; ++block) {
          const uint32_t dst = b_dst + block * Traits::kBColumnBlockBytes + rank_m * kRows * 128;
          sm90::tma_load_3d_multicast(dst, tmap_b, tile.n0 + block * 64, k0 + static_cast<int32_t>(rank_m) * kRows,
                                      zb, full, b_mask);
        }
      } else {
        // kBN / 64 column blocks of [64 k rows][64 n]; CTA r loads its share of them for both.
        constexpr int kBlocks = Traits::kBN / 64 / kCluster;
#pragma unroll
        for (int j = 0; j < kBlocks; ++j) {
          const int block = static_cast<int>(rank_m) * kBlocks + j;
          const uint32_t dst = b_dst + block * Traits::kBColumnBlockBytes;
          if constexpr (kCluster == 1)
            sm90::tma_load_3d(dst, tmap_b, tile.n0 + block * 64, k0, zb, full);
          else
            sm90::tma_load_3d_multicast(dst, tmap_b, tile.n0 + block * 64, k0, zb, full, b_mask);
        }
      }
      if (++stage == kStages) {
        stage = 0;
        phase ^= 1;
      }
    }
  }
}

// ---- consumers -------------------------------------------------------------------------------------

// Releases a stage: lanes 0 .. kStageWriters - 1 of each consumer warp arrive on the stage's "empty"
// barrier of this CTA, of its M partner (rank ^ 1) and, in a 2 x 2 cluster, of its N partner
// (rank ^ 2): the CTAs whose multicasts refill this CTA's copy of the stage, so each must hear.
// Thread 0 at kernel start: prefetch both tensor maps and initialize the stage ring's barriers:
// "full" completes on the producer's arrive.expect_tx (the bytes do the rest), "empty" once every
// consumer warp of the cluster has released the stage (wgmma_release). Callers sync before use.
template <class Traits>
__device__ __forceinline__ void wgmma_init_ring(uint32_t smem, const CUtensorMap* tmap_a, const CUtensorMap* tmap_b) {
  sm90::prefetch_tensormap(tmap_a);
  sm90::prefetch_tensormap(tmap_b);
  const uint32_t full0 = smem + Traits::kBarOffset, empty0 = full0 + 8 * Traits::kStages;
  for (int s = 0; s < Traits::kStages; ++s) {
    sm90::mbar_init(full0 + 8 * s, 1);
    sm90::mbar_init(empty0 + 8 * s, 4 * Traits::kConsumers * Traits::kStageWriters);
  }
  sm90::fence_mbarrier_init();
}

template <class Traits>
__device__ __forceinline__ void wgmma_release(uint32_t empty_bar, int lane) {
  if constexpr (Traits::kStageWriters == 1) {
    if (lane == 0) sm90::mbar_arrive(empty_bar);
  } else {
    // Partners differ from this CTA's rank in one bit: bit 0 (the other rank_m, or the other rank_n
    // of a 1 x 2 cluster), bit 1 (the other rank_n of a 2 x 2 cluster).
    if (lane < Traits::kStageWriters) sm90::mbar_arrive_cluster(empty_bar, sm90::cluster_ctarank() ^ lane);
  }
}

// Measurement only (bench/lab/experiments.sh, bench/lab/jit_experiments.json): an experiment build
// runs everything but the epilogue's global stores (they would need m < 0 to run), to see what the
// stores cost.
template <typename T>
__device__ __forceinline__ bool wgmma_experiment_skip_stores(const WgmmaArgs<T>& args) {
#if defined(AITER_LITE_WGMMA_EXPERIMENT_NO_STORE)
  return args.m >= 0;
#else
  return false;
#endif
}

// One 16-byte chunk of a row (8 outputs, packed) to out[row][col .. col+7]: a single vector store
// when the output allows it, else element by element inside the bounds (kClip) and strides.
template <typename T, bool kClip>
__device__ __forceinline__ void wgmma_store_chunk(T* out, const WgmmaArgs<T>& args, int32_t row, int32_t col,
                                                  uint4 v) {
  if (wgmma_experiment_skip_stores(args)) return;
  if (kClip && row >= args.m) return;
  T* out_row = out + row * args.out_row_stride;
  if (args.out_vec && (!kClip || col + 8 <= args.n)) {
    *reinterpret_cast<uint4*>(out_row + col) = v;
    return;
  }
  const uint32_t words[4] = {v.x, v.y, v.z, v.w};
  uint16_t* out_bits = reinterpret_cast<uint16_t*>(out_row);
#pragma unroll
  for (int e = 0; e < 8; ++e) {
    if (kClip && col + e >= args.n) break;
    out_bits[(col + e) * args.out_col_stride] = static_cast<uint16_t>(words[e / 2] >> (16 * (e % 2)));
  }
}

// Stores the consumer's rows of the tile through the warp's shared buffer (see the top of this
// file), one 16 x 64 piece (16 rows of the warp, 64 columns) at a time: wgmma_stage_piece converts
// and writes the piece into a 2 KB slot with stmatrix, wgmma_flush_piece reads it back as 16-byte
// row chunks and stores those. Accumulator i of m64 block mb of thread (warp w, lane l) is row
// 16w + l/4 + 8 * ((i/2) % 2), column 8 * (i/4) + 2 * (l % 4) + i % 2 of the block (wgmma.cuh);
// stmatrix takes exactly that layout per 8 x 8 matrix, packed two columns to a register.
template <class Traits>
__device__ __forceinline__ void wgmma_stage_piece(const float (&acc)[Traits::kMBlocks][Traits::kAccRegs], int mb,
                                                  int piece, int lane, uint32_t slot) {
  using T = typename Traits::elem_t;
  // stmatrix: lane l addresses row (l / 8 % 2) * 8 + l % 8 of column group 2p + l / 16.
  const int st_row = ((lane / 8) % 2) * 8 + lane % 8, st_group = lane / 16;
  const uint32_t st_addr = slot + st_row * 128;
#pragma unroll
  for (int p = 0; p < 4; ++p) {
    const int j = piece * 8 + 2 * p;  // column group (8 columns) of the block
    const float* a0 = &acc[mb][4 * j];
    const float* a1 = &acc[mb][4 * (j + 1)];
    const int group = 2 * p + st_group;
    sm90::stmatrix_x4(st_addr + ((group ^ (st_row % 8)) << 4), pack2<T>(a0[0], a0[1]), pack2<T>(a0[2], a0[3]),
                      pack2<T>(a1[0], a1[1]), pack2<T>(a1[2], a1[3]));
  }
}

template <class Traits, bool kClip>
__device__ __forceinline__ void wgmma_flush_piece(const WgmmaArgs<typename Traits::elem_t>& args,
                                                  const WgmmaTile& tile, int consumer, int warp, int lane, int mb,
                                                  int piece, uint32_t slot) {
  using T = typename Traits::elem_t;
  T* out = args.out + tile.z * args.out_batch_stride;
  const int32_t row0 = tile.m0 + consumer * Traits::kWgRows + mb * 64 + warp * 16;
  // Read-back: lane l takes chunk l % 8 of rows l / 8 + 4i.
  const int ld_row = lane / 8, ld_chunk = lane % 8;
  const int32_t col = tile.n0 + piece * 64 + ld_chunk * 8;
  uint4 v[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int r = ld_row + 4 * i;
    v[i] = sm90::lds_128(slot + r * 128 + ((ld_chunk ^ (r % 8)) << 4));
  }
  if (!kClip && args.out_vec && !wgmma_experiment_skip_stores(args)) {
    // Interior tile, vector stores: one address, then a constant row step (the general path below
    // recomputes a 64-bit row address per chunk, in the epilogue's critical path).
    T* p = out + static_cast<int64_t>(row0 + ld_row) * args.out_row_stride + col;
    const int64_t step = 4 * args.out_row_stride;
#pragma unroll
    for (int i = 0; i < 4; ++i) *reinterpret_cast<uint4*>(p + i * step) = v[i];
    return;
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) wgmma_store_chunk<T, kClip>(out, args, row0 + ld_row + 4 * i, col, v[i]);
}

// Pieces [kPiece0, kPiece1) of every m64 block, through the warp's slot 0.
template <class Traits, bool kClip, int kPiece0 = 0, int kPiece1 = Traits::kBN / 64>
__device__ __forceinline__ void wgmma_store(const float (&acc)[Traits::kMBlocks][Traits::kAccRegs],
                                            const WgmmaArgs<typename Traits::elem_t>& args, const WgmmaTile& tile,
                                            int consumer, int warp, int lane, uint32_t buf) {
#pragma unroll
  for (int mb = 0; mb < Traits::kMBlocks; ++mb) {
#pragma unroll
    for (int piece = kPiece0; piece < kPiece1; ++piece) {
      wgmma_stage_piece<Traits>(acc, mb, piece, lane, buf);
      __syncwarp();
      wgmma_flush_piece<Traits, kClip>(args, tile, consumer, warp, lane, mb, piece, buf);
      __syncwarp();  // the next piece's stmatrix overwrites the buffer
    }
  }
}

struct WgmmaNoHook {
  __device__ __forceinline__ void operator()() const {}
};

// Runs k-tiles [range.begin, range.end) of the current tile into acc; the first k16 step
// overwrites acc (scale-d 0), so an empty range leaves acc as it was. stage / phase: the consumer's
// position in the ring, carried from tile to tile. hook() runs once, right after the wgmma groups of
// the first two k-tiles are issued (before waiting on the first), if the range has two k-tiles.
template <class Traits, class Hook = WgmmaNoHook>
__device__ __forceinline__ void wgmma_mainloop(float (&acc)[Traits::kMBlocks][Traits::kAccRegs], uint32_t smem,
                                               int consumer, int lane, WgmmaKRange range, int& stage,
                                               uint32_t& phase, const Hook& hook = Hook{}) {
  constexpr int kStages = Traits::kStages, kMBlocks = Traits::kMBlocks, kN = Traits::kBN;
  constexpr int kTransA = Traits::kAKMajor ? 0 : 1;
  constexpr int kTransB = Traits::kBKMajor ? 0 : 1;
  constexpr uint64_t kDescA =
      Traits::kAKMajor ? wgmma::desc_base_k_major() : wgmma::desc_base_mn_major(Traits::kAColumnBlockBytes);
  constexpr uint64_t kDescB =
      Traits::kBKMajor ? wgmma::desc_base_k_major() : wgmma::desc_base_mn_major(Traits::kBColumnBlockBytes);
  // Bytes from one k16 step to the next: 16 elements along a K-major row, or 16 K-major rows.
  constexpr uint32_t kAStepBytes = Traits::kAKMajor ? 32 : 16 * 128;
  constexpr uint32_t kBStepBytes = Traits::kBKMajor ? 32 : 16 * 128;
  const uint32_t full0 = smem + Traits::kBarOffset, empty0 = full0 + 8 * kStages;
  const uint32_t a_rows = smem + Traits::kAOffset + consumer * Traits::kWgRows * Traits::kRowBytes;

  // Experiment (AITER_LITE_WGMMA_EXPERIMENT_STAGGER = D): consumer 1 starts each tile after
  // consumer 0 has issued D of its k-tiles, so that their epilogues do not run at the same time.
  // Only where a tile has more k-tiles than the ring can hold ahead, so that consumer 0 can never
  // reach the next tile's arrival before consumer 1 has waited for this one.
  constexpr int kStagger = AITER_LITE_WGMMA_EXPERIMENT_STAGGER;
  const bool stagger = kStagger > 0 && Traits::kConsumers == 2 && range.end - range.begin > kStages + kStagger + 2;
  if (stagger && consumer == 1) sm90::named_bar_sync(1, 256);

  int prev_stage = 0;
  for (int32_t kt = range.begin; kt < range.end; ++kt) {
    sm90::mbar_wait(full0 + 8 * stage, phase);
    const uint32_t a_stage = a_rows + stage * Traits::kAStageBytes;
    const uint32_t b_stage = smem + Traits::kBOffset + stage * Traits::kBStageBytes;
#pragma unroll
    for (int mb = 0; mb < kMBlocks; ++mb) wgmma::warpgroup_fence_operands(acc[mb]);
    wgmma::wgmma_fence();
    // The k16 steps' descriptors differ from the stage's first ones only in the start-address
    // field, which never carries into the next field (shared offsets are below 2^18): plain adds.
    const uint64_t desc_a0 = wgmma::make_desc(kDescA, a_stage), desc_b0 = wgmma::make_desc(kDescB, b_stage);
#pragma unroll
    for (int kk = 0; kk < Traits::kKSteps; ++kk) {
      const uint64_t desc_b = desc_b0 + wgmma::desc_field(kk * kBStepBytes);
      // The first k16 step of a tile overwrites the accumulators (scale-d 0): no zeroing pass.
      const uint32_t scale_d = (kt > range.begin || kk > 0) ? 1u : 0u;
#pragma unroll
      for (int mb = 0; mb < kMBlocks; ++mb) {
        const uint64_t desc_a = desc_a0 + wgmma::desc_field(mb * 64 * Traits::kRowBytes + kk * kAStepBytes);
        wgmma::mma_async<kN, kTransA, kTransB>(acc[mb], desc_a, desc_b, scale_d, typename Traits::tag_t{});
      }
    }
    wgmma::wgmma_commit();
#pragma unroll
    for (int mb = 0; mb < kMBlocks; ++mb) wgmma::warpgroup_fence_operands(acc[mb]);
    if (stagger && consumer == 0 && kt == range.begin + kStagger - 1) sm90::named_bar_arrive(1, 256);
    if (kt == range.begin + 1) hook();
    // Keep this k-tile's group in flight; the previous one is done, so its stage can be refilled.
    if (kt > range.begin) {
      wgmma::wgmma_wait<1>();
      wgmma_release<Traits>(empty0 + 8 * prev_stage, lane);
    }
    prev_stage = stage;
    if (++stage == kStages) {
      stage = 0;
      phase ^= 1;
    }
  }
  wgmma::wgmma_wait<0>();
#pragma unroll
  for (int mb = 0; mb < kMBlocks; ++mb) wgmma::warpgroup_fence_operands(acc[mb]);
  if (range.end > range.begin) wgmma_release<Traits>(empty0 + 8 * prev_stage, lane);
}

// ---- the fused epilogue (kEpilogue kernels) ----------------------------------------------------------
// act(alpha acc + bias) + beta residual (MatmulEpilogue) in fp32 on the accumulator fragment, one
// 16 x 64 piece at a time, right where the stores convert it to 16 bits: no copy of the accumulators in
// local memory. (A first version ran a loop over a stack copy of all of them: with shared memory
// taking nearly all of L1, that copy lived in L2, and each value's round trip waited in turn, which
// doubled the time of a 4096^3 product on the H100.) The loop over pieces is rolled, so that the
// activations' code is in the kernel once: each iteration takes its piece's 32 accumulators out of
// the fragment through a switch on the piece (compile-time register indices in every case). A piece
// is computed in two halves of 16 values (32 columns), and the bias and residual loads of the next half
// are issued before the current one is computed: both halves' inputs and the 128 accumulators of a
// 64 x 256 consumer stay within its 232 registers (whole pieces double-buffered spilled).
//
// Per 8-column group g of a half a thread holds out[r][c], out[r][c + 1], out[r + 8][c] and
// out[r + 8][c + 1] (r = 16 warp + lane / 4, c = 8 g + 2 (lane % 4) within the half; wgmma.cuh), so
// it needs bias[c], bias[c + 1] (bias[2 g + 0/1], in fp32) and the residual's column pairs at rows r
// and r + 8 (res[2 g + 0/1]: two 16-bit elements each, column c in the low half).
struct WgmmaEpiInputs {
  float bias[8];
  uint32_t res[8];
};

// Per tile and thread: where the thread's residual starts and how to read it.
template <typename T>
struct WgmmaEpiThread {
  const void* bias;          // bias at col0 (bias_pairs), else the bias argument as it is
  const T* res;              // residual at (row0, col0); null: none
  int64_t res_row, res_col;  // its strides (elements)
  int32_t row0, col0;        // the thread's first row and column (absolute)
  bool res_pairs;            // each column pair is one aligned 4-byte word
  bool bias_pairs;           // interior tile, contiguous aligned bias: one load per column pair
  bool clip;                 // the tile crosses the M or N edge: loads test their bounds
  // wgmma_store_f32 only (out_fp32, the residual fp32 and read at the read-back, res null):
  bool res_f32_vec;  // the residual's rows contiguous and 16-byte aligned: one 16-byte load per chunk
  int32_t z;         // the tile's batch entry
};

template <class Traits>
__device__ __forceinline__ WgmmaEpiThread<typename Traits::elem_t> wgmma_epi_thread(
    const WgmmaArgs<typename Traits::elem_t>& args, const WgmmaTile& tile, int consumer, int warp, int lane,
    bool interior) {
  using T = typename Traits::elem_t;
  const MatmulEpilogue& e = args.epi;
  WgmmaEpiThread<T> th;
  th.row0 = tile.m0 + consumer * Traits::kWgRows + 16 * warp + lane / 4;
  th.col0 = tile.n0 + 2 * (lane % 4);
  th.res_row = e.residual_row_stride;
  th.res_col = e.residual_col_stride;
  th.res = nullptr;
  th.res_pairs = false;
  th.res_f32_vec = false;
  th.z = tile.z;
  th.clip = !interior;
  th.bias = e.bias;
  const int64_t bias_bytes = e.bias_dtype == DType::kFloat32 ? 4 : 2;
  th.bias_pairs = interior && e.bias != nullptr && e.bias_stride == 1 &&
                  reinterpret_cast<uintptr_t>(e.bias) % (2 * bias_bytes) == 0;
  if (th.bias_pairs) th.bias = static_cast<const char*>(e.bias) + th.col0 * bias_bytes;
  if (e.residual != nullptr) {
    const T* base = static_cast<const T*>(e.residual) + static_cast<int64_t>(tile.z) * e.residual_batch_stride;
    th.res = base + th.row0 * th.res_row + th.col0 * th.res_col;
    th.res_pairs = interior && th.res_col == 1 && th.res_row % 2 == 0 && reinterpret_cast<uintptr_t>(th.res) % 4 == 0;
  }
  return th;
}

template <typename B>
__device__ __forceinline__ void wgmma_epi_load_bias(float (&b)[8], const void* bias, int64_t stride, int32_t c0,
                                                    int32_t n, bool clip) {
#pragma unroll
  for (int u = 0; u < 8; ++u) {
    const int32_t c = c0 + 8 * (u / 2) + u % 2;
    b[u] = !clip || c < n ? to_float(static_cast<const B*>(bias)[c * stride]) : 0.f;
  }
}

// Issues the bias and residual loads of half `half` of step q (m64 block q / kPieces, piece q % kPieces).
template <class Traits>
__device__ __forceinline__ void wgmma_epi_load(WgmmaEpiInputs& in, const WgmmaArgs<typename Traits::elem_t>& args,
                                               const WgmmaEpiThread<typename Traits::elem_t>& th, int q, int half) {
  using T = typename Traits::elem_t;
  constexpr int kPieces = Traits::kBN / 64;
  const MatmulEpilogue& e = args.epi;
  const int mb = q / kPieces, piece = q % kPieces;
  const int32_t c0 = th.col0 + 64 * piece + 32 * half;
  if (th.bias_pairs) {
    const int off = 64 * piece + 32 * half;  // elements from the thread's first column
    if (e.bias_dtype == DType::kFloat32) {
#pragma unroll
      for (int g = 0; g < 4; ++g) {
        const float2 v = *(reinterpret_cast<const float2*>(static_cast<const float*>(th.bias) + off + 8 * g));
        in.bias[2 * g] = v.x;
        in.bias[2 * g + 1] = v.y;
      }
    } else {
#pragma unroll
      for (int g = 0; g < 4; ++g) {
        const uint32_t w = *(reinterpret_cast<const uint32_t*>(static_cast<const uint16_t*>(th.bias) + off + 8 * g));
        const bool f16 = e.bias_dtype == DType::kFloat16;
        in.bias[2 * g] = f16 ? bits16_to_float<half_t>(w & 0xffffu) : bits16_to_float<bfloat16_t>(w & 0xffffu);
        in.bias[2 * g + 1] = f16 ? bits16_to_float<half_t>(w >> 16) : bits16_to_float<bfloat16_t>(w >> 16);
      }
    }
  } else if (e.bias == nullptr) {
#pragma unroll
    for (int u = 0; u < 8; ++u) in.bias[u] = 0.f;
  } else if (e.bias_dtype == DType::kFloat32) {
    wgmma_epi_load_bias<float>(in.bias, e.bias, e.bias_stride, c0, args.n, th.clip);
  } else if (e.bias_dtype == DType::kFloat16) {
    wgmma_epi_load_bias<half_t>(in.bias, e.bias, e.bias_stride, c0, args.n, th.clip);
  } else {
    wgmma_epi_load_bias<bfloat16_t>(in.bias, e.bias, e.bias_stride, c0, args.n, th.clip);
  }
  if (th.res == nullptr) return;
  const T* base = th.res + (64 * mb) * th.res_row + (64 * piece + 32 * half) * th.res_col;
  if (th.res_pairs) {
#pragma unroll
    for (int u = 0; u < 8; ++u)
      in.res[u] = *reinterpret_cast<const uint32_t*>(base + (8 * (u % 2)) * th.res_row + 8 * (u / 2));
    return;
  }
  const int32_t r0 = th.row0 + 64 * mb;
#pragma unroll
  for (int u = 0; u < 8; ++u) {
    uint32_t w = 0;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int32_t r = r0 + 8 * (u % 2), c = c0 + 8 * (u / 2) + h;
      if (!th.clip || (r < args.m && c < args.n))
        w |= static_cast<uint32_t>(bits16(base[(8 * (u % 2)) * th.res_row + (8 * (u / 2) + h) * th.res_col]))
             << (16 * h);
    }
    in.res[u] = w;
  }
}

// The activations of matmul_activation (matmul_epilogue_math.h) on the device, chosen at compile time.
// The sigmoid forms use the hardware exp2 and reciprocal (relative error about 1e-6, far below the
// output's rounding to 16 bits; one instruction each, flushing subnormals, which the sigmoid's 1 + e
// never is): gelu_tanh 0.5 x (1 + tanh(u)) = x / (1 + exp(-2u)), silu x / (1 + exp(-x)). For x -> -inf
// the exp overflows to inf and its reciprocal to 0: 0 as in torch (NaN only for x = -inf itself).
__device__ __forceinline__ float wgmma_ex2_ftz(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ float wgmma_rcp_ftz(float x) {
  float y;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

template <MatmulActivation kAct>
__device__ __forceinline__ float wgmma_activation(float x) {
  if constexpr (kAct == MatmulActivation::kRelu) {
    return fmaxf(x, 0.f);
  } else if constexpr (kAct == MatmulActivation::kGeluErf) {
    return 0.5f * x * (1.f + erff(x * 0.70710678118654752f));
  } else if constexpr (kAct == MatmulActivation::kGeluTanh) {
    // -2u log2(e) = x (a + b x^2) with u = sqrt(2/pi) (x + 0.044715 x^3)
    const float t = x * fmaf(-0.10294324f, x * x, -2.3022082f);
    return x * wgmma_rcp_ftz(1.f + wgmma_ex2_ftz(t));
  } else if constexpr (kAct == MatmulActivation::kSilu) {
    return x * wgmma_rcp_ftz(1.f + wgmma_ex2_ftz(x * -1.4426950408889634f));
  } else {
    return x;
  }
}

// a[v]: accumulator 32 piece + 16 half + v of the step's m64 block (group v / 4 of the half).
template <MatmulActivation kAct, typename T>
__device__ __forceinline__ void wgmma_epi_math(float (&a)[16], const MatmulEpilogue& e, const WgmmaEpiInputs& in,
                                               bool has_res) {
  const float alpha = e.alpha, beta = e.beta;
#pragma unroll
  for (int v = 0; v < 16; ++v) {
    const int g = v / 4, i = v % 4;  // group g of the piece; (row r + 8 (i / 2), column c + i % 2)
    float x = wgmma_activation<kAct>(fmaf(a[v], alpha, in.bias[2 * g + i % 2]));
    if (has_res) x = fmaf(beta, bits16_to_float<T>((in.res[2 * g + i / 2] >> (16 * (i % 2))) & 0xffffu), x);
    a[v] = x;
  }
}

// wgmma_epi_math with the call's activation (a uniform branch), on one half piece.
template <typename T>
__device__ __forceinline__ void wgmma_epi_math_any(float (&a)[16], const MatmulEpilogue& e, const WgmmaEpiInputs& in,
                                                   bool has_res) {
  switch (e.activation) {
    case MatmulActivation::kRelu: wgmma_epi_math<MatmulActivation::kRelu, T>(a, e, in, has_res); break;
    case MatmulActivation::kGeluErf: wgmma_epi_math<MatmulActivation::kGeluErf, T>(a, e, in, has_res); break;
    case MatmulActivation::kGeluTanh: wgmma_epi_math<MatmulActivation::kGeluTanh, T>(a, e, in, has_res); break;
    case MatmulActivation::kSilu: wgmma_epi_math<MatmulActivation::kSilu, T>(a, e, in, has_res); break;
    default: wgmma_epi_math<MatmulActivation::kNone, T>(a, e, in, has_res); break;
  }
}

// The 16 accumulators of half `kHalf` of step q, by a switch whose every case reads fixed registers.
template <class Traits, int kHalf, int kQ = 0>
__device__ __forceinline__ void wgmma_take_half(const float (&acc)[Traits::kMBlocks][Traits::kAccRegs], int q,
                                                float (&a)[16]) {
  constexpr int kPieces = Traits::kBN / 64;
  if constexpr (kQ < Traits::kMBlocks * kPieces) {
    if (q == kQ) {
#pragma unroll
      for (int v = 0; v < 16; ++v) a[v] = acc[kQ / kPieces][32 * (kQ % kPieces) + 16 * kHalf + v];
    } else {
      wgmma_take_half<Traits, kHalf, kQ + 1>(acc, q, a);
    }
  }
}

// stmatrix of one half piece (column groups 4 kHalf .. 4 kHalf + 3 of the slot), as wgmma_stage_piece.
template <class Traits, int kHalf>
__device__ __forceinline__ void wgmma_stage_half(const float (&a)[16], int lane, uint32_t slot) {
  using T = typename Traits::elem_t;
  const int st_row = ((lane / 8) % 2) * 8 + lane % 8, st_group = lane / 16;
  const uint32_t st_addr = slot + st_row * 128;
#pragma unroll
  for (int p = 0; p < 2; ++p) {
    const int group = 4 * kHalf + 2 * p + st_group;
    const float* v = &a[8 * p];
    sm90::stmatrix_x4(st_addr + ((group ^ (st_row % 8)) << 4), pack2<T>(v[0], v[1]), pack2<T>(v[2], v[3]),
                      pack2<T>(v[4], v[5]), pack2<T>(v[6], v[7]));
  }
}

// Half kHalf of step q: its values out of the fragment, the epilogue (the activation chosen per call:
// a uniform branch), stmatrix into the warp's slot.
template <class Traits, int kHalf>
__device__ __forceinline__ void wgmma_fused_half(const float (&acc)[Traits::kMBlocks][Traits::kAccRegs],
                                                 const MatmulEpilogue& e, const WgmmaEpiInputs& in, bool has_res,
                                                 int q, int lane, uint32_t buf) {
  using T = typename Traits::elem_t;
  float a[16];
  wgmma_take_half<Traits, kHalf>(acc, q, a);
  wgmma_epi_math_any<T>(a, e, in, has_res);
  wgmma_stage_half<Traits, kHalf>(a, lane, buf);
}

// out_fp32 (fp32 output for 16-bit inputs), one half piece (16 rows of the warp x 32 columns) at a time:
// act(alpha acc + bias) in registers (wgmma_epi_load's bias, wgmma_epi_math), written as fp32 pairs into
// the warp's 2 KB slot (16 rows of 128 bytes, 16-byte chunk c of row r at chunk c ^ (r % 8): two wavefronts
// per store, the minimum), read back as whole 16-byte chunks, lane l taking chunk l % 8 of rows l / 8 + 4 i,
// so that each row's 128 bytes leave as one line; the residual (fp32, may be out itself: each chunk is
// read by the lane that then writes it) is added there. Nothing is deferred to the next tile.
template <class Traits>
__device__ __forceinline__ void wgmma_f32_half(const float (&acc)[Traits::kMBlocks][Traits::kAccRegs],
                                               const WgmmaArgs<typename Traits::elem_t>& args,
                                               const WgmmaEpiThread<typename Traits::elem_t>& th, bool math, int q,
                                               int half, int32_t row_base, int32_t col_base, int lane,
                                               uint32_t slot, bool interior) {
  using T = typename Traits::elem_t;
  constexpr int kPieces = Traits::kBN / 64;
  const MatmulEpilogue& e = args.epi;
  float a[16];
  if (half == 0)
    wgmma_take_half<Traits, 0>(acc, q, a);
  else
    wgmma_take_half<Traits, 1>(acc, q, a);
  if (math) {
    WgmmaEpiInputs in;
    wgmma_epi_load<Traits>(in, args, th, q, half);
    wgmma_epi_math_any<T>(a, e, in, /*has_res=*/false);
  }
  // a[4 g + 2 h + j]: row lane / 4 + 8 h, column 8 g + 2 (lane % 4) + j of the half (wgmma_epi_math).
#pragma unroll
  for (int g = 0; g < 4; ++g) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = lane / 4 + 8 * h, chunk = 2 * g + (lane % 4) / 2;
      sm90::sts_f32x2(slot + r * 128 + ((chunk ^ (r % 8)) << 4) + 8 * (lane % 2), a[4 * g + 2 * h],
                      a[4 * g + 2 * h + 1]);
    }
  }
  __syncwarp();
  const int mb = q / kPieces, piece = q % kPieces;
  const int ld_row = lane / 8, ld_chunk = lane % 8;
  const int32_t col = col_base + 64 * piece + 32 * half + 4 * ld_chunk;
  float* out = reinterpret_cast<float*>(args.out);
  const bool has_res = e.residual != nullptr;
  const bool vec = interior && args.out_vec;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int r = ld_row + 4 * i;
    const uint4 bits = sm90::lds_128(slot + r * 128 + ((ld_chunk ^ (r % 8)) << 4));
    float v[4] = {__uint_as_float(bits.x), __uint_as_float(bits.y), __uint_as_float(bits.z), __uint_as_float(bits.w)};
    const int32_t row = row_base + 64 * mb + r;
    if (!interior && row >= args.m) continue;
    const int64_t z = th.z;
    if (has_res) {
      const float* res = static_cast<const float*>(e.residual) + z * e.residual_batch_stride +
                         static_cast<int64_t>(row) * e.residual_row_stride;
      if (vec && th.res_f32_vec) {
        const float4 rv = *reinterpret_cast<const float4*>(res + col);
        v[0] = fmaf(e.beta, rv.x, v[0]);
        v[1] = fmaf(e.beta, rv.y, v[1]);
        v[2] = fmaf(e.beta, rv.z, v[2]);
        v[3] = fmaf(e.beta, rv.w, v[3]);
      } else {
#pragma unroll
        for (int j = 0; j < 4; ++j)
          if (interior || col + j < args.n) v[j] = fmaf(e.beta, res[(col + j) * e.residual_col_stride], v[j]);
      }
    }
    float* out_row = out + z * args.out_batch_stride + static_cast<int64_t>(row) * args.out_row_stride;
    if (vec) {
      *reinterpret_cast<float4*>(out_row + col) = make_float4(v[0], v[1], v[2], v[3]);
    } else {
#pragma unroll
      for (int j = 0; j < 4; ++j)
        if (interior || col + j < args.n) out_row[(col + j) * args.out_col_stride] = v[j];
    }
  }
  __syncwarp();  // the slot is read before the next half overwrites it
}

// out_fp32: the whole tile, half piece by half piece (wgmma_f32_half), through the warp's slot 0.
template <class Traits>
__device__ __forceinline__ void wgmma_store_f32(const float (&acc)[Traits::kMBlocks][Traits::kAccRegs],
                                                const WgmmaArgs<typename Traits::elem_t>& args, const WgmmaTile& tile,
                                                int consumer, int warp, int lane, uint32_t buf, bool interior) {
  constexpr int kSteps = Traits::kMBlocks * (Traits::kBN / 64);
  const MatmulEpilogue& e = args.epi;
  const bool math = e.bias != nullptr || e.activation != MatmulActivation::kNone || e.alpha != 1.0f;
  auto th = wgmma_epi_thread<Traits>(args, tile, consumer, warp, lane, interior);  // the bias loads
  // The residual is fp32 here: read at the read-back (wgmma_f32_half), not as 16-bit pairs by wgmma_epi_load.
  const float* res = static_cast<const float*>(e.residual);
  th.res_f32_vec = res != nullptr && e.residual_col_stride == 1 && e.residual_row_stride % 4 == 0 &&
                   e.residual_batch_stride % 4 == 0 && reinterpret_cast<uintptr_t>(res) % 16 == 0;
  th.res = nullptr;
  const int32_t row_base = tile.m0 + consumer * Traits::kWgRows + 16 * warp;
#pragma unroll 1
  for (int qh = 0; qh < 2 * kSteps; ++qh)  // rolled: one copy of the math and stores, few live registers
    wgmma_f32_half<Traits>(acc, args, th, math, qh / 2, qh % 2, row_base, tile.n0, lane, buf, interior);
}

// The whole tile through the fused epilogue. Pieces below kFirstDeferred go through the warp's slot 0
// (buf) and are stored at once; with deferred stores (wgmma_consumer_overlap) the last pieces are only
// staged, piece kFirstDeferred + d into slot d (buf + d * 2 KB), and stored during the next tile's
// mainloop, as without the fused epilogue. A residual that is out itself is safe: a piece's residual
// is in registers before the piece is stored, and pieces and warps' rows are disjoint.
template <class Traits, int kFirstDeferred = Traits::kBN / 64>
__device__ __forceinline__ void wgmma_store_fused(const float (&acc)[Traits::kMBlocks][Traits::kAccRegs],
                                                  const WgmmaArgs<typename Traits::elem_t>& args,
                                                  const WgmmaTile& tile, int consumer, int warp, int lane,
                                                  uint32_t buf, bool interior) {
  using T = typename Traits::elem_t;
  constexpr int kPieces = Traits::kBN / 64, kSteps = Traits::kMBlocks * kPieces;
  if (args.epi.out_fp32) {  // fp32 outputs: through slot 0, nothing deferred
    wgmma_store_f32<Traits>(acc, args, tile, consumer, warp, lane, buf, interior);
    return;
  }
  const MatmulEpilogue& e = args.epi;
  const auto th = wgmma_epi_thread<Traits>(args, tile, consumer, warp, lane, interior);
  const bool has_res = th.res != nullptr;
  WgmmaEpiInputs in, next;
  wgmma_epi_load<Traits>(in, args, th, 0, 0);
#pragma unroll 1
  for (int q = 0; q < kSteps; ++q) {
    const int mb = q / kPieces, piece = q % kPieces;
    const bool deferred = kFirstDeferred < kPieces && piece >= kFirstDeferred;
    const uint32_t slot = deferred ? buf + (piece - kFirstDeferred) * kMatmulWgmmaEpilogueBytesPerWarp : buf;
    // Ping-pong: half 0 reads `in` while half 1's loads go to `next`; half 1 reads `next` while the
    // next step's half 0 loads go to `in` (no copies between the two).
    wgmma_epi_load<Traits>(next, args, th, q, 1);
    wgmma_fused_half<Traits, 0>(acc, e, in, has_res, q, lane, slot);
    if (q + 1 < kSteps) wgmma_epi_load<Traits>(in, args, th, q + 1, 0);
    wgmma_fused_half<Traits, 1>(acc, e, next, has_res, q, lane, slot);
    __syncwarp();
    if (deferred) continue;  // wgmma_consumer_overlap stores it later
    if (interior)
      wgmma_flush_piece<Traits, false>(args, tile, consumer, warp, lane, mb, piece, buf);
    else
      wgmma_flush_piece<Traits, true>(args, tile, consumer, warp, lane, mb, piece, buf);
    __syncwarp();  // the next piece's stmatrix overwrites the buffer
  }
}

// kEpilogue kernels, at the start of a tile's mainloop: asks L2 for the tile's residual rows and bias
// slice, so that the epilogue's loads (wgmma_epi_load, issued only half a piece ahead) find them there
// rather than in DRAM. Per consumer warp: its 16 rows of each m64 block, lane l taking row l % 16 and
// half l / 16 of the tile's columns, one prefetch per 128 bytes; warp 0 of consumer 0 the bias.
// Contiguous rows and bias only (other layouts are simply not prefetched); nothing past M or N.
template <class Traits>
__device__ __forceinline__ void wgmma_epi_prefetch(const WgmmaArgs<typename Traits::elem_t>& args,
                                                   const WgmmaTile& tile, int consumer) {
  if constexpr (Traits::kEpilogue) {
    using T = typename Traits::elem_t;
    const MatmulEpilogue& e = args.epi;
    const int warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
    constexpr int kHalfCols = Traits::kBN / 2, kLineElems = 128 / static_cast<int>(sizeof(T));
    if (e.residual != nullptr && e.residual_col_stride == 1 && !e.out_fp32) {  // 16-bit rows (out_fp32: fp32)
      const int32_t col = tile.n0 + (lane / 16) * kHalfCols;
      const T* base = static_cast<const T*>(e.residual) + static_cast<int64_t>(tile.z) * e.residual_batch_stride;
#pragma unroll
      for (int mb = 0; mb < Traits::kMBlocks; ++mb) {
        const int32_t row = tile.m0 + consumer * Traits::kWgRows + 64 * mb + 16 * warp + lane % 16;
        if (row >= args.m) continue;
        const T* p = base + row * e.residual_row_stride + col;
#pragma unroll
        for (int c = 0; c < kHalfCols; c += kLineElems)
          if (col + c < args.n) asm volatile("prefetch.global.L2 [%0];" ::"l"(p + c));
      }
    }
    if (e.bias != nullptr && e.bias_stride == 1 && consumer == 0 && warp == 0) {
      const int64_t bytes = e.bias_dtype == DType::kFloat32 ? 4 : 2;
      const int32_t col = tile.n0 + lane * static_cast<int32_t>(128 / bytes);
      if (lane * 128 < Traits::kBN * bytes && col < args.n)
        asm volatile("prefetch.global.L2 [%0];" ::"l"(static_cast<const char*>(e.bias) + col * bytes));
    }
  }
}

// The tile's epilogue: the fused one in kEpilogue kernels, else the plain stores.
template <class Traits, int kPiece0 = 0, int kPiece1 = Traits::kBN / 64>
__device__ __forceinline__ void wgmma_epilogue(float (&acc)[Traits::kMBlocks][Traits::kAccRegs],
                                               const WgmmaArgs<typename Traits::elem_t>& args, const WgmmaTile& tile,
                                               uint32_t smem, int consumer) {
  const int warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
  const uint32_t epi_buf = smem + Traits::kEpiOffset + (consumer * 4 + warp) * Traits::kEpiWarpBytes;
  const bool interior = tile.m0 + Traits::kBM <= args.m && tile.n0 + Traits::kBN <= args.n;
  if constexpr (Traits::kEpilogue) {
    static_assert(kPiece0 == 0 && kPiece1 == Traits::kBN / 64, "the fused epilogue stores whole tiles");
    wgmma_store_fused<Traits>(acc, args, tile, consumer, warp, lane, epi_buf, interior);
  } else if (interior) {
    wgmma_store<Traits, false, kPiece0, kPiece1>(acc, args, tile, consumer, warp, lane, epi_buf);
  } else {
    wgmma_store<Traits, true, kPiece0, kPiece1>(acc, args, tile, consumer, warp, lane, epi_buf);
  }
}

// Timeline experiment (matmul_wgmma_timeline.cuh): stamps the moment the next tile's first k-tile
// is in shared memory (waiting on the phase the mainloop then finds complete).
template <class Traits>
__device__ __forceinline__ void wgmma_timeline_data(uint32_t smem, int stage, uint32_t phase, int consumer, int tile_no) {
  if constexpr (wgmma_timeline::kOn) {
    sm90::mbar_wait(smem + Traits::kBarOffset + 8 * stage, phase);
    wgmma_timeline::event(consumer, tile_no, wgmma_timeline::kData);
  }
}

// The consumers' accumulators start at zero (the first k16 step overwrites them anyway; an empty
// K range, e.g. a split-K CTA without k-tiles, contributes these zeros).
template <class Traits>
__device__ __forceinline__ void wgmma_zero_accumulators(float (&acc)[Traits::kMBlocks][Traits::kAccRegs]) {
#pragma unroll
  for (int mb = 0; mb < Traits::kMBlocks; ++mb)
#pragma unroll
    for (int i = 0; i < Traits::kAccRegs; ++i) acc[mb][i] = 0.f;
}

// Persistent consumer (kSplitK == 1): every unit of this CTA's share, one tile each.
template <class Traits>
__device__ __forceinline__ void wgmma_consumer(const WgmmaArgs<typename Traits::elem_t>& args, uint32_t smem,
                                               uint32_t rank, int32_t first_unit, int32_t unit_step, int consumer) {
  constexpr int kMBlocks = Traits::kMBlocks;
  const int lane = threadIdx.x % 32;
  float acc[kMBlocks][Traits::kAccRegs];
  wgmma_zero_accumulators<Traits>(acc);

  int stage = 0;
  uint32_t phase = 0;
  const WgmmaKRange range = wgmma_k_range<Traits>(args.k_tiles, rank);
  int tile_no = 0;  // for the timeline experiment only
  for (int32_t unit = first_unit; unit < args.total_units; unit += unit_step, ++tile_no) {
    const WgmmaTile tile = wgmma_tile<Traits>(unit, args, rank);
    wgmma_timeline_data<Traits>(smem, stage, phase, consumer, tile_no);
    wgmma_epi_prefetch<Traits>(args, tile, consumer);
    wgmma_mainloop<Traits>(acc, smem, consumer, lane, range, stage, phase);
    wgmma_timeline::event(consumer, tile_no, wgmma_timeline::kMainloopDone);
    // Epilogue. The producer is already filling the ring with the next tile's k-tiles meanwhile.
    wgmma_epilogue<Traits>(acc, args, tile, smem, consumer);
    wgmma_timeline::event(consumer, tile_no, wgmma_timeline::kEpilogueDone);
  }
  wgmma_timeline::stamp_exit(consumer);
}

// Persistent consumer with the overlapped epilogue (kDeferredPieces > 0). After a tile's last
// k-tile the consumer stores the first BN / 64 - kDeferredPieces 64-column pieces of its rows as
// wgmma_consumer does, and only converts the last kDeferredPieces pieces into the warp's slots of
// shared memory (one 2 KB slot each; no registers are held). Their global stores wait until the
// next tile's first two k-tiles are issued (wgmma_mainloop's hook), so that the tensor cores have
// work while they drain. A tile followed by a tile of one k-tile has its deferred pieces stored
// after that tile's mainloop instead, and the CTA's last tile right after they are staged: every
// tile, the last included, goes through the same epilogue code. (The last tile used to be stored
// whole by a separate epilogue, code that ran once per CTA and always from a cold instruction cache:
// ncu's stall sampling at 4096^3 put 5% of the warps' samples on instruction fetch in per-tile code.)
template <class Traits>
__device__ __forceinline__ void wgmma_consumer_overlap(const WgmmaArgs<typename Traits::elem_t>& args, uint32_t smem,
                                                       uint32_t rank, int32_t first_unit, int32_t unit_step,
                                                       int consumer) {
  constexpr int kMBlocks = Traits::kMBlocks, kPieces = Traits::kBN / 64, kDeferred = Traits::kDeferredPieces;
  constexpr int kFirstDeferred = kPieces - kDeferred;
  static_assert(kMBlocks == 1, "the deferred pieces are pieces of the one m64 block");
  const int warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
  const uint32_t slots = smem + Traits::kEpiOffset + (consumer * 4 + warp) * Traits::kEpiWarpBytes;
  float acc[kMBlocks][Traits::kAccRegs];
  wgmma_zero_accumulators<Traits>(acc);

  int32_t held_unit = -1;  // the unit whose deferred pieces wait in the slots; -1: none
  auto flush = [&]() {
    if (held_unit >= 0) {
      // Opaque copies: the stores' address arithmetic stays here instead of being hoisted out of
      // the k-loop (where it would hold registers through every k-tile).
      int32_t u = held_unit;
      uint32_t s = slots;
      int c = consumer, w = warp, l = lane;
      asm volatile("" : "+r"(u), "+r"(s), "+r"(c), "+r"(w), "+r"(l));
      const WgmmaTile tile = wgmma_tile<Traits>(u, args, rank);
      const bool interior = tile.m0 + Traits::kBM <= args.m && tile.n0 + Traits::kBN <= args.n;
#pragma unroll
      for (int d = 0; d < kDeferred; ++d) {
        if (interior)
          wgmma_flush_piece<Traits, false>(args, tile, c, w, l, 0, kFirstDeferred + d, s + d * 2048);
        else
          wgmma_flush_piece<Traits, true>(args, tile, c, w, l, 0, kFirstDeferred + d, s + d * 2048);
      }
      __syncwarp();  // every lane has read the slots before they are written again
      held_unit = -1;
    }
  };

  int stage = 0;
  uint32_t phase = 0;
  const WgmmaKRange range = wgmma_k_range<Traits>(args.k_tiles, rank);
  int tile_no = 0;  // for the timeline experiment only
  for (int32_t unit = first_unit; unit < args.total_units; unit += unit_step, ++tile_no) {
    wgmma_timeline_data<Traits>(smem, stage, phase, consumer, tile_no);
    if constexpr (Traits::kEpilogue) wgmma_epi_prefetch<Traits>(args, wgmma_tile<Traits>(unit, args, rank), consumer);
    wgmma_mainloop<Traits>(acc, smem, consumer, lane, range, stage, phase, flush);
    wgmma_timeline::event(consumer, tile_no, wgmma_timeline::kMainloopDone);
    flush();  // a tile of one k-tile never ran the hook
    const WgmmaTile tile = wgmma_tile<Traits>(unit, args, rank);
    if constexpr (Traits::kEpilogue) {
      // The fused epilogue on every piece; the last kDeferred are only staged into the slots.
      const bool interior = tile.m0 + Traits::kBM <= args.m && tile.n0 + Traits::kBN <= args.n;
      wgmma_store_fused<Traits, kFirstDeferred>(acc, args, tile, consumer, warp, lane, slots, interior);
    } else {
      if constexpr (kFirstDeferred > 0) wgmma_epilogue<Traits, 0, kFirstDeferred>(acc, args, tile, smem, consumer);
#pragma unroll
      for (int d = 0; d < kDeferred; ++d)
        wgmma_stage_piece<Traits>(acc, 0, kFirstDeferred + d, lane, slots + d * 2048);
    }
    __syncwarp();  // the slots are written before any lane reads them back (in flush)
    // out_fp32 tiles are stored whole by wgmma_store_fused: nothing waits in the slots.
    held_unit = Traits::kEpilogue && args.epi.out_fp32 ? -1 : unit;
    if (unit + unit_step >= args.total_units) flush();  // the CTA's last tile: nothing to overlap with
    wgmma_timeline::event(consumer, tile_no, wgmma_timeline::kEpilogueDone);
  }
  wgmma_timeline::stamp_exit(consumer);
}

// Split-K consumer (one unit per cluster; see the top of this file). Every thread of the cluster
// meets twice at cluster_sync: here, and in the producer warpgroup's branch of the kernel.
template <class Traits>
__device__ __forceinline__ void wgmma_consumer_split(const WgmmaArgs<typename Traits::elem_t>& args, uint32_t smem,
                                                     uint32_t rank, int32_t unit, int consumer) {
  constexpr int kMBlocks = Traits::kMBlocks, kF4PerBlock = Traits::kAccRegs / 4;
  const int lane = threadIdx.x % 32;
  float acc[kMBlocks][Traits::kAccRegs];
  wgmma_zero_accumulators<Traits>(acc);

  const bool active = unit < args.total_units;  // always, with the launcher's grid of one cluster per unit
  const WgmmaTile tile = wgmma_tile<Traits>(unit, args, rank);
  if (active) {
    if (rank == 0) wgmma_epi_prefetch<Traits>(args, tile, consumer);
    int stage = 0;
    uint32_t phase = 0;
    wgmma_mainloop<Traits>(acc, smem, consumer, lane, wgmma_k_range<Traits>(args.k_tiles, rank), stage, phase);
  }
  // This thread's float4 f of the partial lives at red + f * 2048 (fragment order, see the top).
  const uint32_t red = smem + Traits::kRedOffset + consumer * Traits::kRedConsumerBytes + (threadIdx.x % 128) * 16;
  if (rank != 0) {
#pragma unroll
    for (int f = 0; f < Traits::kAccF4; ++f) {
      const float* v = &acc[f / kF4PerBlock][4 * (f % kF4PerBlock)];
      sm90::sts_f32x4(red + f * 2048, v[0], v[1], v[2], v[3]);
    }
  }
  __syncwarp();
  sm90::cluster_sync();  // (1) release / acquire: every peer's partial is visible to the leader
  if (rank == 0 && active) {
#pragma unroll 1
    for (int r = 1; r < Traits::kSplitK; ++r) {  // rank order: the same sum whatever the timing
      const uint32_t peer = sm90::mapa_shared(red, static_cast<uint32_t>(r));
#pragma unroll
      for (int f = 0; f < Traits::kAccF4; ++f) {
        const float4 v = sm90::ld_cluster_f32x4(peer + f * 2048);
        float* a = &acc[f / kF4PerBlock][4 * (f % kF4PerBlock)];
        a[0] += v.x;
        a[1] += v.y;
        a[2] += v.z;
        a[3] += v.w;
      }
    }
    wgmma_epilogue<Traits>(acc, args, tile, smem, consumer);
  }
  __syncwarp();
  sm90::cluster_sync();  // (2) the leader has read every partial: the peers may exit
}

// ---- kernel ----------------------------------------------------------------------------------------

template <class Traits>
__global__ void __launch_bounds__(Traits::kThreads, 1)
    matmul_wgmma_kernel(const __grid_constant__ CUtensorMap tmap_a, const __grid_constant__ CUtensorMap tmap_b,
                        const WgmmaArgs<typename Traits::elem_t> args) {
  // Only the sm_90a image has a body: wgmma, setmaxnreg and multicast copies exist nowhere else,
  // and the dispatch launches this kernel only on a compute-capability-9.0 device.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  wgmma_timeline::entry();
  extern __shared__ __align__(1024) unsigned char matmul_wgmma_smem[];
  // The runtime does not promise 1024-byte alignment of dynamic shared memory: align by hand (the
  // config's shared-memory size includes the slack).
  const uint32_t smem = (sm90::smem_u32(matmul_wgmma_smem) + 1023u) & ~1023u;
  constexpr int kMulticastSize = Traits::kMulticastSize, kClusterSize = Traits::kClusterSize;
  // Broadcast from lane 0: the compiler then knows the value is warp-uniform, keeps what derives
  // from it (the consumer's shared addresses, its wgmma descriptors) in uniform registers.
  const int warpgroup = __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x / 128), 0);

  if (threadIdx.x == 0) wgmma_init_ring<Traits>(smem, &tmap_a, &tmap_b);
  // No copy may signal a barrier (ours or, multicast, the peer's) before both CTAs initialized theirs.
  // (A split-K cluster touches its peers only after the first cluster_sync of wgmma_consumer_split.)
  if constexpr (kMulticastSize > 1) {
    __syncwarp();  // warp 0 reconverges after thread 0's init: the cluster barrier is .aligned
    sm90::cluster_sync();
  } else {
    __syncthreads();
  }

  const uint32_t rank = kClusterSize > 1 ? sm90::cluster_ctarank() : 0u;
  const int32_t first_unit = static_cast<int32_t>(blockIdx.x) / kClusterSize;
  const int32_t unit_step = static_cast<int32_t>(gridDim.x) / kClusterSize;

  if (warpgroup == 0) {
    if constexpr (Traits::kConsumers > 1) sm90::setmaxnreg_dec<Traits::kProducerRegs>();
    if (threadIdx.x == 0) wgmma_producer<Traits>(&tmap_a, &tmap_b, args, smem, rank, first_unit, unit_step);
    if constexpr (Traits::kSplitK > 1) {  // the two cluster barriers of wgmma_consumer_split
      __syncwarp();
      sm90::cluster_sync();
      sm90::cluster_sync();
    }
  } else {
    if constexpr (Traits::kConsumers > 1) sm90::setmaxnreg_inc<Traits::kConsumerRegs>();
    if constexpr (Traits::kSplitK > 1)
      wgmma_consumer_split<Traits>(args, smem, rank, first_unit, warpgroup - 1);
    else if constexpr (Traits::kOverlapEpilogue)
      wgmma_consumer_overlap<Traits>(args, smem, rank, first_unit, unit_step, warpgroup - 1);
    else
      wgmma_consumer<Traits>(args, smem, rank, first_unit, unit_step, warpgroup - 1);
  }
  // A CTA must not exit while its cluster peer may still multicast into its shared memory or arrive
  // on its barriers: every such access happens before the peer reaches this barrier.
  if constexpr (kMulticastSize > 1) {
    __syncwarp();
    sm90::cluster_sync();
  }
#endif
}

// ---- host: tensor maps and launch -------------------------------------------------------------------

// The tensor map of one operand seen as [batch][outer][inner], inner contiguous; strides in
// elements of kElem bytes. A dim of size 1 gets a substitute stride (any multiple of 16 bytes is as
// good as another there); every other stride must be a positive multiple of 16 bytes (wgmma_a_ok and
// wgmma_b_layout in matmul_launch.h check that first). False if the driver rejects the map.
inline bool wgmma_operand_map(CUtensorMap* map, CUtensorMapDataType dtype, const void* ptr, int64_t inner,
                              int64_t outer, int64_t batch, int64_t outer_stride, int64_t batch_stride,
                              uint32_t box_inner, uint32_t box_outer, int64_t kElem = 2) {
  constexpr int64_t kMaxStride = int64_t{1} << 40;
  const int64_t stride1 = outer == 1 ? (inner * kElem + 15) / 16 * 16 : outer_stride * kElem;
  int64_t stride2 = batch == 1 ? stride1 * outer : batch_stride * kElem;
  if (batch == 1 && stride2 >= kMaxStride) stride2 = stride1;
  if (stride1 <= 0 || stride1 % 16 != 0 || stride1 >= kMaxStride || stride2 <= 0 || stride2 % 16 != 0 ||
      stride2 >= kMaxStride)
    return false;
  tma::TiledMap3d key{};
  key.dtype = dtype;
  key.address = ptr;
  key.dims[0] = static_cast<uint64_t>(inner);
  key.dims[1] = static_cast<uint64_t>(outer);
  key.dims[2] = static_cast<uint64_t>(batch);
  key.strides[0] = static_cast<uint64_t>(stride1);
  key.strides[1] = static_cast<uint64_t>(stride2);
  key.box[0] = box_inner;
  key.box[1] = box_outer;
  key.box[2] = 1;
  return tma::encode_tiled(map, key);
}

// CTAs to launch on the current device: one per SM, or per SM that a cluster can occupy
// (cudaOccupancyMaxActiveClusters); read once per device and kernel instantiation.
template <class Traits, typename Kernel>
int wgmma_max_ctas(Kernel kernel) {
  static std::atomic<int> cache[kMaxCachedDevices] = {};
  return per_device(cache, [&](int dev) {
    int sms = 0;
    AITER_LITE_GPU_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    if constexpr (Traits::kMulticastSize == 1) {
      return sms;
    } else {
      constexpr int kSize = Traits::kMulticastSize;
      const int clusters = max_active_clusters(reinterpret_cast<const void*>(kernel), Traits::kThreads,
                                               Traits::kSmemBytes, kSize, sms);
      // 0 would mean the cluster cannot be scheduled at all; sms / kSize keeps the launch valid.
      return (clusters > 0 ? clusters : sms / kSize) * kSize;
    }
  });
}

// Builds both tensor maps and, with `launch`, launches. False (nothing launched) if a map is
// rejected by the driver.
template <class Traits>
bool wgmma_launch(const MatmulParams& p, gpuStream_t stream, bool launch) {
  using T = typename Traits::elem_t;
  constexpr CUtensorMapDataType kDtype =
      std::is_same<T, half_t>::value ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  const bool a_batched = p.batch > 1 && p.a_batch_stride != 0;
  const bool b_batched = p.batch > 1 && p.b_batch_stride != 0;
  CUtensorMap map_a, map_b;
  const bool a_ok =
      Traits::kAKMajor
          ? wgmma_operand_map(&map_a, kDtype, p.a, p.k, p.m, a_batched ? p.batch : 1, p.a_row_stride,
                              p.a_batch_stride, 64, Traits::kARowsPerCta)
          : wgmma_operand_map(&map_a, kDtype, p.a, p.m, p.k, a_batched ? p.batch : 1, p.a_col_stride,
                              p.a_batch_stride, 64, 64);
  if (!a_ok) return false;
  const bool b_ok =
      Traits::kBKMajor
          ? wgmma_operand_map(&map_b, kDtype, p.b, p.k, p.n, b_batched ? p.batch : 1, p.b_col_stride,
                              p.b_batch_stride, 64, Traits::kBN / Traits::kCluster)
          : wgmma_operand_map(&map_b, kDtype, p.b, p.n, p.k, b_batched ? p.batch : 1, p.b_row_stride,
                              p.b_batch_stride, 64, Traits::kBSplitRows ? 64 / Traits::kCluster : 64);
  if (!b_ok) return false;
  // A config that loads fewer rows of A than its tile has computes only those rows (wgmma_choose_config and
  // plan_wgmma keep it to such A; a forced one falls back like a rejected map).
  if (Traits::kALoadRows < Traits::kBM && p.m > Traits::kALoadRows) return false;

  const int64_t tiles_m = (p.m + Traits::kBM - 1) / Traits::kBM, tiles_n = (p.n + Traits::kBN - 1) / Traits::kBN;
  const int64_t units_m = (tiles_m + Traits::kCluster - 1) / Traits::kCluster;
  const int64_t units_n = (tiles_n + Traits::kClusterN - 1) / Traits::kClusterN;
  const int64_t units = units_m * units_n * p.batch;
  // More than 2^31 - 1 tiles (or split-K CTAs): not worth a 64-bit scheduler.
  if (units * Traits::kSplitK > kMaxDim) return false;
  if (!launch) return true;

  WgmmaArgs<T> args = make_wgmma_args<T>(p, Traits::kBK, units_n, units_m, units, a_batched, b_batched);
  // 16-byte chunks: 8 16-bit outputs, or 4 fp32 ones (out_fp32, wgmma_store_f32).
  args.out_vec = p.epilogue.out_fp32 ? out_vec_ok(p, 4, 4) : out_vec_ok(p, 8, sizeof(T));
  if constexpr (Traits::kEpilogue) args.epi = p.epilogue;

  auto kernel = matmul_wgmma_kernel<Traits>;
  ensure_dynamic_smem<Traits>(kernel);
  // Persistent: at most one CTA per SM (cluster slot), each looping over units. Split-K: one cluster
  // per unit (the kernel runs exactly one unit per cluster; wgmma_consumer_split).
  int64_t clusters = units;
  if constexpr (Traits::kSplitK == 1)
    clusters = std::min<int64_t>(units, wgmma_max_ctas<Traits>(kernel) / Traits::kMulticastSize);
  cudaLaunchConfig_t cfg{};
  cudaLaunchAttribute attr[1];
  cfg.gridDim = dim3(static_cast<unsigned>(clusters * Traits::kClusterSize), 1, 1);
  cfg.blockDim = dim3(Traits::kThreads, 1, 1);
  cfg.dynamicSmemBytes = Traits::kSmemBytes;
  cfg.stream = stream;
  if constexpr (Traits::kClusterSize > 1) {
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = Traits::kClusterSize;
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
  }
  void* kernel_args[] = {&map_a, &map_b, &args};
  AITER_LITE_GPU_CHECK(cudaLaunchKernelExC(&cfg, reinterpret_cast<const void*>(kernel), kernel_args));
  AITER_LITE_LAUNCH_CHECK();
  wgmma_timeline::after_launch(static_cast<int>(cfg.gridDim.x), stream);
  if constexpr (wgmma_timeline::kOn) AITER_LITE_LAUNCH_CHECK();
  return true;
}

// The kernels of this shard's items only (matmul_launch.h, wgmma_item); the dispatch (wgmma_cuda)
// never asks for another's. A call with an epilogue (p.epilogue not the identity) runs the kEpilogue
// kernel of the config, which exists for the configs wgmma_has_kernel names.
template <typename T, int kShard, int kShards>
bool wgmma_shard_cuda(const MatmulParams& p, int config, bool a_k_major, bool b_k_major, gpuStream_t stream,
                      bool launch) {
  bool done = false;
  const bool epilogue = !p.epilogue.is_identity();
  with_config<MatmulPath::kWgmma16>(config, [&](auto index) {
    constexpr int kConfig = decltype(index)::value;
    with_bool(a_k_major, [&](auto a_k) {
      constexpr bool kAKMajor = decltype(a_k)::value;
      with_bool(b_k_major, [&](auto b_k) {
        constexpr bool kBKMajor = decltype(b_k)::value;
        with_bool(epilogue, [&](auto epi) {
          constexpr bool kEpi = decltype(epi)::value;
          if constexpr (!wgmma_has_kernel(kConfig, kAKMajor, kBKMajor, kEpi))
            invalid("no wgmma kernel for config " + std::to_string(config) + " with this layout and epilogue");
          else if constexpr (in_shard(wgmma_item(kConfig, kAKMajor, kBKMajor, kEpi), kShard, kShards))
            done = wgmma_launch<WgmmaMatmulTraits<T, kConfig, kBKMajor, kAKMajor, kEpi>>(p, stream, launch);
          else
            invalid("wgmma config " + std::to_string(config) + " asked of the wrong shard");
        });
      });
    });
  });
  return done;
}

}  // namespace matmul_detail
}  // namespace aiter_lite

#endif  // AITER_LITE_CUDA
