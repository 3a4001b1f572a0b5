// Reference kernel: one thread per output element, any strides, fp32 accumulation. Slow (every
// operand element is re-read from L2 by every thread that needs it); kept as the simplest correct
// kernel to compare the others against (variant kNaive).
#pragma once

#include "matmul_common.cuh"

namespace aiter_lite {
namespace matmul_detail {

struct NaiveMatmulTraits {
  static constexpr int kThreads = 256;
};

// blockIdx.x * kThreads + threadIdx.x enumerates m * n outputs row by row (consecutive threads
// write consecutive columns); blockIdx.z is the batch entry.
template <typename T>
__global__ void __launch_bounds__(NaiveMatmulTraits::kThreads) matmul_naive_kernel(const GemmArgs<T> args) {
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * NaiveMatmulTraits::kThreads + threadIdx.x;
  if (idx >= static_cast<int64_t>(args.m) * args.n) return;
  const int64_t row = idx / args.n;
  const int64_t col = idx - row * args.n;
  {
    const int64_t z = blockIdx.z;  // the host launches batches above 65535 in slices
    const T* __restrict__ a_row = args.a + z * args.a_batch_stride + row * args.a_row_stride;
    const T* __restrict__ b_col = args.b + z * args.b_batch_stride + col * args.b_col_stride;
    float acc = 0.f;
    for (int32_t kk = 0; kk < args.k; ++kk)
      acc = fmaf(to_float(a_row[kk * args.a_col_stride]), to_float(b_col[kk * args.b_row_stride]), acc);
    if (args.epi_active) acc = apply_epilogue<T>(args.epi, acc, z, row, col);
    with_out_type(args.out, args.epi.out_fp32, [&](auto* out) {
      using O = std::remove_pointer_t<decltype(out)>;
      out[z * args.out_batch_stride + row * args.out_row_stride + col * args.out_col_stride] = from_float<O>(acc);
    });
  }
}

}  // namespace matmul_detail
}  // namespace aiter_lite
