// Python entry points of module_causal_conv1d. Torch-free on purpose: aiter_lite/ops checks
// every argument and passes data pointers, sizes and element strides as integers, so this file
// compiles in about a second and the module is independent of torch's C++ ABI.
#include <pybind11/pybind11.h>

#include <cstdint>

#include "causal_conv1d_params.h"

namespace py = pybind11;
using aiter_lite::CausalConv1dFwdParams;
using aiter_lite::CausalConv1dUpdateParams;
using aiter_lite::ConvVariant;
using aiter_lite::DType;

namespace {

template <typename T> T* ptr(uintptr_t address) { return reinterpret_cast<T*>(address); }

void fwd(uintptr_t x, uintptr_t weight, uintptr_t bias, uintptr_t out,
         int64_t batch, int64_t dim, int64_t seqlen, int64_t width,
         int64_t x_batch_stride, int64_t x_dim_stride, int64_t x_seq_stride,
         int64_t w_dim_stride, int64_t w_width_stride, int64_t bias_stride,
         int64_t out_batch_stride, int64_t out_dim_stride, int64_t out_seq_stride,
         int32_t x_dtype, int32_t w_dtype, bool silu, int32_t variant, uintptr_t stream) {
  CausalConv1dFwdParams p{};
  p.x = ptr<const void>(x);
  p.weight = ptr<const void>(weight);
  p.bias = ptr<const void>(bias);
  p.out = ptr<void>(out);
  p.batch = batch; p.dim = dim; p.seqlen = seqlen; p.width = width;
  p.x_batch_stride = x_batch_stride; p.x_dim_stride = x_dim_stride; p.x_seq_stride = x_seq_stride;
  p.w_dim_stride = w_dim_stride; p.w_width_stride = w_width_stride; p.bias_stride = bias_stride;
  p.out_batch_stride = out_batch_stride; p.out_dim_stride = out_dim_stride; p.out_seq_stride = out_seq_stride;
  p.x_dtype = static_cast<DType>(x_dtype);
  p.w_dtype = static_cast<DType>(w_dtype);
  p.silu = silu;
  p.variant = static_cast<ConvVariant>(variant);
  py::gil_scoped_release release;
  aiter_lite::causal_conv1d_fwd(p, ptr<void>(stream));
}

// fwd for contiguous x, out ([B, D, L]), weight ([D, W]) and bias: strides follow from the sizes.
// The common case passes 13 integers instead of 22 (host overhead per call matters for small shapes).
void fwd_contiguous(uintptr_t x, uintptr_t weight, uintptr_t bias, uintptr_t out, int64_t batch, int64_t dim,
                    int64_t seqlen, int64_t width, int32_t x_dtype, int32_t w_dtype, bool silu, int32_t variant,
                    uintptr_t stream) {
  fwd(x, weight, bias, out, batch, dim, seqlen, width, dim * seqlen, seqlen, 1, width, 1, 1, dim * seqlen, seqlen, 1,
      x_dtype, w_dtype, silu, variant, stream);
}

void update(uintptr_t x, uintptr_t conv_state, uintptr_t weight, uintptr_t bias,
            uintptr_t cache_seqlens, uintptr_t conv_state_indices, uintptr_t out,
            int64_t batch, int64_t dim, int64_t seqlen, int64_t width, int64_t state_len, int64_t state_batch,
            int64_t x_batch_stride, int64_t x_dim_stride, int64_t x_seq_stride,
            int64_t state_batch_stride, int64_t state_dim_stride, int64_t state_seq_stride,
            int64_t w_dim_stride, int64_t w_width_stride, int64_t bias_stride,
            int64_t out_batch_stride, int64_t out_dim_stride, int64_t out_seq_stride,
            int32_t x_dtype, int32_t w_dtype, bool silu, uintptr_t stream) {
  CausalConv1dUpdateParams p{};
  p.x = ptr<const void>(x);
  p.conv_state = ptr<void>(conv_state);
  p.weight = ptr<const void>(weight);
  p.bias = ptr<const void>(bias);
  p.cache_seqlens = ptr<const int32_t>(cache_seqlens);
  p.conv_state_indices = ptr<const int32_t>(conv_state_indices);
  p.out = ptr<void>(out);
  p.batch = batch; p.dim = dim; p.seqlen = seqlen; p.width = width; p.state_len = state_len;
  p.state_batch = state_batch;
  p.x_batch_stride = x_batch_stride; p.x_dim_stride = x_dim_stride; p.x_seq_stride = x_seq_stride;
  p.state_batch_stride = state_batch_stride; p.state_dim_stride = state_dim_stride;
  p.state_seq_stride = state_seq_stride;
  p.w_dim_stride = w_dim_stride; p.w_width_stride = w_width_stride; p.bias_stride = bias_stride;
  p.out_batch_stride = out_batch_stride; p.out_dim_stride = out_dim_stride; p.out_seq_stride = out_seq_stride;
  p.x_dtype = static_cast<DType>(x_dtype);
  p.w_dtype = static_cast<DType>(w_dtype);
  p.silu = silu;
  py::gil_scoped_release release;
  aiter_lite::causal_conv1d_update(p, ptr<void>(stream));
}

}  // namespace

PYBIND11_MODULE(AITER_LITE_MODULE_NAME, m) {
  m.doc() = "aiter_lite causal depthwise conv1d (forward and decode update)";
  m.def("causal_conv1d_fwd", &fwd, "Forward; arguments as packed by aiter_lite.ops.causal_conv1d");
  m.def("causal_conv1d_fwd_contiguous", &fwd_contiguous,
        "Forward for contiguous x, out, weight and bias (strides implied by the sizes)");
  m.def("causal_conv1d_update", &update, "Decode update; arguments as packed by aiter_lite.ops.causal_conv1d");
}
