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
enum class MatmulPath : int32_t { kSimt = 0, kTensorCore16 = 1, kTensorCoreTf32 = 2 };

struct MatmulTileConfig {
  MatmulPath path;
  int32_t bm, bn, bk;         // block tile
  int32_t warps_m, warps_n;   // warp grid of the block (threads = 32 * warps_m * warps_n)
  int32_t stages;             // shared-memory pipeline depth
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
    /* 10 */ {MatmulPath::kTensorCoreTf32,  128, 256, 16, 2, 4, 3},  // 8 warps, 64x64
    /* 11 */ {MatmulPath::kTensorCoreTf32,  128, 128, 16, 2, 2, 4},  // 4 warps, 64x64, 2 blocks/SM
    /* 12 */ {MatmulPath::kTensorCoreTf32,   64, 128, 16, 2, 2, 4},  // 4 warps, 32x64: small grids
};
// END MATMUL CONFIG TABLE

// Default config of each path, indexed by MatmulPath (the fastest at 4096^3 and 8192^3 on an H100).
// With config -1 the backend starts here and moves to the path's smallest tile when the default
// would give fewer than (SMs / 2) blocks, or to the path's largest tile that fits when the device
// has less shared memory per block than the default needs.
// BEGIN MATMUL DEFAULT CONFIGS
inline constexpr int32_t kMatmulDefaultConfig[] = {
    /* kSimt */ 1,
    /* kTensorCore16 */ 5,
    /* kTensorCoreTf32 */ 10,
};
// END MATMUL DEFAULT CONFIGS
// clang-format on

inline constexpr int32_t kMatmulNumConfigs =
    static_cast<int32_t>(sizeof(kMatmulConfigs) / sizeof(kMatmulConfigs[0]));
inline constexpr int32_t kMatmulNumPaths = 3;

constexpr int32_t matmul_config_threads(const MatmulTileConfig& c) { return 32 * c.warps_m * c.warps_n; }

// Row padding (in floats) of the SIMT kernel's shared-memory tiles; keeps 16-byte alignment and
// spreads the transposing stores of K-contiguous operands over the banks.
inline constexpr int32_t kMatmulSimtSmemPad = 4;

// Dynamic shared memory of a config, in bytes (elem_bytes: 2 for fp16/bf16, 4 for fp32).
// The SIMT kernel stages fp32 whatever the input type.
constexpr int64_t matmul_config_smem_bytes(const MatmulTileConfig& c, int32_t elem_bytes) {
  return c.path == MatmulPath::kSimt
             ? int64_t{c.stages} * c.bk * ((c.bm + kMatmulSimtSmemPad) + (c.bn + kMatmulSimtSmemPad)) * 4
             : int64_t{c.stages} * c.bk * (c.bm + c.bn) * elem_bytes;
}

}  // namespace aiter_lite
