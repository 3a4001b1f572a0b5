// aiter_lite::matmul for CUDA and HIP: out[b] = a[b] @ b[b], fp32 accumulation.
//
// Kernels (csrc/kernels/matmul_*.cuh; tile configs in csrc/include/matmul_configs.h):
//   kNaive       matmul_naive_kernel: one thread per output, any strides. Only on request.
//   kTiled       matmul_simt_kernel: register-blocked FFMA, any dtype (strict fp32 default).
//   kTensorCore  matmul_tc_kernel: mma.sync m16n8k16 (fp16/bf16) or m16n8k8 tf32 (fp32 with
//                allow_tf32; fp32 without allow_tf32 is refused with std::invalid_argument).
//   kWgmma       matmul_wgmma_kernel (Hopper, fp16/bf16): TMA + mbarrier pipeline, producer and
//                consumer warpgroups, wgmma (matmul_wgmma.cuh); for fp32 with allow_tf32
//                matmul_wgmma_tf32_kernel (the same pipeline computing out^T = b^T a^T with tf32
//                wgmma, matmul_wgmma_tf32.cuh). Needs a compute capability 9.0 device and a module
//                built for sm_90a (else std::invalid_argument); strict fp32 is refused.
//   kAuto        fp16/bf16, and fp32 with allow_tf32: the wgmma kernel where it is available and the
//                layout qualifies (below), else mma.sync; strict fp32: the SIMT kernel. With A of at
//                most kSkinnyMaxM (16) rows and config -1, the skinny kernel (memory-bound, split-K
//                over a cluster; fp32 FFMA in matmul_skinny.cuh, mma.sync for fp16/bf16 in
//                matmul_skinny_tc.cuh) for fp32 (strict or tf32), and for fp16/bf16 where the plan
//                would be the SIMT kernel (layouts the tensor cores cannot load): on aligned 16-bit
//                layouts the wgmma kernel measured level or faster (docs/matmul.md).
//   kSkinny      the skinny kernel where A has at most 16 rows (config must be -1), else as kAuto.
//                An explicit config selects its own kernel family (a kWgmma16 or a kTensorCore16
//                config for fp16/bf16, a kWgmmaTf32 or a kTensorCoreTf32 config for tf32).
//
// Which layouts take which path (strides in elements; a dim of size 1 accepts any stride; a batch
// stride of 0 broadcasts and is always fine):
//   Tensor cores, per operand, with 16-byte cp.async:
//     A: K-contiguous (a_col_stride == 1, a_row_stride % V == 0)          e.g. a, a[:, :k]
//        or M-contiguous (a_row_stride == 1, a_col_stride % V == 0)        e.g. a.t()
//     B: N-contiguous (b_col_stride == 1, b_row_stride % V == 0)          e.g. b
//        or K-contiguous (b_row_stride == 1, b_col_stride % V == 0)       e.g. w.t() (nn.Linear)
//     with V = 8 elements (fp16/bf16) or 4 (fp32), batch stride % V == 0, data pointer 16-byte
//     aligned. Otherwise (both strides non-unit, odd leading dims, offset views) the call runs the
//     SIMT kernel instead, with its default config: correct, slower.
//   SIMT kernel: every layout. 4-element vector loads per operand where one of its strides is 1,
//     the other a multiple of 4 and the pointer aligned to 4 elements; scalar loads otherwise.
//   wgmma kernel (TMA tensor maps; see wgmma_a_ok / wgmma_b_layout in matmul_launch.h), with V = 8
//     elements (16 bytes): A K-contiguous (a_col_stride == 1) with a_row_stride % V == 0; B
//     N-contiguous (b_col_stride == 1, b_row_stride % V == 0) or K-contiguous (b_row_stride == 1,
//     b_col_stride % V == 0); batch strides % V == 0 (or 0); a and b 16-byte aligned. A may also
//     be M-contiguous (a.t(): a_row_stride == 1, a_col_stride % V == 0) where B is N-contiguous,
//     in the configs without clusters (wgmma_has_kernel; the planner picks among those; an
//     explicit other config runs mma.sync). Odd leading dims (K % 8 != 0 for a contiguous A,
//     N % 8 != 0 for a contiguous B), an M-contiguous A with a K-contiguous B, and offset views run
//     the mma.sync kernel instead (with its default config).
//     The tf32 wgmma kernel (fp32) takes the same layouts with V = 4 fp32 elements (16 bytes): a
//     contiguous A needs K % 4 == 0, a contiguous B N % 4 == 0, w.t() K % 4 == 0.
//   Output: any strides. Rows with out_col_stride == 1 (row stride and pointer aligned) get
//     2- (tensor cores), 4- (SIMT) or 8-element (wgmma) stores, other layouts scalar stores.
// M, N, K: any size >= 0 up to 2^31 - 1 (tails are zero-filled on load and clipped on store; K == 0
// writes zeros). Batch: blockIdx.z, one entry per block; batches above 65535 run as several launches.
//
// Configs: MatmulParams::config indexes kMatmulConfigs; the config must belong to the path that
// runs and fit the device's shared memory (std::invalid_argument otherwise). -1 takes the path's
// default (kMatmulDefaultConfig; if it doesn't fit the device, the path's largest tile that does),
// or the path's smallest tile when the default would leave more than half of the SMs without a block.
// The wgmma path instead takes the config whose waves of work units are predicted to finish first
// (wgmma_choose_config; it weighs split-K configs by K). A tensor-core (or wgmma) config given for a layout that falls back to
// SIMT (or mma.sync) is validated, then not used.
//
// HIP: the inline PTX is CUDA-only (mma.cuh), so on HIP kTensorCore and kAuto run the SIMT kernel
// (tensor-core configs are still validated). Untested on AMD hardware.
//
// Files: this one is the dispatch (validation; path, config and orientation choice; batch slices)
// and compiles no kernel. It calls the launchers declared in matmul_launch.h (defined in
// matmul_launch_impl.h), which other files explicitly instantiate, one share each, so that a cold
// JIT build compiles the kernels in parallel:
//   matmul_naive.cu     naive kernel, all dtypes
//   matmul_simt.cu      SIMT kernel, all dtypes and kSimt configs
//   matmul_tc_fp16.cu   tensor-core kernels (CUDA only), one dtype each: all of its configs and
//   matmul_tc_bf16.cu   operand orientations
//   matmul_tc_tf32.cu
//   matmul_wgmma_fp16.cu  Hopper kernels (sm_90a only; present when AITER_LITE_HAS_MATMUL_WGMMA_FP16
//   matmul_wgmma_bf16.cu  / _BF16 is defined), one dtype each: all kWgmma16 configs, both B layouts,
//                         and the M-contiguous A kernels (wgmma_has_kernel in matmul_launch.h)
//   matmul_skinny_fp32.cu  skinny kernels (M <= 16), one dtype each: all row bounds and B layouts (fp16
//   matmul_skinny_fp16.cu  and bf16 on CUDA: the tensor-core form, matmul_skinny_tc.cuh, where it reads
//   matmul_skinny_bf16.cu  B, the FFMA form for the rest)
//   matmul_wgmma_tf32.cu  Hopper tf32 kernels (sm_90a only; AITER_LITE_HAS_MATMUL_WGMMA_TF32): all
//                         kWgmmaTf32 configs, both B layouts
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "dtype_traits.cuh"
#include "matmul_configs.h"
#include "matmul_launch.h"
#include "matmul_params.h"
#include "port.h"

namespace aiter_lite {

// ---- helpers shared with the launchers (declared in matmul_launch.h) -------------------------------

namespace matmul_detail {

void invalid(const std::string& what) { throw std::invalid_argument("aiter_lite.matmul: " + what); }

const char* path_name(MatmulPath path) {
  switch (path) {
    case MatmulPath::kSimt: return "simt (variant tiled)";
    case MatmulPath::kTensorCore16: return "tensor_core fp16/bf16";
    case MatmulPath::kTensorCoreTf32: return "tensor_core tf32";
    case MatmulPath::kWgmma16: return "wgmma fp16/bf16";
    case MatmulPath::kWgmmaTf32: return "wgmma tf32";
  }
  return "unknown";
}

int current_device() {
  int dev = 0;
  AITER_LITE_GPU_CHECK(gpuGetDevice(&dev));
  return dev;
}

}  // namespace matmul_detail

namespace {

using matmul_detail::current_device;
using matmul_detail::kMaxCachedDevices;
using matmul_detail::per_device;
using matmul_detail::invalid;
using matmul_detail::kMaxDim;
using matmul_detail::OperandLayout;
using matmul_detail::operand_a;
using matmul_detail::operand_b;
using matmul_detail::path_name;
using matmul_detail::WgmmaBLayout;

constexpr int64_t kMaxGridZ = 65535;

// ---- device properties, cached per device ----------------------------------------------------------

// A device attribute, read once per device.
template <int kWhich>
int cached_device_attribute(gpuDeviceAttr_t attr) {
  static std::atomic<int> cache[kMaxCachedDevices] = {};
  return per_device(cache, [&](int dev) {
    int v = 0;
    AITER_LITE_GPU_CHECK(gpuDeviceGetAttribute(&v, attr, dev));
    return v;
  });
}

int sm_count() { return cached_device_attribute<0>(gpuDevAttrMultiProcessorCount); }
// Largest dynamic shared memory a block may opt in to (227 KB on H100, 163 KB on A100).
int max_smem_per_block() { return cached_device_attribute<1>(gpuDevAttrMaxSharedMemoryPerBlockOptin); }

// The module holds the Hopper kernels of `dtype` (their sources are built for sm_90a only, and the
// JIT defines AITER_LITE_HAS_MATMUL_WGMMA_* when it built them).
bool wgmma_built(DType dtype) {
#if defined(AITER_LITE_CUDA) && defined(AITER_LITE_HAS_MATMUL_WGMMA_FP16)
  if (dtype == DType::kFloat16) return true;
#endif
#if defined(AITER_LITE_CUDA) && defined(AITER_LITE_HAS_MATMUL_WGMMA_BF16)
  if (dtype == DType::kBFloat16) return true;
#endif
  (void)dtype;
  return false;
}

// The current device has compute capability 9.0 exactly (H100, H200, H20...): the sm_90a image runs
// there and nowhere else.
bool sm90_device() {
#if defined(AITER_LITE_CUDA)
  static std::atomic<int> cache[kMaxCachedDevices] = {};  // 1: no, 2: yes
  return per_device(cache, [](int dev) {
           int major = 0, minor = 0;
           AITER_LITE_GPU_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
           AITER_LITE_GPU_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
           return major == 9 && minor == 0 ? 2 : 1;
         }) == 2;
#else
  return false;
#endif
}

bool wgmma_available(DType dtype) { return wgmma_built(dtype) && sm90_device(); }

// The tensor-core kernel of `config` exists for the current device: an sm_90 device runs the sm_90a
// image, which holds only the configs tc_config_on_sm90 names (matmul_configs.h). The wgmma sources
// are in the build exactly when its archs include sm_90a.
bool tc_config_built(int config) {
#if defined(AITER_LITE_HAS_MATMUL_WGMMA_FP16) || defined(AITER_LITE_HAS_MATMUL_WGMMA_BF16) || \
    defined(AITER_LITE_HAS_MATMUL_WGMMA_TF32)
  return tc_config_on_sm90(config) || !sm90_device();
#else
  (void)config;
  return true;
#endif
}

#if defined(AITER_LITE_CUDA)
// Stands in for a wgmma kernel in the cluster occupancy query (cluster_slots): what limits
// residency there is a whole SM's shared memory per CTA and the cluster's shape, not the code.
__global__ void cluster_slots_probe_kernel() {}
#endif

// matmul_cluster_slots for the current device, read once per device and size (sizes 1, 2, 4, 8).
int cluster_slots(int size) {
  if (size != 1 && size != 2 && size != 4 && size != 8) invalid("cluster size must be 1, 2, 4 or 8");
  if (size == 1) return sm_count();
#if defined(AITER_LITE_CUDA)
  static std::atomic<int> cache[3][kMaxCachedDevices] = {};  // by log2(size) - 1; -1: no clusters
  const int v = per_device(cache[size == 2 ? 0 : size == 4 ? 1 : 2], [size](int) {
    // 200 KB of dynamic shared memory: one CTA per SM, like every wgmma config (194-226 KB).
    constexpr int kSmem = 200 * 1024;
    const void* probe = reinterpret_cast<const void*>(cluster_slots_probe_kernel);
    if (!sm90_device() ||
        cudaFuncSetAttribute(probe, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem) != cudaSuccess) {
      (void)cudaGetLastError();  // a refused attribute leaves no sticky error behind
      return -1;
    }
    const int clusters = matmul_detail::max_active_clusters(probe, 384, kSmem, size, sm_count());
    return clusters > 0 ? clusters : -1;
  });
  return v > 0 ? v : 0;
#else
  return 0;
#endif
}

// The module holds the Hopper tf32 kernels (matmul_wgmma_tf32.cu, built for sm_90a only).
bool wgmma_tf32_built() {
#if defined(AITER_LITE_CUDA) && defined(AITER_LITE_HAS_MATMUL_WGMMA_TF32)
  return true;
#else
  return false;
#endif
}

bool wgmma_tf32_available() { return wgmma_tf32_built() && sm90_device(); }

// ---- layout analysis ----------------------------------------------------------------------------

// Strides of size-1 dims (and the batch stride of a single batch) set to 0: they are never used to
// address anything, so they must not keep a layout off a fast path.
MatmulParams normalized(const MatmulParams& p) {
  MatmulParams q = p;
  if (q.batch == 1) q.a_batch_stride = q.b_batch_stride = q.out_batch_stride = 0;
  if (q.m == 1) q.a_row_stride = q.out_row_stride = 0;
  if (q.n == 1) q.b_col_stride = q.out_col_stride = 0;
  if (q.k == 1) q.a_col_stride = q.b_row_stride = 0;
  // fp32 out for 16-bit inputs: the epilogue kernels store the fp32 value (MatmulEpilogue::out_fp32).
  q.epilogue.out_fp32 = q.out_dtype == DType::kFloat32 && q.dtype != DType::kFloat32;
  return q;
}

enum class TcOrientation { kKMajor, kMNMajor, kUnsupported };

TcOrientation tc_orientation(const OperandLayout& op) {
  const int64_t vec = 16 / op.elem_bytes;
  if (op.k_contiguous() && op.vec_ok(vec, op.mn_stride)) return TcOrientation::kKMajor;
  if (op.mn_contiguous() && op.vec_ok(vec, op.k_stride)) return TcOrientation::kMNMajor;
  return TcOrientation::kUnsupported;
}

// ---- config choice ----------------------------------------------------------------------------

int64_t config_blocks(const MatmulTileConfig& c, const MatmulParams& p) {
  return ((p.m + c.bm - 1) / c.bm) * ((p.n + c.bn - 1) / c.bn) * p.batch;
}

int64_t config_smem(const MatmulTileConfig& c, DType dtype) {
  return matmul_config_smem_bytes(c, dtype == DType::kFloat32 ? 4 : 2);
}

// Validates an explicit config against `path` (and, with `check_fit`, the device's shared memory);
// -1 picks the default (see the top of this file).
int resolve_config(MatmulPath path, int32_t requested, const MatmulParams& p, bool check_fit = true) {
  if (requested >= 0) {
    if (requested >= kMatmulNumConfigs)
      invalid("config " + std::to_string(requested) + " out of range [0, " + std::to_string(kMatmulNumConfigs) + ")");
    if (kMatmulConfigs[requested].path != path)
      invalid("config " + std::to_string(requested) + " is a " + path_name(kMatmulConfigs[requested].path) +
              " config, but this call runs the " + path_name(path) + " kernel");
    if (check_fit && config_smem(kMatmulConfigs[requested], p.dtype) > max_smem_per_block())
      invalid("config " + std::to_string(requested) + " needs " +
              std::to_string(config_smem(kMatmulConfigs[requested], p.dtype)) +
              " bytes of shared memory per block; this device allows " + std::to_string(max_smem_per_block()));
    return requested;
  }
  if (requested != -1) invalid("config must be -1 or a table index, got " + std::to_string(requested));
  // The default, or the largest tile of the path that fits the device's shared memory.
  const int64_t smem_limit = max_smem_per_block();
  auto fits = [&](int i) { return kMatmulConfigs[i].path == path && config_smem(kMatmulConfigs[i], p.dtype) <= smem_limit; };
  auto area = [](int i) { return int64_t{kMatmulConfigs[i].bm} * kMatmulConfigs[i].bn; };
  int def = kMatmulDefaultConfig[static_cast<int>(path)];
  if (!fits(def)) {
    def = -1;
    for (int i = 0; i < kMatmulNumConfigs; ++i)
      if (fits(i) && (def < 0 || area(i) > area(def))) def = i;
    if (def < 0) invalid(std::string("no ") + path_name(path) + " config fits this device's shared memory");
  }
  if (config_blocks(kMatmulConfigs[def], p) * 2 >= sm_count()) return def;
  int best = def;  // small grid: the smallest tile
  for (int i = 0; i < kMatmulNumConfigs; ++i)
    if (fits(i) && area(i) < area(best)) best = i;
  return best;
}

// ---- what runs -------------------------------------------------------------------------------------

// The kernel and config that run one batch slice (normalized params).
struct SlicePlan {
  enum class Kernel { kNaive, kSimt, kTensorCore, kWgmma, kWgmmaTf32, kSkinny } kernel;
  int config;  // table index; -1 for the naive kernel
  bool a_k_major, b_k_major;
};

const char* kernel_name(SlicePlan::Kernel k) {
  switch (k) {
    case SlicePlan::Kernel::kNaive: return "naive";
    case SlicePlan::Kernel::kSimt: return "simt";
    case SlicePlan::Kernel::kTensorCore: return "tensor_core";
    case SlicePlan::Kernel::kWgmma: return "wgmma";
    case SlicePlan::Kernel::kWgmmaTf32: return "wgmma_tf32";
    case SlicePlan::Kernel::kSkinny: return "skinny";
  }
  return "unknown";
}

// mma.sync path for the call's dtype (config: a table index of that path or -1), or the SIMT kernel
// where the layout (or HIP) rules it out.
SlicePlan plan_tensor_core(const MatmulParams& p, int32_t requested) {
  const MatmulPath path = p.dtype == DType::kFloat32 ? MatmulPath::kTensorCoreTf32 : MatmulPath::kTensorCore16;
  const int config = resolve_config(path, requested, p);
#if defined(AITER_LITE_CUDA)
  if (!tc_config_built(config))
    invalid("tensor-core config " + std::to_string(config) + " is not compiled for sm_90a, where mma.sync is "
            "wgmma's fallback: configs " + std::to_string(kMatmulDefaultConfig[static_cast<int>(path)]) + " and " +
            std::to_string(tc_smallest_config(path)) + " are (config -1 picks them)");
  const int64_t eb = p.dtype == DType::kFloat32 ? 4 : 2;
  const TcOrientation a_or = tc_orientation(operand_a(p, eb));
  const TcOrientation b_or = tc_orientation(operand_b(p, eb));
  if (a_or != TcOrientation::kUnsupported && b_or != TcOrientation::kUnsupported)
    return {SlicePlan::Kernel::kTensorCore, config, a_or == TcOrientation::kKMajor, b_or == TcOrientation::kKMajor};
#else
  (void)config;
#endif
  return {SlicePlan::Kernel::kSimt, resolve_config(MatmulPath::kSimt, -1, p), false, false};
}

// Relative per-SM throughput of a wgmma config, from the per-config sweep on an H100 (bench/gpu.sh
// matmul --issue6 --configs --sweep-path wgmma_16, 2026-11-21: mean TFLOP/s of fp16 and bf16 over
// 8192^3, 4096x11008x4096, 4096^3 and 8192x1024x8192, relative to 128 x 256): 128 x 256 with 2 of 4
// pieces' stores deferred 1.06, 128 x 256 1.0 (the 2-CTA multicast cluster the same), 128 x 192 0.98
// (with a deferred piece 0.93), 128 x 128 0.89, 128 x 64 0.58, 64 x 64 0.39. Split-K configs keep 0.6
// of their tile's rate (non-persistent clusters that fill their ring from cold and meet at barriers:
// measured 275 vs 287 TFLOP/s for 128 x 64 at 128x8192x8192).
//
// b_rows_off_sector: B's lines start at odd multiples of 16 bytes (wgmma_b_rows_off_sector). Then only
// the 2 x 2 clusters keep that rate; 2-CTA clusters run at 0.88 of it and single CTAs at 0.53 (per-SM
// TFLOP/s over full waves at 3000^3, 5000^3 and 3000x3000x4096 bf16, bench/lab/probe_wgmma_configs.py,
// 2026-11-21: 2 x 2 clusters 128 x 256 about 640 on 120 SMs, 128 x 192 600, 128 x 128 570; the
// 2-CTA cluster 615 on 132 SMs; 128 x 192 alone 370).
double wgmma_config_rate(const MatmulTileConfig& c, bool b_rows_off_sector) {
  const int64_t area = int64_t{c.bm} * c.bn;
  double rate = area >= 128 * 256   ? (c.epilogue_overlap >= 2 ? 1.06 : 1.0)
                : area >= 128 * 192 ? (c.epilogue_overlap >= 1 ? 0.93 : 0.98)
                : area >= 128 * 128 ? 0.89
                : area >= 128 * 64  ? 0.58
                                    : 0.39;
  if (c.split_k > 1) rate *= 0.6;
  if (b_rows_off_sector) {
    const int multicast = c.cluster_m * c.cluster_n;
    rate *= multicast >= 4 ? 1.0 : multicast == 2 ? 0.88 : 0.53;
  }
  return rate;
}

// What a split-K config pays per wave on top of its k-tiles, in the cost units of
// wgmma_choose_config (output elements x k-tiles at rate 1): about two k-tiles of a 128 x 256 tile,
// for a non-persistent cluster that fills its ring from cold, meets twice at a cluster barrier and
// reads its peers' partials.
constexpr double kWgmmaSplitKOverhead = 2.0 * 128 * 256;

// B whose lines (rows of N-major B, columns of K-major B: the TMA box rows) start at odd multiples of
// 16 bytes (line stride = 8 mod 16 elements, e.g. 3000 fp16: 6000-byte lines): every other 128-byte
// TMA row then begins in the middle of a 32-byte sector, and single CTAs ran at about half speed
// (3000^3 bf16 on an H100: 359 TFLOP/s, 3008^3 700; K-major B the same, 355). The 2 x 2 clusters load
// each B line once per two CTAs (and each A line once per two) and keep their speed, so the planner
// turns to them. Measured on the H100 (2026-11-21, bench/lab/probe_wgmma_configs.py) and left out of the
// rule: A lines at such offsets (4096x4096x3000: 1.01x cuBLAS as they are), B lines at 32-byte
// multiples (2000^3, 4000-byte lines: 0.93x), and M <= 256, where B streams from memory with few
// tile rows to share it (128x3000x8192: 128 x 64 tiles 0.86x cuBLAS, the 2 x 2 cluster 0.70x).
bool wgmma_b_rows_off_sector(const MatmulParams& p, bool b_k_major) {
  const int64_t lines = b_k_major ? p.n : p.k, stride = b_k_major ? p.b_col_stride : p.b_row_stride;
  return p.m > 256 && lines > 1 && stride % 16 == 8;
}

// The a_rows config (one that loads only a_rows >= p.m rows of A) whose tiles take the fewest waves of CTAs, then the
// most CTAs (more of B in flight at once); -1 where none qualifies or where the one with the most tiles would give
// fewer than a quarter of the SMs a tile (H200, session 28: 16 x 1024 x 4096 and 7 x 2048 x 2048 ran 13.0 and 9.7 us
// on config 19 against 15.0-15.2 and 10.2 on a 64 x 64 a_rows config; 16 x 4096 x 4096, 64 tiles, 17.0 on 31 against
// 18.2-18.4 on 19).
int wgmma_choose_few_rows(const MatmulParams& p, bool a_k_major, bool b_k_major, bool epilogue) {
  const int64_t smem_limit = max_smem_per_block(), sms = sm_count();
  int best = -1;
  int64_t best_waves = 0, best_units = 0, most_units = 0;
  for (int i = 0; i < kMatmulNumConfigs; ++i) {
    const MatmulTileConfig& c = kMatmulConfigs[i];
    if (c.path != MatmulPath::kWgmma16 || c.a_rows == 0 || p.m > c.a_rows || config_smem(c, p.dtype) > smem_limit)
      continue;
    if (!matmul_detail::wgmma_has_kernel(i, a_k_major, b_k_major, epilogue)) continue;
    const int64_t units = (p.n + c.bn - 1) / c.bn * p.batch, waves = (units + sms - 1) / sms;
    most_units = std::max(most_units, units);
    if (best < 0 || waves < best_waves || (waves == best_waves && units > best_units)) {
      best = i;
      best_waves = waves;
      best_units = units;
    }
  }
  return best >= 0 && most_units * 4 >= sms ? best : -1;
}

// wgmma_choose_config (below) over the configs of at most max_bm rows (0: any); -1 if none qualifies.
int wgmma_choose_config_rows(const MatmulParams& p, bool a_k_major, bool b_k_major, bool epilogue, int max_bm) {
  const int64_t smem_limit = max_smem_per_block();
  const bool off_sector = wgmma_b_rows_off_sector(p, b_k_major);
  int best = -1;
  double best_cost = 0.0;
  for (int i = 0; i < kMatmulNumConfigs; ++i) {
    const MatmulTileConfig& c = kMatmulConfigs[i];
    if (c.path != MatmulPath::kWgmma16 || config_smem(c, p.dtype) > smem_limit) continue;
    if (max_bm > 0 && c.bm > max_bm) continue;
    if (c.a_rows > 0) continue;  // wgmma_choose_few_rows has chosen among those
    if (c.cluster_n > 1 && !off_sector) continue;
    if (!matmul_detail::wgmma_has_kernel(i, a_k_major, b_k_major, epilogue)) continue;
    const int64_t tiles_m = (p.m + c.bm - 1) / c.bm, tiles_n = (p.n + c.bn - 1) / c.bn;
    const int64_t units =
        (tiles_m + c.cluster_m - 1) / c.cluster_m * ((tiles_n + c.cluster_n - 1) / c.cluster_n) * p.batch;
    const int64_t slots = std::max<int64_t>(1, cluster_slots(c.cluster_m * c.cluster_n * c.split_k));
    const int64_t k_tiles = (p.k + c.bk - 1) / c.bk;
    const int64_t k_unit = (k_tiles + c.split_k - 1) / c.split_k;
    const double per_unit = static_cast<double>(int64_t{c.bm} * c.bn * k_unit) / wgmma_config_rate(c, off_sector) +
                            (c.split_k > 1 ? kWgmmaSplitKOverhead : 0.0);
    const double cost = static_cast<double>((units + slots - 1) / slots) * per_unit;
    if (best < 0 || cost < best_cost) {
      best = i;
      best_cost = cost;
    }
  }
  return best;
}

// Config -1 on the wgmma path: the config (that fits the device) whose work is predicted to finish
// first. Work units are tiles (a multicast cluster's tiles count as one); a wave runs one unit per
// slot (an SM, or a cluster of SMs: cluster_m x cluster_n x split_k of them, as many as
// cluster_slots says fit); a unit costs BM x BN x its k-tiles (ceil(k_tiles / split_k)) / rate, plus
// kWgmmaSplitKOverhead under split-K. Cost = waves x that; ties go to the lower index. The 2 x 2
// clusters (cluster_n > 1) are only considered for B rows off the sector grid: elsewhere they were
// slower in every measurement (4096^3 bf16 0.80x cuBLAS against 0.93x, 2048^3 0.57x against 0.97x:
// 30 clusters of 4 leave 12 of 132 SMs idle). aiter_lite/tuning/matmul_configs.py (default_config)
// mirrors this, operation for operation.
//
// A with at most 64 rows fills one 64-row tile: a 128-row tile loads the same B and runs twice the MMA on
// padding, so there only the 64-row configs compete (any other where none can run). H200, session 28
// (bench/lab/matmul_small_m_configs.py, b row-major): 1..64 x 11008 x 4096 ran 38.7-43.8 us on 64 x 64 tiles
// (config 16) against 40.0-51.6 on the 128 x 128 tiles the waves alone chose (config 15).
//
// A with at most 32 rows: the configs that load only 32 rows of A (a_rows: 31, 64 x 64 tiles, 17 stages; 32, 64 x
// 128, 10 stages) keep 1.4-1.7x the bytes of B in flight of config 16 (12 stages of 64 x 64 with 64 rows of A), and a
// few-row product is bound by how fast B streams: H200, session 28, 1..32 x 11008 x 4096 bf16 33.8-34.5 us on config
// 32 against 39.4-44.0 on 16, cuBLAS 33.3-34.7. wgmma_choose_few_rows picks among them; where even their 64-column
// tiles would leave three quarters of the SMs idle, split-K (config 19) streams more of B at once.
int wgmma_choose_config(const MatmulParams& p, bool a_k_major, bool b_k_major, bool epilogue) {
  const int few = wgmma_choose_few_rows(p, a_k_major, b_k_major, epilogue);
  if (few >= 0) return few;
  int best = wgmma_choose_config_rows(p, a_k_major, b_k_major, epilogue, p.m <= 64 ? 64 : 0);
  if (best < 0 && p.m <= 64) best = wgmma_choose_config_rows(p, a_k_major, b_k_major, epilogue, 0);
  if (best < 0) invalid("no wgmma config fits this device's shared memory");
  return best;
}

// The wgmma kernel where the layout qualifies, else the mma.sync kernel with its default config.
// probe: also build the tensor maps (the driver may still reject one); without it a rejected map
// shows up only at launch, which then falls back the same way (run_slice).
SlicePlan plan_wgmma(const MatmulParams& p, bool probe) {
#if defined(AITER_LITE_CUDA)
  const WgmmaBLayout b_layout = matmul_detail::wgmma_b_layout(p);
  const bool b_k_major = b_layout == WgmmaBLayout::kKMajor;
  // A fused epilogue runs in the kEpilogue kernels (K-major A; which configs: wgmma_has_kernel).
  const bool epilogue = !p.epilogue.is_identity();
  // A K-contiguous, else M-contiguous (a.t(): dB = A^T dC in a backward) where a kernel exists.
  const bool a_k_major = matmul_detail::wgmma_a_ok(p);
  const bool a_ok =
      a_k_major || (!epilogue && matmul_detail::wgmma_a_mn_ok(p) && b_layout == WgmmaBLayout::kNMajor);
  // K >= 1: the kernel's accumulators are only ever written by wgmma (no k-tile, no zeros).
  if (p.k >= 1 && a_ok && b_layout != WgmmaBLayout::kUnsupported) {
    const int config = p.config >= 0 ? resolve_config(MatmulPath::kWgmma16, p.config, p)
                                     : wgmma_choose_config(p, a_k_major, b_k_major, epilogue);
    const SlicePlan plan{SlicePlan::Kernel::kWgmma, config, a_k_major, b_k_major};
    // An explicit config without a kernel for this layout or epilogue: validated, then not used.
    if (!matmul_detail::wgmma_has_kernel(config, a_k_major, b_k_major, epilogue)) return plan_tensor_core(p, -1);
    if (!probe) return plan;
    bool ok = false;
#if defined(AITER_LITE_HAS_MATMUL_WGMMA_FP16)
    if (p.dtype == DType::kFloat16)
      ok = matmul_detail::wgmma_cuda<half_t>(p, config, a_k_major, b_k_major, nullptr, false);
#endif
#if defined(AITER_LITE_HAS_MATMUL_WGMMA_BF16)
    if (p.dtype == DType::kBFloat16)
      ok = matmul_detail::wgmma_cuda<bfloat16_t>(p, config, a_k_major, b_k_major, nullptr, false);
#endif
    if (ok) return plan;
  }
#else
  (void)probe;
#endif
  return plan_tensor_core(p, -1);
}

// Relative per-SM throughput of a tf32 wgmma config (wgmma_tf32_choose_config). Initial estimates
// (no H100 sweep yet; bench/gpu.sh matmul --dtypes tf32 --sweep-path wgmma_tf32 measures them):
// 256 x 128 1.0, 192 x 128 0.97, 128 x 128 0.9, 128 x 64 (one consumer) 0.55.
double wgmma_tf32_config_rate(const MatmulTileConfig& c) {
  const int64_t area = int64_t{c.bm} * c.bn;
  return area >= 256 * 128 ? 1.0 : area >= 192 * 128 ? 0.97 : area >= 128 * 128 ? 0.9 : 0.55;
}

// Config -1 on the tf32 wgmma path: as wgmma_choose_config (waves of persistent tiles x the tile's
// work / rate; ties to the lower index), without clusters or split-K. aiter_lite/tuning/
// matmul_configs.py (default_config("wgmma_tf32", ...)) mirrors it.
int wgmma_tf32_choose_config(const MatmulParams& p) {
  const int64_t sms = sm_count(), smem_limit = max_smem_per_block();
  int best = -1;
  double best_cost = 0.0;
  for (int i = 0; i < kMatmulNumConfigs; ++i) {
    const MatmulTileConfig& c = kMatmulConfigs[i];
    if (c.path != MatmulPath::kWgmmaTf32 || config_smem(c, p.dtype) > smem_limit) continue;
    const int64_t units = ((p.m + c.bm - 1) / c.bm) * ((p.n + c.bn - 1) / c.bn) * p.batch;
    const int64_t k_tiles = (p.k + c.bk - 1) / c.bk;
    const double per_unit = static_cast<double>(int64_t{c.bm} * c.bn * k_tiles) / wgmma_tf32_config_rate(c);
    const double cost = static_cast<double>((units + sms - 1) / sms) * per_unit;
    if (best < 0 || cost < best_cost) {
      best = i;
      best_cost = cost;
    }
  }
  if (best < 0) invalid("no wgmma tf32 config fits this device's shared memory");
  return best;
}

// The tf32 wgmma kernel where the layout qualifies (16-byte TMA rules with 4-byte elements), else
// the mma.sync tf32 kernel with its default config; probe as in plan_wgmma.
SlicePlan plan_wgmma_tf32(const MatmulParams& p, bool probe) {
  if (!p.epilogue.is_identity()) return plan_tensor_core(p, -1);  // the tf32 wgmma kernel has no fused epilogue
#if defined(AITER_LITE_CUDA)
  const WgmmaBLayout b_layout = matmul_detail::wgmma_b_layout(p, 4);
  if (p.k >= 1 && matmul_detail::wgmma_a_ok(p, 4) && b_layout != WgmmaBLayout::kUnsupported) {
    const int config =
        p.config >= 0 ? resolve_config(MatmulPath::kWgmmaTf32, p.config, p) : wgmma_tf32_choose_config(p);
    const SlicePlan plan{SlicePlan::Kernel::kWgmmaTf32, config, true, b_layout == WgmmaBLayout::kKMajor};
    if (!probe) return plan;
#if defined(AITER_LITE_HAS_MATMUL_WGMMA_TF32)
    if (matmul_detail::wgmma_tf32_cuda(p, config, plan.b_k_major, nullptr, false)) return plan;
#endif
  }
#else
  (void)probe;
#endif
  return plan_tensor_core(p, -1);
}

// A with at most kSkinnyMaxM rows, and the kernel left to the dispatch (auto, config -1): the skinny
// kernel is the better choice over the SIMT kernel (matmul_skinny.cuh).
bool skinny_preferred(const MatmulParams& s) {
  return (s.variant == MatmulVariant::kAuto || s.variant == MatmulVariant::kSkinny) && s.config == -1 &&
         s.m <= matmul_detail::kSkinnyMaxM;
}

// `plan`, or the skinny kernel where `plan` is the SIMT fallback of a tensor-core path (a layout the
// tensor cores cannot load) and skinny_preferred.
SlicePlan or_skinny(const MatmulParams& s, const SlicePlan& plan) {
  if (plan.kernel == SlicePlan::Kernel::kSimt && skinny_preferred(s)) return {SlicePlan::Kernel::kSkinny, -1, false, false};
  return plan;
}

// The plan of one slice; `path` from checked_path (the kernel family the call asked for).
SlicePlan plan_slice(const MatmulParams& s, MatmulPath path, bool probe) {
  if (s.variant == MatmulVariant::kNaive) return {SlicePlan::Kernel::kNaive, -1, false, false};
  if (s.variant == MatmulVariant::kSkinny && s.m <= matmul_detail::kSkinnyMaxM)
    return {SlicePlan::Kernel::kSkinny, -1, false, false};
  // Few rows of A, fp32: the product streams B once and is memory-bound, and the skinny kernel beat
  // the SIMT and tf32 kernels there. fp16/bf16 below, where the layout rules the tensor-core kernels
  // out (or_skinny): on aligned layouts wgmma measured level with the skinny kernel's tensor-core
  // form or faster (H100, session 22: docs/matmul.md).
  if (skinny_preferred(s) && s.dtype == DType::kFloat32) return {SlicePlan::Kernel::kSkinny, -1, false, false};
  switch (path) {
    case MatmulPath::kSimt: return {SlicePlan::Kernel::kSimt, resolve_config(MatmulPath::kSimt, s.config, s), false, false};
    case MatmulPath::kWgmma16: return or_skinny(s, plan_wgmma(s, probe));
    case MatmulPath::kWgmmaTf32: return or_skinny(s, plan_wgmma_tf32(s, probe));
    case MatmulPath::kTensorCore16:
    case MatmulPath::kTensorCoreTf32: return or_skinny(s, plan_tensor_core(s, s.config));
  }
  invalid("unknown path");
}

void run_slice(const MatmulParams& s, const SlicePlan& plan, gpuStream_t stream) {
  switch (plan.kernel) {
    case SlicePlan::Kernel::kNaive:
      AITER_LITE_DISPATCH_DTYPE(s.dtype, [&] { matmul_detail::naive_launch<scalar_t>(s, stream); });
      return;
    case SlicePlan::Kernel::kSimt:
      AITER_LITE_DISPATCH_DTYPE(s.dtype, [&] { matmul_detail::simt_cuda<scalar_t>(s, plan.config, stream); });
      return;
    case SlicePlan::Kernel::kSkinny:
      AITER_LITE_DISPATCH_DTYPE(s.dtype, [&] { matmul_detail::skinny_cuda<scalar_t>(s, stream); });
      return;
    case SlicePlan::Kernel::kTensorCore:
#if defined(AITER_LITE_CUDA)
      switch (s.dtype) {
        case DType::kFloat32: return matmul_detail::tc_cuda<float>(s, plan.config, plan.a_k_major, plan.b_k_major, stream);
        case DType::kFloat16: return matmul_detail::tc_cuda<half_t>(s, plan.config, plan.a_k_major, plan.b_k_major, stream);
        case DType::kBFloat16:
          return matmul_detail::tc_cuda<bfloat16_t>(s, plan.config, plan.a_k_major, plan.b_k_major, stream);
      }
#endif
      break;
    case SlicePlan::Kernel::kWgmma: {
      bool launched = false;
#if defined(AITER_LITE_CUDA) && defined(AITER_LITE_HAS_MATMUL_WGMMA_FP16)
      if (s.dtype == DType::kFloat16)
        launched = matmul_detail::wgmma_cuda<half_t>(s, plan.config, plan.a_k_major, plan.b_k_major, stream, true);
#endif
#if defined(AITER_LITE_CUDA) && defined(AITER_LITE_HAS_MATMUL_WGMMA_BF16)
      if (s.dtype == DType::kBFloat16)
        launched =
            matmul_detail::wgmma_cuda<bfloat16_t>(s, plan.config, plan.a_k_major, plan.b_k_major, stream, true);
#endif
      if (!launched) run_slice(s, or_skinny(s, plan_tensor_core(s, -1)), stream);  // a tensor map the driver rejected
      return;
    }
    case SlicePlan::Kernel::kWgmmaTf32: {
      bool launched = false;
#if defined(AITER_LITE_CUDA) && defined(AITER_LITE_HAS_MATMUL_WGMMA_TF32)
      if (s.dtype == DType::kFloat32)
        launched = matmul_detail::wgmma_tf32_cuda(s, plan.config, plan.b_k_major, stream, true);
#endif
      if (!launched) run_slice(s, or_skinny(s, plan_tensor_core(s, -1)), stream);  // a tensor map the driver rejected
      return;
    }
  }
  invalid(std::string("no ") + kernel_name(plan.kernel) + " kernel for this dtype in this build");
}

// Checks the call and returns the kernel family it asks for; an explicit config must belong to it,
// whatever the sizes.
MatmulPath checked_path(const MatmulParams& q) {
  if (q.batch < 0 || q.m < 0 || q.n < 0 || q.k < 0) invalid("negative size");
  if (q.m > kMaxDim || q.n > kMaxDim || q.k > kMaxDim) invalid("m, n and k must be below 2^31");
  if (q.dtype != DType::kFloat32 && q.dtype != DType::kFloat16 && q.dtype != DType::kBFloat16)
    invalid("unsupported dtype");
  if (q.out_dtype != q.dtype && !(q.out_dtype == DType::kFloat32 && q.dtype != DType::kFloat32))
    invalid("out_dtype must be the inputs' dtype, or float32 for 16-bit inputs");
  const MatmulActivation act = q.epilogue.activation;
  if (act != MatmulActivation::kNone && act != MatmulActivation::kRelu && act != MatmulActivation::kGeluErf &&
      act != MatmulActivation::kGeluTanh && act != MatmulActivation::kSilu)
    invalid("unknown activation " + std::to_string(static_cast<int>(act)));
  if (q.variant == MatmulVariant::kTensorCore && q.dtype == DType::kFloat32 && !q.allow_tf32)
    invalid("variant tensor_core with float32 needs allow_tf32=True (the tf32 kernel)");
  if (q.variant == MatmulVariant::kWgmma && q.dtype == DType::kFloat32 && !q.allow_tf32)
    invalid("variant wgmma takes float16, bfloat16, or float32 with allow_tf32=True (the tf32 kernel)");

  const bool tensor_cores = q.dtype != DType::kFloat32 || q.allow_tf32;
  const MatmulPath tc_path = q.dtype == DType::kFloat32 ? MatmulPath::kTensorCoreTf32 : MatmulPath::kTensorCore16;
  const MatmulPath wgmma_path = q.dtype == DType::kFloat32 ? MatmulPath::kWgmmaTf32 : MatmulPath::kWgmma16;
  const bool explicit_wgmma_config = q.config >= 0 && q.config < kMatmulNumConfigs &&
                                     kMatmulConfigs[q.config].path == wgmma_path;
  auto wgmma_here = [&] { return q.dtype == DType::kFloat32 ? wgmma_tf32_available() : wgmma_available(q.dtype); };
  MatmulPath path = MatmulPath::kSimt;
  switch (q.variant) {
    case MatmulVariant::kNaive:
      if (q.config != -1) invalid("the naive variant takes no config (use -1)");
      break;
    case MatmulVariant::kTiled: path = MatmulPath::kSimt; break;
    case MatmulVariant::kTensorCore: path = tc_path; break;
    case MatmulVariant::kWgmma: path = wgmma_path; break;
    case MatmulVariant::kSkinny:
      if (q.config != -1) invalid("the skinny variant takes no config (use -1)");
      [[fallthrough]];  // A with more rows than it takes: as auto
    case MatmulVariant::kAuto:
      if (!tensor_cores) {
        path = MatmulPath::kSimt;
      } else if (q.config == -1 ? wgmma_here() : explicit_wgmma_config) {
        path = wgmma_path;
      } else {
        path = tc_path;
      }
      break;
    default: invalid("unknown variant " + std::to_string(static_cast<int>(q.variant)));
  }
  if (q.variant != MatmulVariant::kNaive && q.config != -1) resolve_config(path, q.config, q, /*check_fit=*/false);
  if (path == MatmulPath::kWgmma16 && !wgmma_available(q.dtype))
    invalid(std::string("the wgmma kernel needs a compute capability 9.0 GPU and a module built for sm_90a") +
            (wgmma_built(q.dtype) ? "" : " (this module has no sm_90a wgmma kernels for this dtype)"));
  if (path == MatmulPath::kWgmmaTf32 && !wgmma_tf32_available())
    invalid(std::string("the wgmma kernel needs a compute capability 9.0 GPU and a module built for sm_90a") +
            (wgmma_tf32_built() ? "" : " (this module has no sm_90a wgmma kernels for this dtype)"));
  return path;
}

}  // namespace

void matmul(const MatmulParams& params, void* stream_ptr) {
  const MatmulPath path = checked_path(params);
  const MatmulParams& q = params;
  if (q.batch == 0 || q.m == 0 || q.n == 0) return;  // nothing to write
  if (q.a == nullptr || q.b == nullptr || q.out == nullptr) invalid("null data pointer");

  const MatmulParams p = normalized(params);
  const gpuStream_t stream = static_cast<gpuStream_t>(stream_ptr);
  // gridDim.z is one batch entry each, at most 65535: larger batches run as several launches.
  const int64_t elem_bytes = p.dtype == DType::kFloat32 ? 4 : 2;
  const int64_t out_bytes = p.out_dtype == DType::kFloat32 ? 4 : 2;
  for (int64_t b0 = 0; b0 < p.batch; b0 += kMaxGridZ) {
    MatmulParams s = p;
    s.batch = std::min(kMaxGridZ, p.batch - b0);
    s.a = static_cast<const char*>(p.a) + b0 * p.a_batch_stride * elem_bytes;
    s.b = static_cast<const char*>(p.b) + b0 * p.b_batch_stride * elem_bytes;
    s.out = static_cast<char*>(p.out) + b0 * p.out_batch_stride * out_bytes;
    if (p.epilogue.residual != nullptr)
      s.epilogue.residual =
          static_cast<const char*>(p.epilogue.residual) + b0 * p.epilogue.residual_batch_stride * out_bytes;
    run_slice(s, plan_slice(s, path, /*probe=*/false), stream);
  }
}

std::string matmul_plan(const MatmulParams& params) {
  const MatmulPath path = checked_path(params);
  if (params.batch == 0 || params.m == 0 || params.n == 0) return "none -1";
  MatmulParams s = normalized(params);
  s.batch = std::min(kMaxGridZ, s.batch);
  const SlicePlan plan = plan_slice(s, path, /*probe=*/true);
  return std::string(kernel_name(plan.kernel)) + " " + std::to_string(plan.config);
}

int32_t matmul_cluster_slots(int32_t size) { return cluster_slots(size); }

}  // namespace aiter_lite
