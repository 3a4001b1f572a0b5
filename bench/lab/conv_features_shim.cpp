// A torch-free pybind11 shim over the causal conv1d forward's params structs, for the GPU probe
// bench/lab/probe_conv_features.py while the real binding is written elsewhere. Tensors come in as
// (data_ptr, strides) integers; the caller keeps them alive and checks shapes.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <vector>

#include "causal_conv1d_params.h"

namespace py = pybind11;
using aiter_lite::DType;

namespace {

const void* ptr(int64_t p) { return reinterpret_cast<const void*>(p); }
int64_t at(const std::vector<int64_t>& v, size_t i) { return v.size() > i ? v[i] : 0; }

// x/out/init/final strides are 3-vectors (batch, dim, seq); weight (dim, width); seq_idx (batch, seq).
void fwd(int64_t x, int64_t weight, int64_t bias, int64_t out, int64_t batch, int64_t dim, int64_t seqlen,
         int64_t width, std::vector<int64_t> xs, std::vector<int64_t> ws, int64_t bias_stride,
         std::vector<int64_t> os, int x_dtype, int w_dtype, bool silu, int variant, int64_t init, int64_t fin,
         int64_t seq_idx, int64_t cu_seqlens, int64_t state_indices, int64_t has_init, int pad_slot_id,
         int64_t state_len, int64_t state_rows, std::vector<int64_t> is, std::vector<int64_t> fs,
         std::vector<int64_t> ss, int64_t stream) {
  aiter_lite::CausalConv1dFwdParams p{};
  p.x = ptr(x);
  p.weight = ptr(weight);
  p.bias = ptr(bias);
  p.out = const_cast<void*>(ptr(out));
  p.batch = batch;
  p.dim = dim;
  p.seqlen = seqlen;
  p.width = width;
  p.x_batch_stride = at(xs, 0);
  p.x_dim_stride = at(xs, 1);
  p.x_seq_stride = at(xs, 2);
  p.w_dim_stride = at(ws, 0);
  p.w_width_stride = at(ws, 1);
  p.bias_stride = bias_stride;
  p.out_batch_stride = at(os, 0);
  p.out_dim_stride = at(os, 1);
  p.out_seq_stride = at(os, 2);
  p.x_dtype = static_cast<DType>(x_dtype);
  p.w_dtype = static_cast<DType>(w_dtype);
  p.silu = silu;
  p.variant = static_cast<aiter_lite::ConvVariant>(variant);
  p.initial_states = ptr(init);
  p.final_states = const_cast<void*>(ptr(fin));
  p.seq_idx = static_cast<const int32_t*>(ptr(seq_idx));
  p.cu_seqlens = static_cast<const int32_t*>(ptr(cu_seqlens));
  p.state_indices = static_cast<const int32_t*>(ptr(state_indices));
  p.has_initial_state = static_cast<const bool*>(ptr(has_init));
  p.pad_slot_id = pad_slot_id;
  p.state_len = state_len;
  p.state_rows = state_rows;
  p.init_batch_stride = at(is, 0);
  p.init_dim_stride = at(is, 1);
  p.init_seq_stride = at(is, 2);
  p.final_batch_stride = at(fs, 0);
  p.final_dim_stride = at(fs, 1);
  p.final_seq_stride = at(fs, 2);
  p.seq_idx_batch_stride = at(ss, 0);
  p.seq_idx_seq_stride = at(ss, 1);
  aiter_lite::causal_conv1d_fwd(p, reinterpret_cast<void*>(stream));
}

void varlen_states(int64_t x, int64_t cu_seqlens, int64_t states, int64_t batch, int64_t dim, int64_t total,
                   int64_t state_len, std::vector<int64_t> xs, std::vector<int64_t> ss, int dtype, int64_t stream) {
  aiter_lite::CausalConv1dVarlenStatesParams p{};
  p.x = ptr(x);
  p.cu_seqlens = static_cast<const int32_t*>(ptr(cu_seqlens));
  p.states = const_cast<void*>(ptr(states));
  p.batch = batch;
  p.dim = dim;
  p.total = total;
  p.state_len = state_len;
  p.x_seq_stride = at(xs, 0);
  p.x_dim_stride = at(xs, 1);
  p.states_batch_stride = at(ss, 0);
  p.states_dim_stride = at(ss, 1);
  p.states_seq_stride = at(ss, 2);
  p.dtype = static_cast<DType>(dtype);
  aiter_lite::causal_conv1d_varlen_states(p, reinterpret_cast<void*>(stream));
}

}  // namespace

PYBIND11_MODULE(conv_features_shim, m) {
  m.def("fwd", &fwd);
  m.def("varlen_states", &varlen_states);
}
