// Tile-config table of the CUDA/HIP matmul kernels (csrc/kernels/matmul.cu). Plain C++17: no CUDA,
// no torch. MatmulParams::config indexes kMatmulConfigs; -1 asks for the path's default.
//
// aiter_lite/tuning/matmul_configs.py mirrors this table for the Python tile planner, and
// tests/test_matmul_configs.py parses the lines between the BEGIN/END markers below with a regex
// and checks that both agree: keep one entry per line, in the form shown.
#pragma once
#include <cstdint>

namespace aiter_lite {

// Which kernel a config belongs to.
//   kSimt:      register-blocked FFMA kernel (strict fp32; also fp16/bf16 with variant kTiled),
//               fp32 in shared memory, two shared-memory stages (`stages` must be 2).
//               Threads of a warp form a 4 (M) x 8 (N) grid, so the thread tile is
//               (BM / warps_m / 4) x (BN / warps_n / 8), in 4x4 sub-tiles.
//   kTensorCore16:   mma.sync m16n8k16 (fp16 and bf16 inputs, fp32 accumulators).
//   kTensorCoreTf32: mma.sync m16n8k8 tf32 (fp32 inputs with allow_tf32).
//               Tensor-core warp tile (BM / warps_m) x (BN / warps_n) in 16x8 mma tiles;
//               `stages` cp.async shared-memory stages.
//   kWgmma16:   Hopper (sm_90a) wgmma m64nNk16 kernel for fp16/bf16 (csrc/kernels/matmul_wgmma.cuh):
//               TMA loads into a `stages`-deep ring of 128-byte-swizzled shared tiles, one producer
//               warpgroup plus warps_m / 4 consumer warpgroups (warps_n must be 1), each consumer
//               owning BM / (warps_m / 4) rows (64 or 128) x BN; BK must be 64 (one 128-byte
//               swizzle row of 16-bit elements). Threads = 32 * warps_m + 128 (the producer).
//               cluster_m = 2 runs pairs of CTAs on vertically adjacent tiles as a cluster that
//               loads each B tile once and multicasts it to both. split_k = 2 (or 4) runs that many
//               CTAs as a cluster on one output tile, each over its share of the k-tiles; the
//               leader adds the others' fp32 partials through distributed shared memory (BM x BN x 4
//               bytes of extra shared memory per CTA) and stores the tile. Such configs launch one
//               cluster per tile (not persistent); split_k > 1 needs cluster_m == 1.
//               cluster_n = 2 does the same along N: horizontally adjacent tiles share the A tile,
//               each CTA loads half of its rows and multicasts them. cluster_m = cluster_n = 2 runs
//               2 x 2 clusters that multicast both operands (a quarter fewer loads per CTA than
//               cluster_m = 2 alone; what rows that are not 128-byte aligned need, see matmul.md).
//               epilogue_overlap = d > 0 (persistent configs): each consumer warp stages the last d
//               64-column pieces of a finished tile in d 2 KB shared slots and stores them only after
//               issuing the next tile's first two k-tiles, so those stores drain while the tensor
//               cores work (the other pieces are stored at once, as usual).
//   kWgmmaTf32: Hopper (sm_90a) wgmma m64nNk8 tf32 kernel for fp32 inputs with allow_tf32
//               (csrc/kernels/matmul_wgmma_tf32.cuh). tf32 wgmma reads shared memory K-major only, so
//               the kernel computes out^T = b^T a^T: wgmma's N is the tile's BM (64..256 rows of out,
//               the K-major A tile as TMA loads it) and each of the warps_m / 4 consumer warpgroups
//               owns 64 columns of out (BN = 64 * warps_m / 4; warps_n must be 1), whose b^T rows
//               come from registers (N-contiguous b) or shared memory (K-contiguous b). BK must be 32
//               (one 128-byte swizzle row of fp32). Threads = 32 * warps_m + 128 (the producer).
enum class MatmulPath : int32_t { kSimt = 0, kTensorCore16 = 1, kTensorCoreTf32 = 2, kWgmma16 = 3, kWgmmaTf32 = 4 };

struct MatmulTileConfig {
  MatmulPath path;
  int32_t bm, bn, bk;         // block tile
  int32_t warps_m, warps_n;   // warp grid of the block (threads = 32 * warps_m * warps_n; see kWgmma16)
  int32_t stages;             // shared-memory pipeline depth
  int32_t cluster_m = 1;      // kWgmma16 only: CTAs per cluster along M (1 or 2)
  int32_t split_k = 1;        // kWgmma16 only: CTAs per cluster along K (1, 2 or 4), see above
  int32_t epilogue_overlap = 0;  // kWgmma16 only: 64-column pieces per warp whose stores wait, see above
  int32_t cluster_n = 1;      // kWgmma16 only: CTAs per cluster along N (1 or 2; multicast A), see above
  // kWgmma16 only: rows of A each k-tile loads (0: bm). Fewer (32) for A of at most that many rows: the stage
  // holds only them, so more stages of B fit; the consumer's m64 wgmma reads the rows past them from whatever
  // follows in shared memory, and those rows of the tile are never stored (the planner and the launcher keep
  // such a config to A with at most a_rows rows).
  int32_t a_rows = 0;
};

// clang-format off
// BEGIN MATMUL CONFIG TABLE
inline constexpr MatmulTileConfig kMatmulConfigs[] = {
    /*  0 */ {MatmulPath::kSimt,            128, 128,  8, 4, 2, 2},  // 256 thr, 8x8 per thread, 2 blocks/SM
    /*  1 */ {MatmulPath::kSimt,            128, 256, 16, 4, 2, 2},  // 256 thr, 8x16 per thread
    /*  2 */ {MatmulPath::kSimt,            128, 256,  8, 4, 2, 2},  // 256 thr, 8x16 per thread
    /*  3 */ {MatmulPath::kSimt,            256, 128,  8, 4, 2, 2},  // 256 thr, 16x8 per thread
    /*  4 */ {MatmulPath::kSimt,             64, 128, 16, 4, 2, 2},  // 256 thr, 4x8 per thread: small grids
    /*  5 */ {MatmulPath::kTensorCore16,    128, 256, 64, 2, 4, 3},  // 8 warps, 64x64 warp tile, 144 KB
    /*  6 */ {MatmulPath::kTensorCore16,    128, 256, 32, 2, 4, 4},  // 8 warps, 64x64
    /*  7 */ {MatmulPath::kTensorCore16,    256, 128, 32, 4, 2, 3},  // 8 warps, 64x64
    /*  8 */ {MatmulPath::kTensorCore16,    128, 128, 32, 2, 2, 4},  // 4 warps, 64x64, 2 blocks/SM
    /*  9 */ {MatmulPath::kTensorCore16,     64, 128, 32, 2, 2, 4},  // 4 warps, 32x64: small grids
    /* 10 */ {MatmulPath::kTensorCoreTf32,  128, 256, 32, 2, 4, 3},  // 8 warps, 64x64, 144 KB
    /* 11 */ {MatmulPath::kTensorCoreTf32,  128, 128, 32, 2, 2, 3},  // 4 warps, 64x64, 96 KB: 2 blocks/SM (H100)
    /* 12 */ {MatmulPath::kTensorCoreTf32,   64, 128, 32, 2, 2, 4},  // 4 warps, 32x64, 96 KB: small grids
    /* 13 */ {MatmulPath::kWgmma16,        128, 256, 64, 8, 1, 4, 2},  // 2 consumers x 64x256, 210 KB, 2-CTA cluster
    /* 14 */ {MatmulPath::kWgmma16,        128, 256, 64, 8, 1, 4},  // as 13 without the cluster
    /* 15 */ {MatmulPath::kWgmma16,        128, 128, 64, 8, 1, 6},  // 2 consumers x 64x128, 210 KB: medium grids
    /* 16 */ {MatmulPath::kWgmma16,         64,  64, 64, 4, 1, 12},  // 1 consumer 64x64, 202 KB: small M / grids
    /* 17 */ {MatmulPath::kWgmma16,        128, 192, 64, 8, 1, 5},  // 2 consumers x 64x192, 218 KB: waves (3000^3)
    /* 18 */ {MatmulPath::kWgmma16,        128,  64, 64, 8, 1, 8},  // 2 consumers x 64x64, 210 KB: M <= 128, wide N
    /* 19 */ {MatmulPath::kWgmma16,         64,  64, 64, 4, 1, 12, 1, 2},  // as 16, split-K 2, 218 KB: tiny M
    /* 20 */ {MatmulPath::kWgmma16,        128, 128, 64, 8, 1, 4, 1, 2},  // 2 x 64x128, split-K 2, 210 KB: few tiles
    /* 21 */ {MatmulPath::kWgmma16,        128, 256, 64, 8, 1, 4, 1, 1, 2},  // as 14, 2 of 4 pieces' stores deferred, 226 KB
    /* 22 */ {MatmulPath::kWgmma16,        128, 192, 64, 8, 1, 5, 1, 1, 1},  // as 17, 1 of 3 pieces' stores deferred
    /* 23 */ {MatmulPath::kWgmmaTf32,      256, 128, 32, 8, 1, 4},  // 2 consumers x 64 cols x 256 rows, 194 KB: large problems
    /* 24 */ {MatmulPath::kWgmmaTf32,      128, 128, 32, 8, 1, 6},  // 2 consumers x 64 x 128, 194 KB: medium grids
    /* 25 */ {MatmulPath::kWgmmaTf32,      192, 128, 32, 8, 1, 5},  // 2 consumers x 64 x 192, 202 KB: waves (3000^3)
    /* 26 */ {MatmulPath::kWgmmaTf32,      128,  64, 32, 4, 1, 8},  // 1 consumer 64 x 128, 194 KB: small grids
    /* 27 */ {MatmulPath::kWgmma16,        128, 256, 64, 8, 1, 4, 2, 1, 0, 2},  // as 14 in 2 x 2 clusters (both operands multicast)
    /* 28 */ {MatmulPath::kWgmma16,        128, 192, 64, 8, 1, 5, 2, 1, 0, 2},  // as 17 in 2 x 2 clusters
    /* 29 */ {MatmulPath::kWgmma16,        128, 256, 64, 8, 1, 4, 2, 1, 2, 2},  // as 21 in 2 x 2 clusters
    /* 30 */ {MatmulPath::kWgmma16,        128, 128, 64, 8, 1, 6, 2, 1, 0, 2},  // as 15 in 2 x 2 clusters
    /* 31 */ {MatmulPath::kWgmma16,         64,  64, 64, 4, 1, 17, 1, 1, 0, 1, 32},  // as 16, 32 rows of A: 17 stages, 214 KB
    /* 32 */ {MatmulPath::kWgmma16,         64, 128, 64, 4, 1, 10, 1, 1, 0, 1, 32},  // 64x128, 32 rows of A: 10 stages, 210 KB
};
// END MATMUL CONFIG TABLE

// Default config of each path, indexed by MatmulPath (the fastest at 4096^3 and 8192^3 on an H100).
// With config -1 the backend starts here and moves to the path's smallest tile when the default
// would give fewer than (SMs / 2) blocks, or to the path's largest tile that fits when the device
// has less shared memory per block than the default needs. kWgmma16 chooses differently (by the
// predicted time of the waves of work units each of its configs gives: wgmma_choose_config in
// csrc/kernels/matmul.cu), and so does kWgmmaTf32 (wgmma_tf32_choose_config); their entries here name
// the config for large problems.
// BEGIN MATMUL DEFAULT CONFIGS
inline constexpr int32_t kMatmulDefaultConfig[] = {
    /* kSimt */ 1,
    /* kTensorCore16 */ 5,
    /* kTensorCoreTf32 */ 10,
    /* kWgmma16 */ 14,
    /* kWgmmaTf32 */ 23,
};
// END MATMUL DEFAULT CONFIGS
// clang-format on

inline constexpr int32_t kMatmulNumConfigs =
    static_cast<int32_t>(sizeof(kMatmulConfigs) / sizeof(kMatmulConfigs[0]));
inline constexpr int32_t kMatmulNumPaths = 5;

// The tensor-core configs compiled for sm_90a. There wgmma runs, and the planner takes mma.sync only
// as its fallback (layouts TMA cannot describe, an epilogue the tf32 wgmma kernel lacks) or when asked
// for it (variant "tensor_core"), with config -1 both times: resolve_config then picks the path's
// default or, on a small grid, its smallest tile (every config fits sm_90's shared memory). Only those
// two configs per path (x 4 operand orientations) are compiled for sm_90a (matmul_tc_kernel in
// csrc/kernels/matmul_tc.cuh): 8 of 20 kernels per 16-bit dtype, 8 of 12 for tf32. sm_80 (and any
// other arch) keeps every config. The planner refuses another explicit config on an sm_90 device of a
// build that holds sm_90a (plan_tensor_core).
constexpr int tc_smallest_config(MatmulPath path) {
  int best = -1;
  for (int i = 0; i < kMatmulNumConfigs; ++i) {
    const MatmulTileConfig& c = kMatmulConfigs[i];
    if (c.path != path) continue;
    if (best < 0 || int64_t{c.bm} * c.bn < int64_t{kMatmulConfigs[best].bm} * kMatmulConfigs[best].bn) best = i;
  }
  return best;
}
constexpr bool tc_config_on_sm90(int config) {
  const MatmulPath path = kMatmulConfigs[config].path;
  return config == kMatmulDefaultConfig[static_cast<int>(path)] || config == tc_smallest_config(path);
}

constexpr bool matmul_path_is_wgmma(MatmulPath path) {
  return path == MatmulPath::kWgmma16 || path == MatmulPath::kWgmmaTf32;
}

// Threads of a block: the warp grid, plus the producer warpgroup of the wgmma kernels.
constexpr int32_t matmul_config_threads(const MatmulTileConfig& c) {
  return 32 * c.warps_m * c.warps_n + (matmul_path_is_wgmma(c.path) ? 128 : 0);
}

// Row padding (in floats) of the SIMT kernel's shared-memory tiles; keeps 16-byte alignment and
// spreads the transposing stores of K-contiguous operands over the banks.
inline constexpr int32_t kMatmulSimtSmemPad = 4;

// Shared memory the wgmma kernel takes beyond its stages: an epilogue buffer of 2 KB per consumer
// warp (16 rows x 64 columns of 16-bit outputs; epilogue_overlap such slots when that is > 1),
// 1024 bytes for its mbarriers and 1024 so that it can align everything to the 128-byte swizzle's
// 1024-byte atoms; split-K configs add BM x BN fp32 (the partial tile a CTA hands to its leader).
inline constexpr int32_t kMatmulWgmmaEpilogueBytesPerWarp = 2048;
inline constexpr int32_t kMatmulWgmmaSmemExtra = 2048;

// Rows of A a kWgmma16 config loads per k-tile: its a_rows, else the whole tile's bm.
constexpr int32_t matmul_config_a_load_rows(const MatmulTileConfig& c) { return c.a_rows > 0 ? c.a_rows : c.bm; }

// Dynamic shared memory of a config, in bytes (elem_bytes: 2 for fp16/bf16, 4 for fp32).
// The SIMT kernel stages fp32 whatever the input type. The tf32 wgmma kernel stores its outputs
// straight from registers: its stages plus kMatmulWgmmaSmemExtra.
constexpr int64_t matmul_config_smem_bytes(const MatmulTileConfig& c, int32_t elem_bytes) {
  return c.path == MatmulPath::kSimt
             ? int64_t{c.stages} * c.bk * ((c.bm + kMatmulSimtSmemPad) + (c.bn + kMatmulSimtSmemPad)) * 4
         : c.path == MatmulPath::kWgmma16
             ? int64_t{c.stages} * c.bk * (matmul_config_a_load_rows(c) + c.bn) * elem_bytes +
                   int64_t{c.warps_m} * c.warps_n * kMatmulWgmmaEpilogueBytesPerWarp *
                       (c.epilogue_overlap > 1 ? c.epilogue_overlap : 1) +
                   kMatmulWgmmaSmemExtra +
                   (c.split_k > 1 ? int64_t{c.bm} * c.bn * 4 : 0)
         : c.path == MatmulPath::kWgmmaTf32
             ? int64_t{c.stages} * c.bk * (c.bm + c.bn) * elem_bytes + kMatmulWgmmaSmemExtra
             : int64_t{c.stages} * c.bk * (c.bm + c.bn) * elem_bytes;
}

}  // namespace aiter_lite
