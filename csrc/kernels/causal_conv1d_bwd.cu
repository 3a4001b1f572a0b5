// Placeholder until the CUDA backward lands (another branch owns the real file): it keeps the CUDA/HIP
// module linking. Every entry point reports that the GPU backward is not built yet.
#include <stdexcept>

#include "causal_conv1d_params.h"

namespace aiter_lite {

int64_t causal_conv1d_bwd_workspace_bytes(const CausalConv1dBwdParams& /*params*/) { return 0; }

void causal_conv1d_bwd(const CausalConv1dBwdParams& /*params*/, void* /*stream*/) {
  throw std::runtime_error("aiter_lite: causal_conv1d_bwd on the GPU: not built yet");
}

}  // namespace aiter_lite
