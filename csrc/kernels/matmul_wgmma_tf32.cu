// Hopper (sm_90a) matmul kernels for fp32 inputs with TF32 allowed: every kWgmmaTf32 config of the
// table, B N- or K-contiguous. The registry (jit_config.json) compiles this file for sm_90a only and
// then defines AITER_LITE_HAS_MATMUL_WGMMA_TF32 for the module, which lets matmul.cu call it; the
// kernel itself is in matmul_wgmma_tf32.cuh, the dispatch in matmul.cu (see matmul_launch.h).
#include "matmul_wgmma_tf32.cuh"

#if defined(AITER_LITE_CUDA)

namespace aiter_lite {
namespace matmul_detail {

bool wgmma_tf32_cuda(const MatmulParams& p, int config, bool b_k_major, gpuStream_t stream, bool launch) {
  bool done = false;
  with_config<MatmulPath::kWgmmaTf32>(config, [&](auto index) {
    with_bool(b_k_major, [&](auto b_k) {
      done = wgmma_tf32_launch<WgmmaTf32Traits<decltype(index)::value, decltype(b_k)::value>>(p, stream, launch);
    });
  });
  return done;
}

}  // namespace matmul_detail
}  // namespace aiter_lite

#endif  // AITER_LITE_CUDA
