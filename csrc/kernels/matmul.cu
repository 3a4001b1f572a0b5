// aiter_lite::matmul for CUDA and HIP: out[b] = a[b] @ b[b], fp32 accumulation.
//
// Kernels (csrc/kernels/matmul_*.cuh; tile configs in csrc/include/matmul_configs.h):
//   kNaive       matmul_naive_kernel: one thread per output, any strides. Only on request.
//   kTiled       matmul_simt_kernel: register-blocked FFMA, any dtype (strict fp32 default).
//   kTensorCore  matmul_tc_kernel: mma.sync m16n8k16 (fp16/bf16) or m16n8k8 tf32 (fp32 with
//                allow_tf32; fp32 without allow_tf32 is refused with std::invalid_argument).
//   kAuto        tensor cores for fp16/bf16 and for fp32 with allow_tf32, else the SIMT kernel.
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
//   Output: any strides. Rows with out_col_stride == 1 (row stride and pointer aligned) get
//     2- (tensor cores) or 4-element (SIMT) stores, other layouts scalar stores.
// M, N, K: any size >= 0 up to 2^31 - 1 (tails are zero-filled on load and clipped on store; K == 0
// writes zeros). Batch: blockIdx.z, one entry per block; batches above 65535 run as several launches.
//
// Configs: MatmulParams::config indexes kMatmulConfigs; the config must belong to the path that
// runs and fit the device's shared memory (std::invalid_argument otherwise). -1 takes the path's
// default (kMatmulDefaultConfig; if it doesn't fit the device, the path's largest tile that does),
// or the path's smallest tile when the default would leave more than half of the SMs without a block.
// A tensor-core config given for a layout that falls back to SIMT is validated, then not used.
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
using matmul_detail::invalid;
using matmul_detail::kMaxDim;
using matmul_detail::OperandLayout;
using matmul_detail::operand_a;
using matmul_detail::operand_b;
using matmul_detail::path_name;

constexpr int64_t kMaxGridZ = 65535;

// ---- device properties, cached per device ----------------------------------------------------------

// A device attribute, read once per device.
template <int kWhich>
int cached_device_attribute(gpuDeviceAttr_t attr) {
  constexpr int kMaxDevices = 64;
  static std::atomic<int> cache[kMaxDevices] = {};
  const int dev = current_device();
  if (dev < 0 || dev >= kMaxDevices) invalid("device index out of range");
  int v = cache[dev].load(std::memory_order_relaxed);
  if (v == 0) {
    AITER_LITE_GPU_CHECK(gpuDeviceGetAttribute(&v, attr, dev));
    cache[dev].store(v, std::memory_order_relaxed);
  }
  return v;
}

int sm_count() { return cached_device_attribute<0>(gpuDevAttrMultiProcessorCount); }
// Largest dynamic shared memory a block may opt in to (227 KB on H100, 163 KB on A100).
int max_smem_per_block() { return cached_device_attribute<1>(gpuDevAttrMaxSharedMemoryPerBlockOptin); }

// ---- layout analysis ----------------------------------------------------------------------------

// Strides of size-1 dims (and the batch stride of a single batch) set to 0: they are never used to
// address anything, so they must not keep a layout off a fast path.
MatmulParams normalized(const MatmulParams& p) {
  MatmulParams q = p;
  if (q.batch == 1) q.a_batch_stride = q.b_batch_stride = q.out_batch_stride = 0;
  if (q.m == 1) q.a_row_stride = q.out_row_stride = 0;
  if (q.n == 1) q.b_col_stride = q.out_col_stride = 0;
  if (q.k == 1) q.a_col_stride = q.b_row_stride = 0;
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

// Tensor-core path for the call's dtype, or the SIMT kernel where the layout (or HIP) rules it out.
void run_tensor_core(const MatmulParams& p, gpuStream_t stream) {
  const MatmulPath path = p.dtype == DType::kFloat32 ? MatmulPath::kTensorCoreTf32 : MatmulPath::kTensorCore16;
  const int config = resolve_config(path, p.config, p);
#if defined(AITER_LITE_CUDA)
  const int64_t eb = p.dtype == DType::kFloat32 ? 4 : 2;
  const TcOrientation a_or = tc_orientation(operand_a(p, eb));
  const TcOrientation b_or = tc_orientation(operand_b(p, eb));
  if (a_or != TcOrientation::kUnsupported && b_or != TcOrientation::kUnsupported) {
    const bool a_k = a_or == TcOrientation::kKMajor, b_k = b_or == TcOrientation::kKMajor;
    switch (p.dtype) {
      case DType::kFloat32: return matmul_detail::tc_cuda<float>(p, config, a_k, b_k, stream);
      case DType::kFloat16: return matmul_detail::tc_cuda<half_t>(p, config, a_k, b_k, stream);
      case DType::kBFloat16: return matmul_detail::tc_cuda<bfloat16_t>(p, config, a_k, b_k, stream);
    }
    invalid("unsupported dtype");
  }
#else
  (void)config;
#endif
  const int simt_config = resolve_config(MatmulPath::kSimt, -1, p);
  AITER_LITE_DISPATCH_DTYPE(p.dtype, [&] { matmul_detail::simt_cuda<scalar_t>(p, simt_config, stream); });
}

}  // namespace

void matmul(const MatmulParams& params, void* stream_ptr) {
  const MatmulParams& q = params;
  if (q.batch < 0 || q.m < 0 || q.n < 0 || q.k < 0) invalid("negative size");
  if (q.m > kMaxDim || q.n > kMaxDim || q.k > kMaxDim) invalid("m, n and k must be below 2^31");
  if (q.dtype != DType::kFloat32 && q.dtype != DType::kFloat16 && q.dtype != DType::kBFloat16)
    invalid("unsupported dtype");
  if (q.variant == MatmulVariant::kTensorCore && q.dtype == DType::kFloat32 && !q.allow_tf32)
    invalid("variant tensor_core with float32 needs allow_tf32=True (the tf32 kernel)");

  // The kernel family the variant asks for; an explicit config must belong to it, whatever the sizes.
  const bool tensor_cores = q.dtype != DType::kFloat32 || q.allow_tf32;
  const MatmulPath tc_path = q.dtype == DType::kFloat32 ? MatmulPath::kTensorCoreTf32 : MatmulPath::kTensorCore16;
  MatmulPath path = MatmulPath::kSimt;
  switch (q.variant) {
    case MatmulVariant::kNaive:
      if (q.config != -1) invalid("the naive variant takes no config (use -1)");
      break;
    case MatmulVariant::kTiled: path = MatmulPath::kSimt; break;
    case MatmulVariant::kTensorCore: path = tc_path; break;
    case MatmulVariant::kAuto: path = tensor_cores ? tc_path : MatmulPath::kSimt; break;
    default: invalid("unknown variant " + std::to_string(static_cast<int>(q.variant)));
  }
  if (q.variant != MatmulVariant::kNaive && q.config != -1) resolve_config(path, q.config, q, /*check_fit=*/false);

  if (q.batch == 0 || q.m == 0 || q.n == 0) return;  // nothing to write
  if (q.a == nullptr || q.b == nullptr || q.out == nullptr) invalid("null data pointer");

  const MatmulParams p = normalized(params);
  const gpuStream_t stream = static_cast<gpuStream_t>(stream_ptr);
  // gridDim.z is one batch entry each, at most 65535: larger batches run as several launches.
  const int64_t elem_bytes = p.dtype == DType::kFloat32 ? 4 : 2;
  for (int64_t b0 = 0; b0 < p.batch; b0 += kMaxGridZ) {
    MatmulParams s = p;
    s.batch = std::min(kMaxGridZ, p.batch - b0);
    s.a = static_cast<const char*>(p.a) + b0 * p.a_batch_stride * elem_bytes;
    s.b = static_cast<const char*>(p.b) + b0 * p.b_batch_stride * elem_bytes;
    s.out = static_cast<char*>(p.out) + b0 * p.out_batch_stride * elem_bytes;
    if (s.variant == MatmulVariant::kNaive) {
      AITER_LITE_DISPATCH_DTYPE(s.dtype, [&] { matmul_detail::naive_launch<scalar_t>(s, stream); });
    } else if (path == MatmulPath::kSimt) {
      const int config = resolve_config(MatmulPath::kSimt, s.config, s);
      AITER_LITE_DISPATCH_DTYPE(s.dtype, [&] { matmul_detail::simt_cuda<scalar_t>(s, config, stream); });
    } else {
      run_tensor_core(s, stream);
    }
  }
}

}  // namespace aiter_lite
