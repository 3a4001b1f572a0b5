// Python entry point of module_matmul. Torch-free, like causal_conv1d_binding.cpp: aiter_lite/ops
// checks the arguments and passes pointers, sizes and element strides as integers.
#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>

#include "matmul_params.h"

namespace py = pybind11;
using aiter_lite::DType;
using aiter_lite::MatmulActivation;
using aiter_lite::MatmulParams;
using aiter_lite::MatmulVariant;

namespace {

MatmulParams make_params(uintptr_t a, uintptr_t b, uintptr_t out, int64_t batch, int64_t m, int64_t n, int64_t k,
                         int64_t a_batch_stride, int64_t a_row_stride, int64_t a_col_stride,
                         int64_t b_batch_stride, int64_t b_row_stride, int64_t b_col_stride,
                         int64_t out_batch_stride, int64_t out_row_stride, int64_t out_col_stride,
                         int32_t dtype, int32_t out_dtype, bool allow_tf32, int32_t variant, int32_t config) {
  MatmulParams p{};
  p.out_dtype = static_cast<DType>(out_dtype);
  p.epilogue.alpha = 1.0f;
  p.epilogue.beta = 1.0f;
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

void set_epilogue(MatmulParams& p, uintptr_t bias, int64_t bias_stride, int32_t bias_dtype, uintptr_t residual,
                  int64_t residual_batch_stride, int64_t residual_row_stride, int64_t residual_col_stride,
                  int32_t activation, double alpha, double beta) {
  p.epilogue.bias = reinterpret_cast<const void*>(bias);
  p.epilogue.bias_stride = bias_stride;
  p.epilogue.bias_dtype = static_cast<DType>(bias_dtype);
  p.epilogue.residual = reinterpret_cast<const void*>(residual);
  p.epilogue.residual_batch_stride = residual_batch_stride;
  p.epilogue.residual_row_stride = residual_row_stride;
  p.epilogue.residual_col_stride = residual_col_stride;
  p.epilogue.activation = static_cast<MatmulActivation>(activation);
  p.epilogue.alpha = static_cast<float>(alpha);
  p.epilogue.beta = static_cast<float>(beta);
}

void run_matmul(uintptr_t a, uintptr_t b, uintptr_t out, int64_t batch, int64_t m, int64_t n, int64_t k,
                int64_t a_batch_stride, int64_t a_row_stride, int64_t a_col_stride,
                int64_t b_batch_stride, int64_t b_row_stride, int64_t b_col_stride,
                int64_t out_batch_stride, int64_t out_row_stride, int64_t out_col_stride,
                int32_t dtype, int32_t out_dtype, bool allow_tf32, int32_t variant, int32_t config,
                uintptr_t bias, int64_t bias_stride, int32_t bias_dtype, uintptr_t residual,
                int64_t residual_batch_stride, int64_t residual_row_stride, int64_t residual_col_stride,
                int32_t activation, double alpha, double beta, uintptr_t stream) {
  MatmulParams p = make_params(a, b, out, batch, m, n, k, a_batch_stride, a_row_stride, a_col_stride,
                               b_batch_stride, b_row_stride, b_col_stride, out_batch_stride, out_row_stride,
                               out_col_stride, dtype, out_dtype, allow_tf32, variant, config);
  set_epilogue(p, bias, bias_stride, bias_dtype, residual, residual_batch_stride, residual_row_stride,
               residual_col_stride, activation, alpha, beta);
  py::gil_scoped_release release;
  aiter_lite::matmul(p, reinterpret_cast<void*>(stream));
}

// The common call in fewer arguments (host time): a [batch, m, k], b [batch, k, n] and out [batch, m, n]
// dense row-major (a batch stride of 0 broadcasts an operand), bias dense [n], residual dense like out,
// variant auto, config -1.
void run_matmul_dense(uintptr_t a, uintptr_t b, uintptr_t out, int64_t batch, int64_t m, int64_t n, int64_t k,
                      int64_t a_batch_stride, int64_t b_batch_stride, int32_t dtype, int32_t out_dtype,
                      int32_t bias_dtype, int32_t activation, bool allow_tf32, uintptr_t bias, uintptr_t residual,
                      double alpha, double beta, uintptr_t stream) {
  MatmulParams p = make_params(a, b, out, batch, m, n, k, a_batch_stride, k, 1, b_batch_stride, n, 1,
                               batch > 1 ? m * n : 0, n, 1, dtype, out_dtype, allow_tf32, 0, -1);
  set_epilogue(p, bias, 1, bias_dtype, residual, batch > 1 ? m * n : 0, n, 1, activation, alpha, beta);
  py::gil_scoped_release release;
  aiter_lite::matmul(p, reinterpret_cast<void*>(stream));
}

// Which kernel and config run_matmul would launch, "<kernel> <config>" (tests and benchmarks).
// epilogue: the call has a fused epilogue (every one plans alike, so a marker activation stands in).
std::string plan_matmul(uintptr_t a, uintptr_t b, uintptr_t out, int64_t batch, int64_t m, int64_t n, int64_t k,
                        int64_t a_batch_stride, int64_t a_row_stride, int64_t a_col_stride,
                        int64_t b_batch_stride, int64_t b_row_stride, int64_t b_col_stride,
                        int64_t out_batch_stride, int64_t out_row_stride, int64_t out_col_stride,
                        int32_t dtype, int32_t out_dtype, bool allow_tf32, int32_t variant, int32_t config,
                        bool epilogue) {
  MatmulParams p = make_params(a, b, out, batch, m, n, k, a_batch_stride, a_row_stride, a_col_stride, b_batch_stride,
                               b_row_stride, b_col_stride, out_batch_stride, out_row_stride, out_col_stride, dtype,
                               out_dtype, allow_tf32, variant, config);
  if (epilogue) p.epilogue.activation = aiter_lite::MatmulActivation::kRelu;
  return aiter_lite::matmul_plan(p);
}

}  // namespace

PYBIND11_MODULE(AITER_LITE_MODULE_NAME, m) {
  m.doc() = "aiter_lite matmul";
  m.def("matmul", &run_matmul, "out = epilogue(a @ b); arguments as packed by aiter_lite.ops.matmul");
  m.def("matmul_dense", &run_matmul_dense, "matmul for dense row-major tensors in fewer arguments (host time)");
  m.def("plan", &plan_matmul, "'<kernel> <config>' that matmul would run; the same arguments without the stream");
  m.def("cluster_slots", &aiter_lite::matmul_cluster_slots,
        "clusters of `size` CTAs with an SM's shared memory each that fit on the current GPU at once (0: none)");
}
