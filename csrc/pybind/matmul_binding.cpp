// Python entry point of module_matmul. Torch-free, like causal_conv1d_binding.cpp: aiter_lite/ops
// checks the arguments and passes pointers, sizes and element strides as integers.
#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>

#include "matmul_params.h"

namespace py = pybind11;
using aiter_lite::DType;
using aiter_lite::MatmulParams;
using aiter_lite::MatmulVariant;

namespace {

MatmulParams make_params(uintptr_t a, uintptr_t b, uintptr_t out, int64_t batch, int64_t m, int64_t n, int64_t k,
                         int64_t a_batch_stride, int64_t a_row_stride, int64_t a_col_stride,
                         int64_t b_batch_stride, int64_t b_row_stride, int64_t b_col_stride,
                         int64_t out_batch_stride, int64_t out_row_stride, int64_t out_col_stride,
                         int32_t dtype, bool allow_tf32, int32_t variant, int32_t config) {
  MatmulParams p{};
  p.a = reinterpret_cast<const void*>(a);
  p.b = reinterpret_cast<const void*>(b);
  p.out = reinterpret_cast<void*>(out);
  p.batch = batch; p.m = m; p.n = n; p.k = k;
  p.a_batch_stride = a_batch_stride; p.a_row_stride = a_row_stride; p.a_col_stride = a_col_stride;
  p.b_batch_stride = b_batch_stride; p.b_row_stride = b_row_stride; p.b_col_stride = b_col_stride;
  p.out_batch_stride = out_batch_stride; p.out_row_stride = out_row_stride; p.out_col_stride = out_col_stride;
  p.dtype = static_cast<DType>(dtype);
  p.allow_tf32 = allow_tf32;
  p.variant = static_cast<MatmulVariant>(variant);
  p.config = config;
  return p;
}

void run_matmul(uintptr_t a, uintptr_t b, uintptr_t out, int64_t batch, int64_t m, int64_t n, int64_t k,
                int64_t a_batch_stride, int64_t a_row_stride, int64_t a_col_stride,
                int64_t b_batch_stride, int64_t b_row_stride, int64_t b_col_stride,
                int64_t out_batch_stride, int64_t out_row_stride, int64_t out_col_stride,
                int32_t dtype, bool allow_tf32, int32_t variant, int32_t config, uintptr_t stream) {
  const MatmulParams p = make_params(a, b, out, batch, m, n, k, a_batch_stride, a_row_stride, a_col_stride,
                                     b_batch_stride, b_row_stride, b_col_stride, out_batch_stride, out_row_stride,
                                     out_col_stride, dtype, allow_tf32, variant, config);
  py::gil_scoped_release release;
  aiter_lite::matmul(p, reinterpret_cast<void*>(stream));
}

// Which kernel and config run_matmul would launch, "<kernel> <config>" (tests and benchmarks).
std::string plan_matmul(uintptr_t a, uintptr_t b, uintptr_t out, int64_t batch, int64_t m, int64_t n, int64_t k,
                        int64_t a_batch_stride, int64_t a_row_stride, int64_t a_col_stride,
                        int64_t b_batch_stride, int64_t b_row_stride, int64_t b_col_stride,
                        int64_t out_batch_stride, int64_t out_row_stride, int64_t out_col_stride,
                        int32_t dtype, bool allow_tf32, int32_t variant, int32_t config) {
  return aiter_lite::matmul_plan(make_params(a, b, out, batch, m, n, k, a_batch_stride, a_row_stride, a_col_stride,
                                             b_batch_stride, b_row_stride, b_col_stride, out_batch_stride,
                                             out_row_stride, out_col_stride, dtype, allow_tf32, variant, config));
}

}  // namespace

PYBIND11_MODULE(AITER_LITE_MODULE_NAME, m) {
  m.doc() = "aiter_lite matmul";
  m.def("matmul", &run_matmul, "out = a @ b; arguments as packed by aiter_lite.ops.matmul");
  m.def("plan", &plan_matmul, "'<kernel> <config>' that matmul would run; the same arguments without the stream");
  m.def("cluster_slots", &aiter_lite::matmul_cluster_slots,
        "clusters of `size` CTAs with an SM's shared memory each that fit on the current GPU at once (0: none)");
}
