// CPU states of packed sequences (see CausalConv1dVarlenStatesParams): row b holds the last state_len
// tokens of sequence b, zero-padded on the left where the sequence is shorter. Values are copied raw.
#include <cstdint>
#include <stdexcept>

#include "causal_conv1d_params.h"
#include "cpu_dtype.h"
#include "cpu_parallel.h"

namespace aiter_lite {

void causal_conv1d_varlen_states(const CausalConv1dVarlenStatesParams& p, void* /*stream: CPU*/) {
  if (p.batch <= 0 || p.dim <= 0 || p.state_len <= 0) return;
  dispatch_dtype(p.dtype, "causal_conv1d_varlen_states", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = static_cast<const T*>(p.x);
    T* states = static_cast<T*>(p.states);
    const T zero = from_float<T>(0.f);
#pragma omp parallel for schedule(static) if (worth_threads(p.batch * p.dim * p.state_len))
    for (int64_t item = 0; item < p.batch * p.state_len; ++item) {
      const int64_t b = item / p.state_len, k = item % p.state_len;
      const int64_t pos = int64_t(p.cu_seqlens[b + 1]) - p.state_len + k;
      const bool inside = pos >= p.cu_seqlens[b];
      T* dst = states + b * p.states_batch_stride + k * p.states_seq_stride;
      const T* src = inside ? x + pos * p.x_seq_stride : x;
      for (int64_t d = 0; d < p.dim; ++d) dst[d * p.states_dim_stride] = inside ? src[d * p.x_dim_stride] : zero;
    }
  });
}

}  // namespace aiter_lite
