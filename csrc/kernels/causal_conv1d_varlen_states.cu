// Placeholder until the CUDA varlen-states kernel lands (another branch owns the real file): it keeps
// the CUDA/HIP module linking and reports that the GPU kernel is not built yet.
#include <stdexcept>

#include "causal_conv1d_params.h"

namespace aiter_lite {

void causal_conv1d_varlen_states(const CausalConv1dVarlenStatesParams& /*params*/, void* /*stream*/) {
  throw std::runtime_error("aiter_lite: causal_conv1d_varlen_states on the GPU: not built yet");
}

}  // namespace aiter_lite
