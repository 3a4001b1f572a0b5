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
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "dtype_traits.cuh"
#include "matmul_common.cuh"
#include "matmul_configs.h"
#include "matmul_naive.cuh"
#include "matmul_params.h"
#include "matmul_simt.cuh"
#include "matmul_tc.cuh"
#include "port.h"

namespace aiter_lite {
namespace {

using matmul_detail::GemmArgs;
using matmul_detail::SimtLoad;

constexpr int64_t kMaxDim = 0x7fffffff;
constexpr int64_t kMaxGridZ = 65535;

[[noreturn]] void invalid(const std::string& what) { throw std::invalid_argument("aiter_lite.matmul: " + what); }

const char* path_name(MatmulPath path) {
  switch (path) {
    case MatmulPath::kSimt: return "simt (variant tiled)";
    case MatmulPath::kTensorCore16: return "tensor_core fp16/bf16";
    case MatmulPath::kTensorCoreTf32: return "tensor_core tf32";
  }
  return "unknown";
}

// ---- device properties, cached per device ----------------------------------------------------------

int current_device() {
  int dev = 0;
  AITER_LITE_GPU_CHECK(gpuGetDevice(&dev));
  return dev;
}

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

// Raises a kernel's dynamic shared-memory limit once per device (needed above 48 KB). Templated on
// the kernel's traits so each instantiation has its own flag set.
template <class Traits, typename Kernel>
void ensure_dynamic_smem(Kernel kernel) {
  if constexpr (Traits::kSmemBytes > 48 * 1024) {
    static std::atomic<uint64_t> done{0};
    const int dev = current_device();
    const uint64_t bit = uint64_t{1} << (dev & 63);
    if ((done.load(std::memory_order_acquire) & bit) == 0) {
      AITER_LITE_GPU_CHECK(gpuFuncSetAttribute(reinterpret_cast<const void*>(kernel),
                                               gpuFuncAttributeMaxDynamicSharedMemorySize, Traits::kSmemBytes));
      done.fetch_or(bit, std::memory_order_acq_rel);
    }
  }
}

// ---- layout analysis ----------------------------------------------------------------------------

bool aligned(const void* ptr, int64_t bytes) { return reinterpret_cast<uintptr_t>(ptr) % bytes == 0; }

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

OperandLayout operand_a(const MatmulParams& p, int64_t eb) {
  return {p.a, p.m, p.k, p.a_row_stride, p.a_col_stride, p.a_batch_stride, eb};
}
OperandLayout operand_b(const MatmulParams& p, int64_t eb) {
  return {p.b, p.n, p.k, p.b_col_stride, p.b_row_stride, p.b_batch_stride, eb};
}

enum class TcOrientation { kKMajor, kMNMajor, kUnsupported };

TcOrientation tc_orientation(const OperandLayout& op) {
  const int64_t vec = 16 / op.elem_bytes;
  if (op.k_contiguous() && op.vec_ok(vec, op.mn_stride)) return TcOrientation::kKMajor;
  if (op.mn_contiguous() && op.vec_ok(vec, op.k_stride)) return TcOrientation::kMNMajor;
  return TcOrientation::kUnsupported;
}

SimtLoad simt_load_mode(const OperandLayout& op) {
  if (op.k_contiguous() && op.vec_ok(4, op.mn_stride)) return SimtLoad::kVecK;
  if (op.mn_contiguous() && op.vec_ok(4, op.k_stride)) return SimtLoad::kVecMN;
  // Scalar loads along the dim with the smaller stride.
  const bool along_mn = op.k_size == 1 || (op.mn_size > 1 && op.mn_stride <= op.k_stride);
  return along_mn ? SimtLoad::kScalarMN : SimtLoad::kScalarK;
}

// Output rows contiguous, and row/batch strides and pointer aligned to `vec` elements.
bool out_vec_ok(const MatmulParams& p, int64_t vec, int64_t elem_bytes) {
  return (p.out_col_stride == 1 || p.n == 1) && p.out_row_stride % vec == 0 && p.out_batch_stride % vec == 0 &&
         aligned(p.out, vec * elem_bytes);
}

template <typename T>
GemmArgs<T> make_args(const MatmulParams& p) {
  GemmArgs<T> g{};
  g.a = static_cast<const T*>(p.a);
  g.b = static_cast<const T*>(p.b);
  g.out = static_cast<T*>(p.out);
  g.batch = p.batch;
  g.a_batch_stride = p.a_batch_stride; g.a_row_stride = p.a_row_stride; g.a_col_stride = p.a_col_stride;
  g.b_batch_stride = p.b_batch_stride; g.b_row_stride = p.b_row_stride; g.b_col_stride = p.b_col_stride;
  g.out_batch_stride = p.out_batch_stride; g.out_row_stride = p.out_row_stride;
  g.out_col_stride = p.out_col_stride;
  g.m = static_cast<int32_t>(p.m);
  g.n = static_cast<int32_t>(p.n);
  g.k = static_cast<int32_t>(p.k);
  return g;
}

template <typename T>
dim3 set_tile_grid(GemmArgs<T>& g, int64_t bm, int64_t bn) {
  const int64_t tiles_m = (g.m + bm - 1) / bm, tiles_n = (g.n + bn - 1) / bn;
  if (tiles_m * tiles_n > kMaxDim) invalid("output too large for one grid (more than 2^31 - 1 tiles)");
  g.tiles_m = static_cast<int32_t>(tiles_m);
  g.tiles_n = static_cast<int32_t>(tiles_n);
  return dim3(static_cast<unsigned>(tiles_m * tiles_n), 1, static_cast<unsigned>(g.batch));
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

// Runtime config index -> compile-time kConfig. Instantiates `f` only for the table's configs of
// kPath, so no kernel is compiled for a config that isn't in the table.
template <MatmulPath kPath, typename F, int... kIs>
void with_config(int config, F&& f, std::integer_sequence<int, kIs...>) {
  bool launched = false;
  auto one = [&](auto index) {
    constexpr int kI = decltype(index)::value;
    if constexpr (kMatmulConfigs[kI].path == kPath) {
      if (config == kI) {
        f(index);
        launched = true;
      }
    }
  };
  (one(std::integral_constant<int, kIs>{}), ...);
  if (!launched) invalid("no " + std::string(path_name(kPath)) + " kernel for config " + std::to_string(config));
}

template <MatmulPath kPath, typename F>
void with_config(int config, F&& f) {
  with_config<kPath>(config, std::forward<F>(f), std::make_integer_sequence<int, kMatmulNumConfigs>{});
}

// Runtime bool -> compile-time bool.
template <typename F>
void with_bool(bool value, F&& f) {
  if (value) f(std::true_type{});
  else f(std::false_type{});
}

// ---- launchers ----------------------------------------------------------------------------------

template <typename T>
void naive_launch(const MatmulParams& p, gpuStream_t stream) {
  GemmArgs<T> g = make_args<T>(p);
  constexpr int kThreads = matmul_detail::NaiveMatmulTraits::kThreads;
  const int64_t blocks = (p.m * p.n + kThreads - 1) / kThreads;
  if (blocks > kMaxDim) invalid("output too large for the naive kernel");
  const dim3 grid(static_cast<unsigned>(blocks), 1, static_cast<unsigned>(p.batch));
  matmul_detail::matmul_naive_kernel<T><<<grid, kThreads, 0, stream>>>(g);
  AITER_LITE_LAUNCH_CHECK();
}

template <class Traits>
void simt_launch(const MatmulParams& p, gpuStream_t stream) {
  using T = typename Traits::elem_t;
  GemmArgs<T> g = make_args<T>(p);
  const int64_t eb = sizeof(T);
  g.a_load = simt_load_mode(operand_a(p, eb));
  g.b_load = simt_load_mode(operand_b(p, eb));
  g.out_vec = out_vec_ok(p, 4, eb);
  const dim3 grid = set_tile_grid(g, Traits::kBM, Traits::kBN);
  auto kernel = matmul_detail::matmul_simt_kernel<Traits>;
  ensure_dynamic_smem<Traits>(kernel);
  kernel<<<grid, Traits::kThreads, Traits::kSmemBytes, stream>>>(g);
  AITER_LITE_LAUNCH_CHECK();
}

template <typename T>
void simt_cuda(const MatmulParams& p, int config, gpuStream_t stream) {
  with_config<MatmulPath::kSimt>(config, [&](auto index) {
    simt_launch<matmul_detail::SimtMatmulTraits<T, decltype(index)::value>>(p, stream);
  });
}

#if defined(AITER_LITE_CUDA)
template <class Traits>
void tc_launch(const MatmulParams& p, gpuStream_t stream) {
  using T = typename Traits::elem_t;
  GemmArgs<T> g = make_args<T>(p);
  g.out_vec = out_vec_ok(p, 2, sizeof(T));
  const dim3 grid = set_tile_grid(g, Traits::kBM, Traits::kBN);
  auto kernel = matmul_detail::matmul_tc_kernel<Traits>;
  ensure_dynamic_smem<Traits>(kernel);
  kernel<<<grid, Traits::kThreads, Traits::kSmemBytes, stream>>>(g);
  AITER_LITE_LAUNCH_CHECK();
}

// T: float means tf32. Orientations come from tc_orientation (both supported here).
template <typename T>
void tc_cuda(const MatmulParams& p, int config, bool a_k_major, bool b_k_major, gpuStream_t stream) {
  constexpr MatmulPath kPath = std::is_same<T, float>::value ? MatmulPath::kTensorCoreTf32 : MatmulPath::kTensorCore16;
  with_config<kPath>(config, [&](auto index) {
    with_bool(a_k_major, [&](auto a_k) {
      with_bool(b_k_major, [&](auto b_k) {
        tc_launch<matmul_detail::TcMatmulTraits<T, decltype(index)::value, decltype(a_k)::value,
                                                decltype(b_k)::value>>(p, stream);
      });
    });
  });
}
#endif

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
      case DType::kFloat32: return tc_cuda<float>(p, config, a_k, b_k, stream);
      case DType::kFloat16: return tc_cuda<half_t>(p, config, a_k, b_k, stream);
      case DType::kBFloat16: return tc_cuda<bfloat16_t>(p, config, a_k, b_k, stream);
    }
    invalid("unsupported dtype");
  }
#else
  (void)config;
#endif
  const int simt_config = resolve_config(MatmulPath::kSimt, -1, p);
  AITER_LITE_DISPATCH_DTYPE(p.dtype, [&] { simt_cuda<scalar_t>(p, simt_config, stream); });
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
      AITER_LITE_DISPATCH_DTYPE(s.dtype, [&] { naive_launch<scalar_t>(s, stream); });
    } else if (path == MatmulPath::kSimt) {
      const int config = resolve_config(MatmulPath::kSimt, s.config, s);
      AITER_LITE_DISPATCH_DTYPE(s.dtype, [&] { simt_cuda<scalar_t>(s, config, stream); });
    } else {
      run_tensor_core(s, stream);
    }
  }
}

}  // namespace aiter_lite
