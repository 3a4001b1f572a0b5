// Test-only pybind11 shim for the CUDA backward of causal conv1d, built by bench/lab/conv_bwd/check.py
// while the real binding is written elsewhere: Python passes data pointers, sizes and strides (a
// dict of ints), this fills CausalConv1dBwdParams and calls the launcher. No torch headers.
#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>

#include "causal_conv1d_params.h"

namespace py = pybind11;
using aiter_lite::CausalConv1dBwdParams;
using aiter_lite::DType;

namespace {

int64_t get_int(const py::dict& d, const char* key) {
  if (!d.contains(key)) return 0;
  return d[key].cast<int64_t>();
}

template <typename P>
P get_ptr(const py::dict& d, const char* key) {
  return reinterpret_cast<P>(static_cast<uintptr_t>(get_int(d, key)));
}

CausalConv1dBwdParams make_params(const py::dict& d) {
  CausalConv1dBwdParams p{};
  p.x = get_ptr<const void*>(d, "x");
  p.weight = get_ptr<const void*>(d, "weight");
  p.bias = get_ptr<const void*>(d, "bias");
  p.dout = get_ptr<const void*>(d, "dout");
  p.initial_states = get_ptr<const void*>(d, "initial_states");
  p.seq_idx = get_ptr<const int32_t*>(d, "seq_idx");
  p.dfinal_states = get_ptr<const void*>(d, "dfinal_states");
  p.dx = get_ptr<void*>(d, "dx");
  p.dweight = get_ptr<float*>(d, "dweight");
  p.dbias = get_ptr<float*>(d, "dbias");
  p.dinitial_states = get_ptr<void*>(d, "dinitial_states");
  p.workspace = get_ptr<void*>(d, "workspace");
#define AL_INT(field) p.field = get_int(d, #field)
  AL_INT(batch); AL_INT(dim); AL_INT(seqlen); AL_INT(width);
  AL_INT(x_batch_stride); AL_INT(x_dim_stride); AL_INT(x_seq_stride);
  AL_INT(w_dim_stride); AL_INT(w_width_stride); AL_INT(bias_stride);
  AL_INT(dout_batch_stride); AL_INT(dout_dim_stride); AL_INT(dout_seq_stride);
  AL_INT(dx_batch_stride); AL_INT(dx_dim_stride); AL_INT(dx_seq_stride);
  AL_INT(init_batch_stride); AL_INT(init_dim_stride); AL_INT(init_seq_stride);
  AL_INT(dfinal_batch_stride); AL_INT(dfinal_dim_stride); AL_INT(dfinal_seq_stride);
  AL_INT(dinit_batch_stride); AL_INT(dinit_dim_stride); AL_INT(dinit_seq_stride);
  AL_INT(seq_idx_batch_stride); AL_INT(seq_idx_seq_stride);
#undef AL_INT
  p.x_dtype = static_cast<DType>(get_int(d, "x_dtype"));
  p.w_dtype = static_cast<DType>(get_int(d, "w_dtype"));
  p.silu = get_int(d, "silu") != 0;
  p.deterministic = get_int(d, "deterministic") != 0;
  return p;
}

}  // namespace

#ifndef SHIM_NAME
#define SHIM_NAME conv_bwd_shim
#endif
PYBIND11_MODULE(SHIM_NAME, m) {
  m.def("workspace_bytes", [](const py::dict& d) { return aiter_lite::causal_conv1d_bwd_workspace_bytes(make_params(d)); });
  m.def("bwd", [](const py::dict& d, int64_t stream) {
    aiter_lite::causal_conv1d_bwd(make_params(d), reinterpret_cast<void*>(static_cast<uintptr_t>(stream)));
  });
}
