// Definitions of the matmul launchers declared in matmul_launch.h: runtime config -> compile-time
// kernel traits, kernel arguments, grid, shared-memory opt-in, launch. Included only by the files
// that instantiate kernels (matmul_naive.cu, matmul_simt.cu, matmul_tc_*.cu), each of which
// explicitly instantiates its share of the launchers (a tc file: its shard's, shard.h); never by
// matmul.cu (the dispatch).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

#include "dtype_traits.cuh"
#include "matmul_common.cuh"
#include "matmul_configs.h"
#include "matmul_launch.h"
#include "matmul_naive.cuh"
#include "matmul_params.h"
#include "matmul_simt.cuh"
#include "matmul_tc.cuh"
#include "port.h"
#include "shard.h"

namespace aiter_lite {
namespace matmul_detail {

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

// ---- per-launch layout decisions ----------------------------------------------------------------

inline SimtLoad simt_load_mode(const OperandLayout& op) {
  if (op.k_contiguous() && op.vec_ok(4, op.mn_stride)) return SimtLoad::kVecK;
  if (op.mn_contiguous() && op.vec_ok(4, op.k_stride)) return SimtLoad::kVecMN;
  // Scalar loads along the dim with the smaller stride.
  const bool along_mn = op.k_size == 1 || (op.mn_size > 1 && op.mn_stride <= op.k_stride);
  return along_mn ? SimtLoad::kScalarMN : SimtLoad::kScalarK;
}

// Bytes of one out (and residual) element for a kernel whose inputs have in_bytes: 4 under
// out_fp32 (out_dtype float32 with 16-bit inputs).
inline int64_t out_elem_bytes(const MatmulParams& p, int64_t in_bytes) {
  return p.epilogue.out_fp32 ? 4 : in_bytes;
}

// Output rows contiguous, and row/batch strides and pointer aligned to `vec` elements.
inline bool out_vec_ok(const MatmulParams& p, int64_t vec, int64_t elem_bytes) {
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
  g.epi = p.epilogue;
  g.epi_active = !p.epilogue.is_identity();
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

// ---- runtime -> compile-time --------------------------------------------------------------------

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
  constexpr int kThreads = NaiveMatmulTraits::kThreads;
  const int64_t blocks = (p.m * p.n + kThreads - 1) / kThreads;
  if (blocks > kMaxDim) invalid("output too large for the naive kernel");
  const dim3 grid(static_cast<unsigned>(blocks), 1, static_cast<unsigned>(p.batch));
  matmul_naive_kernel<T><<<grid, kThreads, 0, stream>>>(g);
  AITER_LITE_LAUNCH_CHECK();
}

template <class Traits>
void simt_launch(const MatmulParams& p, gpuStream_t stream) {
  using T = typename Traits::elem_t;
  GemmArgs<T> g = make_args<T>(p);
  const int64_t eb = sizeof(T);
  g.a_load = simt_load_mode(operand_a(p, eb));
  g.b_load = simt_load_mode(operand_b(p, eb));
  g.out_vec = out_vec_ok(p, 4, out_elem_bytes(p, eb));
  const dim3 grid = set_tile_grid(g, Traits::kBM, Traits::kBN);
  auto kernel = matmul_simt_kernel<Traits>;
  ensure_dynamic_smem<Traits>(kernel);
  kernel<<<grid, Traits::kThreads, Traits::kSmemBytes, stream>>>(g);
  AITER_LITE_LAUNCH_CHECK();
}

template <typename T>
void simt_cuda(const MatmulParams& p, int config, gpuStream_t stream) {
  with_config<MatmulPath::kSimt>(config, [&](auto index) {
    simt_launch<SimtMatmulTraits<T, decltype(index)::value>>(p, stream);
  });
}

#if defined(AITER_LITE_CUDA)
// Blocks of `kernel` (kThreads threads, kSmemBytes of dynamic shared memory) that the current device
// runs at once: SMs x blocks per SM, read once per device. Call after ensure_dynamic_smem.
template <class Traits, typename Kernel>
int64_t resident_blocks(Kernel kernel) {
  static std::atomic<int64_t> cache[kMaxCachedDevices] = {};
  return per_device(cache,
                    [&](int dev) { return resident_blocks_on(dev, kernel, Traits::kThreads, Traits::kSmemBytes); });
}

// The tensor-core kernel is persistent: one block per resident slot (or per work item when there
// are fewer), each looping over work items (tile, batch entry); see matmul_tc_kernel. A launch
// takes at most 2^31 - 1 work items (its indices are 32-bit): more batch entries than that run as
// several launches.
template <class Traits>
void tc_launch(const MatmulParams& p, gpuStream_t stream) {
  using T = typename Traits::elem_t;
  GemmArgs<T> g = make_args<T>(p);
  const int64_t out_bytes = out_elem_bytes(p, sizeof(T));
  g.out_vec = out_vec_ok(p, 2, out_bytes);
  const int64_t tiles = set_tile_grid(g, Traits::kBM, Traits::kBN).x;
  auto kernel = matmul_tc_kernel<Traits>;
  ensure_dynamic_smem<Traits>(kernel);
  const int64_t resident = resident_blocks<Traits>(kernel);
  const int64_t batch_per_launch = std::max<int64_t>(1, kMaxDim / tiles);
  for (int64_t b0 = 0; b0 < p.batch; b0 += batch_per_launch) {
    GemmArgs<T> s = g;
    s.batch = std::min(batch_per_launch, p.batch - b0);
    s.work_items = static_cast<int32_t>(tiles * s.batch);
    s.a += b0 * p.a_batch_stride;
    s.b += b0 * p.b_batch_stride;
    s.out = reinterpret_cast<T*>(reinterpret_cast<char*>(g.out) + b0 * p.out_batch_stride * out_bytes);
    if (g.epi.residual != nullptr)
      s.epi.residual = static_cast<const char*>(g.epi.residual) + b0 * p.epilogue.residual_batch_stride * out_bytes;
    const dim3 grid(static_cast<unsigned>(std::min(tiles * s.batch, resident)), 1, 1);
    kernel<<<grid, Traits::kThreads, Traits::kSmemBytes, stream>>>(s);
    AITER_LITE_LAUNCH_CHECK();
  }
}

// T: float means tf32. Orientations come from tc_orientation (both supported here). Compiles the
// kernels of this shard's items only (matmul_launch.h, tc_item); the dispatch (tc_cuda) never asks
// for another's.
template <typename T, int kShard, int kShards>
void tc_shard_cuda(const MatmulParams& p, int config, bool a_k_major, bool b_k_major, gpuStream_t stream) {
  constexpr MatmulPath kPath = std::is_same<T, float>::value ? MatmulPath::kTensorCoreTf32 : MatmulPath::kTensorCore16;
  with_config<kPath>(config, [&](auto index) {
    constexpr int kConfig = decltype(index)::value;
    with_bool(a_k_major, [&](auto a_k) {
      constexpr bool kAKMajor = decltype(a_k)::value;
      with_bool(b_k_major, [&](auto b_k) {
        constexpr bool kBKMajor = decltype(b_k)::value;
        if constexpr (in_shard(tc_item(kConfig, kAKMajor, kBKMajor), kShard, kShards))
          tc_launch<TcMatmulTraits<T, kConfig, kAKMajor, kBKMajor>>(p, stream);
        else
          invalid("tensor-core config " + std::to_string(config) + " asked of the wrong shard");
      });
    });
  });
}
#endif

}  // namespace matmul_detail
}  // namespace aiter_lite
