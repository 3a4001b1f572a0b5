// Interface between the matmul dispatch (matmul.cu) and the translation units that instantiate the
// kernels (matmul_naive.cu, matmul_simt.cu, matmul_tc_*.cu, matmul_wgmma_*.cu). The kernels are
// split over several files only so that a cold JIT build compiles them in parallel; one file held
// them all and took most of the module's build time.
//
// matmul.cu chooses the path, config and operand orientation, then calls the per-dtype launchers
// declared here. Their definitions (matmul_launch_impl.h) are explicitly instantiated, each in
// exactly one file (listed below): matmul.cu sees declarations only, so it compiles no kernel.
// invalid, path_name and current_device are defined in matmul.cu; the small layout helpers are
// inline here.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <type_traits>

#include "matmul_configs.h"
#include "matmul_params.h"
#include "per_device.h"
#include "port.h"
#include "shard.h"

namespace aiter_lite {
namespace matmul_detail {

// Largest m, n, k and grid.x (2^31 - 1).
inline constexpr int64_t kMaxDim = 0x7fffffff;

// ---- host helpers, defined in matmul.cu ----------------------------------------------------------

// Throws std::invalid_argument("aiter_lite.matmul: " + what).
[[noreturn]] void invalid(const std::string& what);
const char* path_name(MatmulPath path);
int current_device();

// ---- values read once per device ---------------------------------------------------------------

using ::aiter_lite::kMaxCachedDevices;  // per_device.h
using ::aiter_lite::per_device;

#if defined(AITER_LITE_CUDA)
// Clusters of `size` CTAs of `kernel` (`threads` threads, `smem_bytes` of dynamic shared memory, its
// limit already raised) that the current device keeps resident at once; 0 when the query is refused
// (its error is cleared, nothing sticky is left).
inline int max_active_clusters(const void* kernel, int threads, int smem_bytes, int size, int sms) {
  cudaLaunchConfig_t cfg{};
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = static_cast<unsigned>(size);
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cfg.gridDim = dim3(static_cast<unsigned>(sms / size * size), 1, 1);
  cfg.blockDim = dim3(static_cast<unsigned>(threads), 1, 1);
  cfg.dynamicSmemBytes = static_cast<size_t>(smem_bytes);
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  int clusters = 0;
  if (cudaOccupancyMaxActiveClusters(&clusters, kernel, &cfg) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return clusters > 0 ? clusters : 0;
}
#endif

// ---- operand layouts (used by both the dispatch and the launchers) ---------------------------------

inline bool aligned(const void* ptr, int64_t bytes) { return reinterpret_cast<uintptr_t>(ptr) % bytes == 0; }

// One operand seen as [mn, k]: A is (m, k), B is (n, k) with B's strides swapped.
struct OperandLayout {
  const void* ptr;
  int64_t mn_size, k_size;
  int64_t mn_stride, k_stride, batch_stride;
  int64_t elem_bytes;

  bool k_contiguous() const { return k_stride == 1 || k_size == 1; }
  bool mn_contiguous() const { return mn_stride == 1 || mn_size == 1; }
  // Vector access of `vec` elements along the contiguous dim: pointer and all other strides aligned.
  bool vec_ok(int64_t vec, int64_t other_stride) const {
    return aligned(ptr, vec * elem_bytes) && other_stride % vec == 0 && batch_stride % vec == 0;
  }
};

inline OperandLayout operand_a(const MatmulParams& p, int64_t eb) {
  return {p.a, p.m, p.k, p.a_row_stride, p.a_col_stride, p.a_batch_stride, eb};
}
inline OperandLayout operand_b(const MatmulParams& p, int64_t eb) {
  return {p.b, p.n, p.k, p.b_col_stride, p.b_row_stride, p.b_batch_stride, eb};
}

// ---- launchers (matmul_launch_impl.h) ------------------------------------------------------------
// p: one slice of at most 65535 batch entries, with normalized strides (see matmul.cu).

// Naive kernel, any layout.
template <typename T>
void naive_launch(const MatmulParams& p, gpuStream_t stream);
// SIMT kernel with the table's config `config` (a kSimt config), any layout.
template <typename T>
void simt_cuda(const MatmulParams& p, int config, gpuStream_t stream);

extern template void naive_launch<float>(const MatmulParams&, gpuStream_t);       // matmul_naive.cu
extern template void naive_launch<half_t>(const MatmulParams&, gpuStream_t);      // matmul_naive.cu
extern template void naive_launch<bfloat16_t>(const MatmulParams&, gpuStream_t);  // matmul_naive.cu
extern template void simt_cuda<float>(const MatmulParams&, int, gpuStream_t);       // matmul_simt.cu
extern template void simt_cuda<half_t>(const MatmulParams&, int, gpuStream_t);      // matmul_simt.cu
extern template void simt_cuda<bfloat16_t>(const MatmulParams&, int, gpuStream_t);  // matmul_simt.cu

// ---- skinny kernel (matmul_skinny.cuh): A with at most kSkinnyMaxM rows ----------------------------
// Memory-bound products: every dtype, every layout (16-byte vector loads where B's layout allows them,
// element loads otherwise), split-K over a thread block cluster on sm_90. matmul_skinny_*.cu; fp16/bf16
// on CUDA run on the tensor cores where skinny_tc_reads_b (matmul_skinny_tc.cuh).
inline constexpr int64_t kSkinnyMaxM = 16;

// How the skinny kernel streams B (strides normalized, see matmul.cu): along N where b's rows are
// contiguous (b_col_stride == 1), else along K where w.t() is (b_row_stride == 1); "Vec" where the
// pointer, the other stride and the batch stride allow 16-byte loads.
enum class SkinnyBLayout { kNVec, kNAny, kKVec, kKAny };

inline SkinnyBLayout skinny_b_layout(const MatmulParams& p, int64_t elem_bytes) {
  const int64_t vec = 16 / elem_bytes;
  const bool batch_ok = p.b_batch_stride % vec == 0 && aligned(p.b, 16);
  if (p.b_col_stride == 1)
    return batch_ok && p.b_row_stride % vec == 0 ? SkinnyBLayout::kNVec : SkinnyBLayout::kNAny;
  if (p.b_row_stride == 1)
    return batch_ok && p.b_col_stride % vec == 0 ? SkinnyBLayout::kKVec : SkinnyBLayout::kKAny;
  return p.n == 1 ? SkinnyBLayout::kKAny : SkinnyBLayout::kNAny;
}

// A's rows K-contiguous and 16-byte aligned: the kernel stages them with vector loads.
inline bool skinny_x_vec(const MatmulParams& p, int64_t elem_bytes) {
  const int64_t vec = 16 / elem_bytes;
  return p.a_col_stride == 1 && aligned(p.a, 16) && p.a_row_stride % vec == 0 && p.a_batch_stride % vec == 0;
}

// The tensor-core skinny kernel (matmul_skinny_tc.cuh; CUDA, fp16/bf16) reads B: N-contiguous rows at
// any alignment, or K-contiguous rows that are 16-byte aligned. The FFMA kernel takes the rest.
inline bool skinny_tc_reads_b(const MatmulParams& p, int64_t elem_bytes) {
  return p.b_col_stride == 1 || skinny_b_layout(p, elem_bytes) == SkinnyBLayout::kKVec;
}

template <typename T>
void skinny_cuda(const MatmulParams& p, gpuStream_t stream);

extern template void skinny_cuda<float>(const MatmulParams&, gpuStream_t);       // matmul_skinny_fp32.cu
extern template void skinny_cuda<half_t>(const MatmulParams&, gpuStream_t);      // matmul_skinny_fp16.cu
extern template void skinny_cuda<bfloat16_t>(const MatmulParams&, gpuStream_t);  // matmul_skinny_bf16.cu

#if defined(AITER_LITE_CUDA)
// ---- build-time shards (shard.h): which file compiles which tensor-core / wgmma kernel -------------
// The tc and wgmma files are compiled in several shards each (jit_config.json, "shards"). A kernel
// is an item: (ordinal of its config among its path's configs, operand orientations); item i is
// compiled by shard i % N of its file. The dispatchers below pick the shard; each file instantiates
// its *_shard_cuda launcher for its own shard (matmul_launch_impl.h, matmul_wgmma.cuh).
#ifndef AITER_LITE_SHARDS_MATMUL_TC_FP16
#define AITER_LITE_SHARDS_MATMUL_TC_FP16 1
#endif
#ifndef AITER_LITE_SHARDS_MATMUL_TC_BF16
#define AITER_LITE_SHARDS_MATMUL_TC_BF16 1
#endif
#ifndef AITER_LITE_SHARDS_MATMUL_TC_TF32
#define AITER_LITE_SHARDS_MATMUL_TC_TF32 1
#endif
#ifndef AITER_LITE_SHARDS_MATMUL_WGMMA_FP16
#define AITER_LITE_SHARDS_MATMUL_WGMMA_FP16 1
#endif
#ifndef AITER_LITE_SHARDS_MATMUL_WGMMA_BF16
#define AITER_LITE_SHARDS_MATMUL_WGMMA_BF16 1
#endif

// Configs of the same path before `config` in the table (its ordinal within the path).
constexpr int config_ordinal(int config) {
  int ordinal = 0;
  for (int i = 0; i < config && i < kMatmulNumConfigs; ++i) ordinal += kMatmulConfigs[i].path == kMatmulConfigs[config].path;
  return ordinal;
}
constexpr int tc_item(int config, bool a_k_major, bool b_k_major) {
  return config_ordinal(config) * 4 + a_k_major * 2 + b_k_major;
}
// Items: (config, A K-major, B) as before the M-major A kernels existed; M-major A items after all of
// those, then the epilogue kernels.
constexpr int wgmma_config_count() {
  int count = 0;
  for (int i = 0; i < kMatmulNumConfigs; ++i) count += kMatmulConfigs[i].path == MatmulPath::kWgmma16;
  return count;
}
inline constexpr int kWgmmaConfigCount = wgmma_config_count();
constexpr int wgmma_item(int config, bool a_k_major, bool b_k_major, bool epilogue = false) {
  return (epilogue ? 4 * kWgmmaConfigCount : a_k_major ? 0 : 2 * kWgmmaConfigCount) + config_ordinal(config) * 2 +
         b_k_major;
}

template <typename T>
constexpr int tc_shards() {
  return std::is_same<T, half_t>::value       ? AITER_LITE_SHARDS_MATMUL_TC_FP16
         : std::is_same<T, bfloat16_t>::value ? AITER_LITE_SHARDS_MATMUL_TC_BF16
                                              : AITER_LITE_SHARDS_MATMUL_TC_TF32;
}
template <typename T>
constexpr int wgmma_shards() {
  return std::is_same<T, half_t>::value ? AITER_LITE_SHARDS_MATMUL_WGMMA_FP16 : AITER_LITE_SHARDS_MATMUL_WGMMA_BF16;
}

// Tensor-core kernels of shard kShard of kShards (T = float: tf32, kTensorCoreTf32 configs;
// fp16/bf16: kTensorCore16 configs). Instantiated in matmul_tc_fp16.cu / _bf16.cu / _tf32.cu, one
// shard per compile; the (config, orientation) must be one of the shard's items.
template <typename T, int kShard, int kShards>
void tc_shard_cuda(const MatmulParams& p, int config, bool a_k_major, bool b_k_major, gpuStream_t stream);

// Tensor-core kernel with the table's config `config` (T = float: tf32, a kTensorCoreTf32 config;
// fp16/bf16: a kTensorCore16 config). a_k_major / b_k_major: the operand orientations that
// tc_orientation (matmul.cu) found; the layout must be one the tensor-core kernel takes.
template <typename T>
void tc_cuda(const MatmulParams& p, int config, bool a_k_major, bool b_k_major, gpuStream_t stream) {
  if (config < 0 || config >= kMatmulNumConfigs) invalid("no tensor-core kernel for config " + std::to_string(config));
  constexpr int kShards = tc_shards<T>();
  with_shard<kShards>(shard_of(tc_item(config, a_k_major, b_k_major), kShards), [&](auto shard) {
    tc_shard_cuda<T, decltype(shard)::value, kShards>(p, config, a_k_major, b_k_major, stream);
  });
}
#endif

// ---- Hopper path (wgmma + TMA): which layouts it takes ---------------------------------------------
// The kernels read both operands through TMA tensor maps, which need a 16-byte aligned base and
// strides that are multiples of 16 bytes (vec = 8 fp16/bf16 elements, 4 fp32 elements for the tf32
// kernel) along every dim but the contiguous one. A must be K-contiguous; B N-contiguous (b) or
// K-contiguous (w.t()). A dim of size 1 takes any stride, and a batch stride of 0 broadcasts.
// Strides in elements, normalized (matmul.cu).
enum class WgmmaBLayout { kNMajor, kKMajor, kUnsupported };

inline bool wgmma_stride_ok(int64_t size, int64_t stride, int64_t vec = 8) {
  return size == 1 || (stride > 0 && stride % vec == 0);
}
inline bool wgmma_batch_stride_ok(int64_t batch, int64_t stride, int64_t vec = 8) {
  return batch == 1 || stride == 0 || (stride > 0 && stride % vec == 0);
}

inline bool wgmma_a_ok(const MatmulParams& p, int64_t vec = 8) {
  return aligned(p.a, 16) && (p.a_col_stride == 1 || p.k == 1) && wgmma_stride_ok(p.m, p.a_row_stride, vec) &&
         wgmma_batch_stride_ok(p.batch, p.a_batch_stride, vec);
}

// The 16-bit wgmma kernels: every config with a K-major A and either B; with an M-major A (a.t(), the
// A^T of a backward's dB = A^T dC) only the configs without clusters and an N-major B, to keep the
// build short (an M-major A with a K-major B runs mma.sync). With the fused epilogue: a K-major A,
// either B, in the configs the planner (wgmma_choose_config) can pick: single CTAs and the 2 x 2
// clusters, less those another config always beats (same tile and waves, a higher rate: 14 and 27
// lose to 21 and 29, whose stores are deferred; 22 loses to 17) and the 2-CTA M cluster (13);
// calls with an epilogue on other layouts run mma.sync. aiter_lite/tuning/matmul_configs.py
// (wgmma_has_kernel) mirrors this rule.
constexpr bool wgmma_has_kernel(int config, bool a_k_major, bool b_k_major, bool epilogue = false) {
  const MatmulTileConfig& c = kMatmulConfigs[config];
  const bool single = c.cluster_m == 1 && c.cluster_n == 1;
  if (matmul_config_a_load_rows(c) < c.bm && !a_k_major) return false;  // a_rows: K-major A only
  if (epilogue) {
    const int64_t area = int64_t{c.bm} * c.bn;
    const bool beaten = (area == 128 * 256 && c.epilogue_overlap == 0) || (area == 128 * 192 && c.epilogue_overlap > 0);
    return a_k_major && c.cluster_m == c.cluster_n && !beaten;
  }
  return a_k_major || (!b_k_major && single);
}
// M-contiguous A (a.t() of a [K, M] tensor), 16-bit kernel only (tf32 wgmma has no transpose bit).
inline bool wgmma_a_mn_ok(const MatmulParams& p) {
  return aligned(p.a, 16) && (p.a_row_stride == 1 || p.m == 1) && wgmma_stride_ok(p.k, p.a_col_stride) &&
         wgmma_batch_stride_ok(p.batch, p.a_batch_stride);
}

inline WgmmaBLayout wgmma_b_layout(const MatmulParams& p, int64_t vec = 8) {
  if (!aligned(p.b, 16) || !wgmma_batch_stride_ok(p.batch, p.b_batch_stride, vec)) return WgmmaBLayout::kUnsupported;
  const bool n_major = (p.b_col_stride == 1 || p.n == 1) && wgmma_stride_ok(p.k, p.b_row_stride, vec);
  const bool k_major = (p.b_row_stride == 1 || p.k == 1) && wgmma_stride_ok(p.n, p.b_col_stride, vec);
  // Both, with a size-1 dim: make the longer dim the contiguous (TMA-box inner) one.
  if (n_major && k_major) return p.n == 1 ? WgmmaBLayout::kKMajor : WgmmaBLayout::kNMajor;
  return n_major ? WgmmaBLayout::kNMajor : k_major ? WgmmaBLayout::kKMajor : WgmmaBLayout::kUnsupported;
}

#if defined(AITER_LITE_CUDA)
// Hopper kernel with the table's config `config` (a kWgmma16 config), T = half_t or bfloat16_t.
// Defined in matmul_wgmma.cuh and instantiated in matmul_wgmma_fp16.cu / matmul_wgmma_bf16.cu,
// which the registry compiles for sm_90a only; the JIT then defines AITER_LITE_HAS_MATMUL_WGMMA_FP16
// / _BF16 for the whole module, and only then may these be called (on a compute capability 9.0
// device). The layout must pass wgmma_a_ok and wgmma_b_layout (b_k_major: kKMajor). Builds the two
// tensor maps and, if `launch`, launches; returns false, launching nothing, when the driver rejects
// a tensor map or the grid would be too large (the caller then runs the mma.sync kernel).
template <typename T, int kShard, int kShards>
bool wgmma_shard_cuda(const MatmulParams& p, int config, bool a_k_major, bool b_k_major, gpuStream_t stream,
                      bool launch);

// a_k_major false: A passes wgmma_a_mn_ok. wgmma_has_kernel(config, a_k_major, b_k_major, the call has
// an epilogue) must hold.
template <typename T>
bool wgmma_cuda(const MatmulParams& p, int config, bool a_k_major, bool b_k_major, gpuStream_t stream, bool launch) {
  const bool epilogue = !p.epilogue.is_identity();
  if (config < 0 || config >= kMatmulNumConfigs || !wgmma_has_kernel(config, a_k_major, b_k_major, epilogue))
    invalid("no wgmma kernel for config " + std::to_string(config) + " and this layout");
  constexpr int kShards = wgmma_shards<T>();
  return with_shard<kShards>(shard_of(wgmma_item(config, a_k_major, b_k_major, epilogue), kShards), [&](auto shard) {
    return wgmma_shard_cuda<T, decltype(shard)::value, kShards>(p, config, a_k_major, b_k_major, stream, launch);
  });
}

// Hopper tf32 kernel (fp32 inputs, allow_tf32) with the table's config `config` (a kWgmmaTf32
// config). Defined in matmul_wgmma_tf32.cuh, compiled in matmul_wgmma_tf32.cu for sm_90a only (the
// JIT then defines AITER_LITE_HAS_MATMUL_WGMMA_TF32). The layout must pass wgmma_a_ok and
// wgmma_b_layout with vec = 4 (b_k_major: kKMajor). Same contract as wgmma_cuda otherwise.
#if defined(AITER_LITE_HAS_MATMUL_WGMMA_TF32)
bool wgmma_tf32_cuda(const MatmulParams& p, int config, bool b_k_major, gpuStream_t stream, bool launch);
#endif
#endif

}  // namespace matmul_detail
}  // namespace aiter_lite
