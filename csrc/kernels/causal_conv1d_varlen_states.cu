// States of packed sequences (CausalConv1dVarlenStatesParams in causal_conv1d_params.h), CUDA and HIP:
//   states[b, d, k] = x[cu_seqlens[b+1] - state_len + k, d] where that position is inside sequence b, else 0.
// A gather of batch * dim * state_len elements: one thread per element, channel fastest, so the reads of
// x stored [total, dim] (dim stride 1, the usual layout) are coalesced.
#include <algorithm>
#include <cstdint>
#include <stdexcept>

#include "causal_conv1d_common.cuh"
#include "causal_conv1d_params.h"
#include "dtype_traits.cuh"
#include "port.h"

namespace aiter_lite {
namespace conv1d {
namespace {

constexpr int kVarlenStatesThreads = 256;

template <typename T>
__global__ void __launch_bounds__(kVarlenStatesThreads)
    causal_conv1d_varlen_states_kernel(const CausalConv1dVarlenStatesParams p, const FastDivmod div_dim,
                                       const FastDivmod div_state_len) {
  const int64_t n = p.batch * p.dim * p.state_len;
  const T* __restrict__ x = static_cast<const T*>(p.x);
  T* __restrict__ states = static_cast<T*>(p.states);
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kVarlenStatesThreads + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * kVarlenStatesThreads) {
    int64_t d, k;
    const int64_t bk = div_dim.divmod(d, i);
    const int64_t b = div_state_len.divmod(k, bk);
    const int64_t pos = static_cast<int64_t>(p.cu_seqlens[b + 1]) - p.state_len + k;
    const T v = pos >= p.cu_seqlens[b] ? x[pos * p.x_seq_stride + d * p.x_dim_stride] : from_float<T>(0.f);
    states[b * p.states_batch_stride + d * p.states_dim_stride + k * p.states_seq_stride] = v;
  }
}

}  // namespace
}  // namespace conv1d

void causal_conv1d_varlen_states(const CausalConv1dVarlenStatesParams& p, void* stream_ptr) {
  using namespace conv1d;
  if (p.batch < 0 || p.dim < 0 || p.state_len < 0 || p.total < 0)
    throw std::invalid_argument("aiter_lite causal_conv1d_varlen_states: negative size");
  if (!is_valid_dtype(p.dtype)) throw std::invalid_argument("aiter_lite causal_conv1d_varlen_states: unsupported dtype");
  const int64_t n = p.batch * p.dim * p.state_len;
  if (n == 0) return;
  if (p.cu_seqlens == nullptr || p.states == nullptr || (p.total > 0 && p.x == nullptr))
    throw std::invalid_argument("aiter_lite causal_conv1d_varlen_states: null tensor pointer");
  const gpuStream_t stream = static_cast<gpuStream_t>(stream_ptr);
  const int64_t blocks = std::min((n + kVarlenStatesThreads - 1) / kVarlenStatesThreads, kMaxGridX);
  AITER_LITE_DISPATCH_DTYPE(p.dtype, [&] {
    causal_conv1d_varlen_states_kernel<scalar_t><<<static_cast<unsigned>(blocks), kVarlenStatesThreads, 0, stream>>>(
        p, FastDivmod(p.dim), FastDivmod(p.state_len));
    AITER_LITE_LAUNCH_CHECK();
  });
}

}  // namespace aiter_lite
