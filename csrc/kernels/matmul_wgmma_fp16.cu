// Hopper (sm_90a) matmul kernels for fp16: every kWgmma16 config of the table, B N- or K-contiguous.
// The registry (jit_config.json) compiles this file for sm_90a only and then defines
// AITER_LITE_HAS_MATMUL_WGMMA_FP16 for the module, which lets matmul.cu call it; the kernel itself is
// in matmul_wgmma.cuh, the dispatch in matmul.cu (see matmul_launch.h).
#include "matmul_wgmma.cuh"

#if defined(AITER_LITE_CUDA)

namespace aiter_lite {
namespace matmul_detail {

template bool wgmma_cuda<half_t>(const MatmulParams&, int, bool, gpuStream_t, bool);

}  // namespace matmul_detail
}  // namespace aiter_lite

#endif  // AITER_LITE_CUDA
