// Plain parameter struct and launcher declaration for (batched) matmul: out = a @ b.
// No torch and no CUDA headers; each backend implements matmul().
#pragma once
#include <cstdint>
#include <string>

#include "dtype.h"

namespace aiter_lite {

// kSkinny: the skinny kernel (matmul_skinny.cuh) where A has at most 16 rows, else as kAuto.
enum class MatmulVariant : int32_t { kAuto = 0, kNaive = 1, kTiled = 2, kTensorCore = 3, kWgmma = 4, kSkinny = 5 };

enum class MatmulActivation : int32_t { kNone = 0, kRelu = 1, kGeluErf = 2, kGeluTanh = 3, kSilu = 4 };

// What the kernels do with an fp32 accumulator acc of out[z][row][col] before its single rounding:
//   out = act(alpha * acc + bias[col]) + beta * residual[z][row][col]
// Defaults (no bias, no residual, kNone, alpha 1) leave acc as it is (is_identity()).
struct MatmulEpilogue {
  const void* bias;      // [n], element stride bias_stride, dtype bias_dtype; null: none
  const void* residual;  // [batch, m, n] in out_dtype; null: none. May be out itself (same strides):
                         // each element is read, then written, by the same thread
  int64_t bias_stride;
  int64_t residual_batch_stride, residual_row_stride, residual_col_stride;
  float alpha, beta;
  DType bias_dtype;
  MatmulActivation activation;
  // GPU kernels: out (and residual) are fp32 while a and b are 16-bit (out_dtype float32). Set by the
  // GPU matmul() from out_dtype; the epilogue kernels store the fp32 value without rounding to 16 bits.
  bool out_fp32;

  bool is_identity() const {
    return bias == nullptr && residual == nullptr && activation == MatmulActivation::kNone && alpha == 1.0f &&
           !out_fp32;
  }
};

// a: [batch, m, k], b: [batch, k, n], out: [batch, m, n]; strides in elements, any sign-free
// layout (row- or column-major, batch stride 0 broadcasts). a and b share one dtype, out has
// out_dtype (the same, or fp32 for 16-bit inputs); accumulation is fp32. allow_tf32 lets fp32
// inputs use TF32 tensor cores.
struct MatmulParams {
  const void* a;
  const void* b;
  void* out;  // never aliases a or b (checked in Python)

  int64_t batch, m, n, k;
  int64_t a_batch_stride, a_row_stride, a_col_stride;
  int64_t b_batch_stride, b_row_stride, b_col_stride;
  int64_t out_batch_stride, out_row_stride, out_col_stride;

  DType dtype;
  DType out_dtype;
  MatmulEpilogue epilogue;
  bool allow_tf32;
  MatmulVariant variant;
  int32_t config;  // index into the backend's tile-config table; -1 = backend default
};

void matmul(const MatmulParams& params, void* stream);

// The kernel and tile config matmul() would run for `params` (its first batch slice), as
// "<kernel> <config>": kernel naive | simt | tensor_core | wgmma | wgmma_tf32 (GPU), cpu (CPU backend), or none
// (nothing to write); config a table index, -1 where there is none. Checks the arguments like
// matmul(); launches nothing and touches no data.
std::string matmul_plan(const MatmulParams& params);

// Clusters of `size` CTAs (1, 2, 4 or 8), each holding an SM's worth of shared memory as the wgmma
// kernels do, that the current GPU keeps resident at once: the slots the wgmma planner counts waves
// in (an H100 holds 132 single CTAs, 66 pairs, but only 30 clusters of 4, since a cluster lives in
// one GPC). 0 on the CPU backend and on GPUs without clusters.
int32_t matmul_cluster_slots(int32_t size);

}  // namespace aiter_lite
