// Python entry points of module_causal_conv1d. Torch-free on purpose: aiter_lite/ops checks
// every argument and passes data pointers, sizes and element strides as integers, so this file
// compiles in about a second and the module is independent of torch's C++ ABI.
#include <pybind11/pybind11.h>

#include <pybind11/stl.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "causal_conv1d_params.h"

namespace py = pybind11;
using aiter_lite::CausalConv1dBwdParams;
using aiter_lite::CausalConv1dFwdParams;
using aiter_lite::CausalConv1dUpdateParams;
using aiter_lite::ConvVariant;
using aiter_lite::DType;

namespace {

template <typename T> T* ptr(uintptr_t address) { return reinterpret_cast<T*>(address); }

// The plain forward's fields (every state/sequence feature off).
CausalConv1dFwdParams fwd_params(uintptr_t x, uintptr_t weight, uintptr_t bias, uintptr_t out,
                                 int64_t batch, int64_t dim, int64_t seqlen, int64_t width,
                                 int64_t x_batch_stride, int64_t x_dim_stride, int64_t x_seq_stride,
                                 int64_t w_dim_stride, int64_t w_width_stride, int64_t bias_stride,
                                 int64_t out_batch_stride, int64_t out_dim_stride, int64_t out_seq_stride,
                                 int32_t x_dtype, int32_t w_dtype, bool silu, int32_t variant) {
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
  p.pad_slot_id = -1;
  return p;
}

void fwd(uintptr_t x, uintptr_t weight, uintptr_t bias, uintptr_t out,
         int64_t batch, int64_t dim, int64_t seqlen, int64_t width,
         int64_t x_batch_stride, int64_t x_dim_stride, int64_t x_seq_stride,
         int64_t w_dim_stride, int64_t w_width_stride, int64_t bias_stride,
         int64_t out_batch_stride, int64_t out_dim_stride, int64_t out_seq_stride,
         int32_t x_dtype, int32_t w_dtype, bool silu, int32_t variant, uintptr_t stream) {
  const CausalConv1dFwdParams p = fwd_params(x, weight, bias, out, batch, dim, seqlen, width, x_batch_stride,
                                             x_dim_stride, x_seq_stride, w_dim_stride, w_width_stride, bias_stride,
                                             out_batch_stride, out_dim_stride, out_seq_stride, x_dtype, w_dtype, silu,
                                             variant);
  py::gil_scoped_release release;
  aiter_lite::causal_conv1d_fwd(p, ptr<void>(stream));
}

// The forward with states, packed sequences, varlen rows and a state pool: the plain arguments of fwd()
// followed by the feature fields (0 for an absent pointer), in causal_conv1d_params.h's order.
void fwd_states(uintptr_t x, uintptr_t weight, uintptr_t bias, uintptr_t out,
                int64_t batch, int64_t dim, int64_t seqlen, int64_t width,
                int64_t x_batch_stride, int64_t x_dim_stride, int64_t x_seq_stride,
                int64_t w_dim_stride, int64_t w_width_stride, int64_t bias_stride,
                int64_t out_batch_stride, int64_t out_dim_stride, int64_t out_seq_stride,
                int32_t x_dtype, int32_t w_dtype, bool silu, int32_t variant,
                uintptr_t initial_states, uintptr_t final_states, uintptr_t seq_idx, uintptr_t cu_seqlens,
                uintptr_t state_indices, uintptr_t has_initial_state, int32_t pad_slot_id,
                int64_t state_len, int64_t state_rows,
                int64_t init_batch_stride, int64_t init_dim_stride, int64_t init_seq_stride,
                int64_t final_batch_stride, int64_t final_dim_stride, int64_t final_seq_stride,
                int64_t seq_idx_batch_stride, int64_t seq_idx_seq_stride, uintptr_t workspace, uintptr_t stream) {
  CausalConv1dFwdParams p = fwd_params(x, weight, bias, out, batch, dim, seqlen, width, x_batch_stride,
                                       x_dim_stride, x_seq_stride, w_dim_stride, w_width_stride, bias_stride,
                                       out_batch_stride, out_dim_stride, out_seq_stride, x_dtype, w_dtype, silu,
                                       variant);
  p.initial_states = ptr<const void>(initial_states);
  p.final_states = ptr<void>(final_states);
  p.seq_idx = ptr<const int32_t>(seq_idx);
  p.cu_seqlens = ptr<const int32_t>(cu_seqlens);
  p.state_indices = ptr<const int32_t>(state_indices);
  p.has_initial_state = ptr<const bool>(has_initial_state);
  p.pad_slot_id = pad_slot_id;
  p.state_len = state_len; p.state_rows = state_rows;
  p.init_batch_stride = init_batch_stride; p.init_dim_stride = init_dim_stride; p.init_seq_stride = init_seq_stride;
  p.final_batch_stride = final_batch_stride; p.final_dim_stride = final_dim_stride;
  p.final_seq_stride = final_seq_stride;
  p.seq_idx_batch_stride = seq_idx_batch_stride; p.seq_idx_seq_stride = seq_idx_seq_stride;
  p.workspace = ptr<void>(workspace);
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

// The backward's params (CausalConv1dBwdParams, same field order); workspace may be 0 when
// bwd_workspace_bytes() returned 0.
CausalConv1dBwdParams bwd_params(uintptr_t x, uintptr_t weight, uintptr_t bias, uintptr_t dout,
                                 uintptr_t initial_states, uintptr_t seq_idx, uintptr_t dfinal_states,
                                 uintptr_t dx, uintptr_t dweight, uintptr_t dbias, uintptr_t dinitial_states,
                                 uintptr_t workspace, const std::vector<int64_t>& sizes_and_strides,
                                 int32_t x_dtype, int32_t w_dtype, bool silu, bool deterministic) {
  CausalConv1dBwdParams p{};
  p.x = ptr<const void>(x);
  p.weight = ptr<const void>(weight);
  p.bias = ptr<const void>(bias);
  p.dout = ptr<const void>(dout);
  p.initial_states = ptr<const void>(initial_states);
  p.seq_idx = ptr<const int32_t>(seq_idx);
  p.dfinal_states = ptr<const void>(dfinal_states);
  p.dx = ptr<void>(dx);
  p.dweight = ptr<float>(dweight);
  p.dbias = ptr<float>(dbias);
  p.dinitial_states = ptr<void>(dinitial_states);
  p.workspace = ptr<void>(workspace);
  int64_t* const fields[] = {
      &p.batch, &p.dim, &p.seqlen, &p.width,
      &p.x_batch_stride, &p.x_dim_stride, &p.x_seq_stride,
      &p.w_dim_stride, &p.w_width_stride, &p.bias_stride,
      &p.dout_batch_stride, &p.dout_dim_stride, &p.dout_seq_stride,
      &p.dx_batch_stride, &p.dx_dim_stride, &p.dx_seq_stride,
      &p.init_batch_stride, &p.init_dim_stride, &p.init_seq_stride,
      &p.dfinal_batch_stride, &p.dfinal_dim_stride, &p.dfinal_seq_stride,
      &p.dinit_batch_stride, &p.dinit_dim_stride, &p.dinit_seq_stride,
      &p.seq_idx_batch_stride, &p.seq_idx_seq_stride};
  constexpr size_t kFields = sizeof(fields) / sizeof(fields[0]);
  if (sizes_and_strides.size() != kFields)
    throw std::invalid_argument("aiter_lite: causal_conv1d_bwd: expected " + std::to_string(kFields) +
                                " sizes and strides, got " + std::to_string(sizes_and_strides.size()));
  for (size_t i = 0; i < kFields; ++i) *fields[i] = sizes_and_strides[i];
  p.x_dtype = static_cast<DType>(x_dtype);
  p.w_dtype = static_cast<DType>(w_dtype);
  p.silu = silu;
  p.deterministic = deterministic;
  return p;
}

// The plan (and so the workspace) depends on which pointers are set and on their alignment (the vector
// kernels need 16-byte aligned tensors), so the query takes the same pointers as the launch.
int64_t bwd_workspace_bytes(uintptr_t x, uintptr_t weight, uintptr_t bias, uintptr_t dout, uintptr_t initial_states,
                            uintptr_t seq_idx, uintptr_t dfinal_states, uintptr_t dx, uintptr_t dweight,
                            uintptr_t dbias, uintptr_t dinitial_states, const std::vector<int64_t>& sizes_and_strides,
                            int32_t x_dtype, int32_t w_dtype, bool silu, bool deterministic) {
  const CausalConv1dBwdParams p = bwd_params(x, weight, bias, dout, initial_states, seq_idx, dfinal_states, dx, dweight,
                                             dbias, dinitial_states, 0, sizes_and_strides, x_dtype, w_dtype, silu,
                                             deterministic);
  return aiter_lite::causal_conv1d_bwd_workspace_bytes(p);
}

void bwd(uintptr_t x, uintptr_t weight, uintptr_t bias, uintptr_t dout, uintptr_t initial_states, uintptr_t seq_idx,
         uintptr_t dfinal_states, uintptr_t dx, uintptr_t dweight, uintptr_t dbias, uintptr_t dinitial_states,
         uintptr_t workspace, const std::vector<int64_t>& sizes_and_strides, int32_t x_dtype, int32_t w_dtype,
         bool silu, bool deterministic, uintptr_t stream) {
  const CausalConv1dBwdParams p = bwd_params(x, weight, bias, dout, initial_states, seq_idx, dfinal_states, dx, dweight,
                                             dbias, dinitial_states, workspace, sizes_and_strides, x_dtype, w_dtype,
                                             silu, deterministic);
  py::gil_scoped_release release;
  aiter_lite::causal_conv1d_bwd(p, ptr<void>(stream));
}

void varlen_states(uintptr_t x, uintptr_t cu_seqlens, uintptr_t states, int64_t batch, int64_t dim, int64_t total,
                   int64_t state_len, int64_t x_seq_stride, int64_t x_dim_stride, int64_t states_batch_stride,
                   int64_t states_dim_stride, int64_t states_seq_stride, int32_t dtype, uintptr_t stream) {
  aiter_lite::CausalConv1dVarlenStatesParams p{};
  p.x = ptr<const void>(x);
  p.cu_seqlens = ptr<const int32_t>(cu_seqlens);
  p.states = ptr<void>(states);
  p.batch = batch; p.dim = dim; p.total = total; p.state_len = state_len;
  p.x_seq_stride = x_seq_stride; p.x_dim_stride = x_dim_stride;
  p.states_batch_stride = states_batch_stride; p.states_dim_stride = states_dim_stride;
  p.states_seq_stride = states_seq_stride;
  p.dtype = static_cast<DType>(dtype);
  py::gil_scoped_release release;
  aiter_lite::causal_conv1d_varlen_states(p, ptr<void>(stream));
}

}  // namespace

PYBIND11_MODULE(AITER_LITE_MODULE_NAME, m) {
  m.doc() = "aiter_lite causal depthwise conv1d (forward, backward, decode update, varlen states)";
  m.def("causal_conv1d_fwd", &fwd, "Forward; arguments as packed by aiter_lite.ops.causal_conv1d");
  m.def("causal_conv1d_fwd_contiguous", &fwd_contiguous,
        "Forward for contiguous x, out, weight and bias (strides implied by the sizes)");
  m.def("causal_conv1d_fwd_states", &fwd_states,
        "Forward with states, seq_idx, varlen rows and a state pool; arguments as packed by aiter_lite.ops");
  m.def("causal_conv1d_bwd_workspace_bytes", &bwd_workspace_bytes,
        "Device workspace the backward needs for these sizes and features");
  m.def("causal_conv1d_bwd", &bwd, "Backward; arguments as packed by aiter_lite.ops");
  m.def("causal_conv1d_varlen_states", &varlen_states, "States of packed sequences");
  m.def("causal_conv1d_update", &update, "Decode update; arguments as packed by aiter_lite.ops.causal_conv1d");
}
