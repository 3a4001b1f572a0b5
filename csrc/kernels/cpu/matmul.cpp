// CPU matmul: out[b] = a[b] @ b[b], fp32/fp16/bf16, any element strides, fp32 accumulation.
// Blocked GEMM: each OpenMP task owns an mc x nc tile of out. For every kKC-deep slice of k it
// packs the A and B blocks into contiguous fp32 panels (this also absorbs strides and dtype,
// and zero-pads the edges), then runs a kMR x kNR register-blocked micro-kernel over them,
// accumulating into an fp32 tile buffer that goes through the epilogue (bias, activation, residual:
// MatmulEpilogue) and is converted into out at the end.
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "cpu_dtype.h"
#include "cpu_parallel.h"
#include "matmul_epilogue_math.h"
#include "matmul_params.h"

namespace aiter_lite {
namespace {

// Micro-tile of fp32 accumulators: 12 x 32 = 24 zmm registers with AVX-512 (which has 32),
// 6 x 16 = 12 ymm registers with AVX2 (16).
#if defined(__AVX512F__)
constexpr int64_t kMR = 12;
constexpr int64_t kNR = 32;
#else
constexpr int64_t kMR = 6;
constexpr int64_t kNR = 16;
#endif
// Largest tile of out per task, and the depth of one packed slice of k. A B panel (kKC x nc)
// is packed once per tile and reused by mc / kMR micro-kernel calls, an A panel reused by
// nc / kNR calls, hence large tiles; the packed panels and the fp32 tile (256 KiB each with
// AVX-512) live in L2, the kKC x kNR B sliver of the inner loop (32 KiB) in L1.
constexpr int64_t kMaxMC = 256;
constexpr int64_t kMaxNC = 256;
constexpr int64_t kKC = 256;

// c[i * ldc + j] += sum_p a[p * kMR + i] * b[p * kNR + j] for i < kMR, j < kNR. The fixed trip
// counts let GCC keep acc in vector registers and unroll the i/j loops completely.
#if defined(__AVX512F__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target("prefer-vector-width=512")))  // GCC's default tuning stops at 256 bits
#endif
void micro_kernel(int64_t kc, const float* __restrict a, const float* __restrict b, float* __restrict c,
                  int64_t ldc) {
  float acc[kMR][kNR];
  for (int64_t i = 0; i < kMR; ++i)
    for (int64_t j = 0; j < kNR; ++j) acc[i][j] = c[i * ldc + j];
  for (int64_t p = 0; p < kc; ++p) {
    const float* bp = b + p * kNR;
    for (int64_t i = 0; i < kMR; ++i) {
      const float ai = a[p * kMR + i];
      for (int64_t j = 0; j < kNR; ++j) acc[i][j] += ai * bp[j];
    }
  }
  for (int64_t i = 0; i < kMR; ++i)
    for (int64_t j = 0; j < kNR; ++j) c[i * ldc + j] = acc[i][j];
}

// Packs the n x kc block at src (stride si along n, sp along k) into ceil(n / W) slivers, each
// kc x W and k-major: dst[(i / W) * kc * W + p * W + i % W] = src[i * si + p * sp], zero-padded
// to a whole sliver. A blocks use W = kMR (n = rows), B blocks W = kNR (n = columns). The
// source is read along its contiguous direction.
template <int64_t W, typename T>
void pack_panel(const T* src, int64_t si, int64_t sp, int64_t n, int64_t kc, float* dst) {
  const int64_t full = n / W * W;  // elements in whole slivers
  if (full < n) std::fill(dst + full * kc, dst + (full + W) * kc, 0.f);
  if (sp < si) {  // contiguous along k (row-major A, column-major B)
    for (int64_t i = 0; i < n; ++i) {
      float* d = dst + i / W * W * kc + i % W;
      for (int64_t p = 0; p < kc; ++p) d[p * W] = to_float(src[i * si + p * sp]);
    }
    return;
  }
  for (int64_t p = 0; p < kc; ++p) {  // contiguous along n: copy W-wide runs of each k-slice
    const T* s = src + p * sp;
    float* d = dst + p * W;
    for (int64_t i0 = 0; i0 < full; i0 += W) {
      if (si == 1) {
        for (int64_t i = 0; i < W; ++i) d[i0 * kc + i] = to_float(s[i0 + i]);  // a few vector moves
      } else {
        for (int64_t i = 0; i < W; ++i) d[i0 * kc + i] = to_float(s[(i0 + i) * si]);
      }
    }
    for (int64_t i = full; i < n; ++i) d[full * kc + i - full] = to_float(s[i * si]);
  }
}

// Block size that splits extent into at least min_parts near-equal blocks of at most max_size
// (a multiple of align) elements; the size is a multiple of align, the last block may be short.
int64_t block_size(int64_t extent, int64_t max_size, int64_t align, int64_t min_parts) {
  const int64_t cap = std::max(max_size / align * align, align);  // a multiple of align: the packed
  const int64_t parts = std::max((extent + cap - 1) / cap, min_parts);  // panels pad to whole slivers
  const int64_t size = (extent + parts - 1) / parts;
  return std::min((size + align - 1) / align * align, cap);
}

// Per-thread scratch in whole cache lines, 64-byte aligned (C++17 aligned new): vector loads
// from the packed panels never straddle two lines.
struct alignas(64) CacheLine { float v[16]; };
constexpr int64_t lines_for(int64_t floats) { return (floats + 15) / 16; }

float load_float(const void* ptr, DType dtype, int64_t idx) {
  switch (dtype) {
    case DType::kFloat16: return to_float(static_cast<const Half*>(ptr)[idx]);
    case DType::kBFloat16: return to_float(static_cast<const BFloat16*>(ptr)[idx]);
    default: return static_cast<const float*>(ptr)[idx];
  }
}

// row[j] = act(alpha * row[j] + bias[n0 + j]) + beta * residual_row[j * stride] for j < nc, in place.
template <typename OutT>
void epilogue_row(const MatmulEpilogue& e, float* row, int64_t n0, int64_t nc, const OutT* residual_row,
                  int64_t residual_stride) {
  for (int64_t j = 0; j < nc; ++j) {
    float v = e.alpha * row[j];
    if (e.bias != nullptr) v += load_float(e.bias, e.bias_dtype, (n0 + j) * e.bias_stride);
    v = matmul_activation(e.activation, v);
    if (residual_row != nullptr) v += e.beta * to_float(residual_row[j * residual_stride]);
    row[j] = v;
  }
}

template <typename T, typename OutT>
void matmul_impl(const MatmulParams& p) {
  const T* a = static_cast<const T*>(p.a);
  const T* b = static_cast<const T*>(p.b);
  OutT* out = static_cast<OutT*>(p.out);
  const MatmulEpilogue& e = p.epilogue;
  const bool epilogue = !e.is_identity();
  const OutT* residual = static_cast<const OutT*>(e.residual);
  const bool parallel = worth_threads(p.batch * p.m * p.n * p.k);
#ifdef _OPENMP
  const int64_t threads = parallel ? omp_get_max_threads() : 1;
#else
  const int64_t threads = 1;
#endif
  // Tiles: as large as allowed, but enough of them to keep every thread busy.
  const int64_t nc_max = block_size(p.n, kMaxNC, kNR, 1);
  const int64_t n_tiles = (p.n + nc_max - 1) / nc_max;
  const int64_t mc_max = block_size(p.m, kMaxMC, kMR, (threads + p.batch * n_tiles - 1) / (p.batch * n_tiles));
  const int64_t m_tiles = (p.m + mc_max - 1) / mc_max;
  const int64_t tiles = p.batch * m_tiles * n_tiles;
  const int64_t ldc = nc_max;  // row stride of the fp32 tile

#pragma omp parallel if (parallel)
  {
    std::vector<CacheLine> scratch(lines_for(mc_max * kKC) + lines_for(kKC * nc_max) + lines_for(mc_max * ldc));
    float* a_pack = scratch.data()->v;
    float* b_pack = a_pack + lines_for(mc_max * kKC) * 16;
    float* c_tile = b_pack + lines_for(kKC * nc_max) * 16;
    // Dynamic: edge tiles are smaller, and there are few tiles per thread.
#pragma omp for schedule(dynamic, 1)
    for (int64_t tile = 0; tile < tiles; ++tile) {
      const int64_t batch = tile / (m_tiles * n_tiles);
      const int64_t m0 = tile / n_tiles % m_tiles * mc_max;
      const int64_t n0 = tile % n_tiles * nc_max;
      const int64_t mc = std::min(mc_max, p.m - m0);
      const int64_t nc = std::min(nc_max, p.n - n0);
      const T* a_tile = a + batch * p.a_batch_stride + m0 * p.a_row_stride;
      const T* b_tile = b + batch * p.b_batch_stride + n0 * p.b_col_stride;

      std::fill(c_tile, c_tile + mc_max * ldc, 0.f);
      for (int64_t k0 = 0; k0 < p.k; k0 += kKC) {
        const int64_t kc = std::min(kKC, p.k - k0);
        pack_panel<kMR>(a_tile + k0 * p.a_col_stride, p.a_row_stride, p.a_col_stride, mc, kc, a_pack);
        pack_panel<kNR>(b_tile + k0 * p.b_row_stride, p.b_col_stride, p.b_row_stride, nc, kc, b_pack);
        // The packed panels are zero-padded, so edge tiles run the full micro-kernel too.
        for (int64_t j = 0; j < nc; j += kNR)
          for (int64_t i = 0; i < mc; i += kMR)
            micro_kernel(kc, a_pack + i * kc, b_pack + j * kc, c_tile + i * ldc + j, ldc);
      }

      OutT* out_tile = out + batch * p.out_batch_stride + m0 * p.out_row_stride + n0 * p.out_col_stride;
      for (int64_t i = 0; i < mc; ++i) {
        if (epilogue) {
          const OutT* r = residual == nullptr ? nullptr
                                              : residual + batch * e.residual_batch_stride +
                                                    (m0 + i) * e.residual_row_stride + n0 * e.residual_col_stride;
          epilogue_row(e, c_tile + i * ldc, n0, nc, r, e.residual_col_stride);
        }
        store_row(c_tile + i * ldc, out_tile + i * p.out_row_stride, p.out_col_stride, nc);
      }
    }
  }
}

}  // namespace

// allow_tf32, variant and config select GPU kernels; the CPU always runs the code above.
// out_dtype: the inputs' dtype, or fp32 for 16-bit inputs.
void matmul(const MatmulParams& p, void* /*stream: CPU*/) {
  if (p.batch <= 0 || p.m <= 0 || p.n <= 0) return;
  if (p.out_dtype != p.dtype && p.out_dtype != DType::kFloat32)
    throw std::invalid_argument("aiter_lite.matmul: out_dtype must be the inputs' dtype or float32");
  dispatch_dtype(p.dtype, "matmul", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (p.out_dtype == p.dtype) {
      matmul_impl<T, T>(p);
    } else {
      matmul_impl<T, float>(p);
    }
  });
}

std::string matmul_plan(const MatmulParams& p) {
  return p.batch <= 0 || p.m <= 0 || p.n <= 0 ? "none -1" : "cpu -1";
}

int32_t matmul_cluster_slots(int32_t) { return 0; }

}  // namespace aiter_lite
