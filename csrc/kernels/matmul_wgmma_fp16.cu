// Hopper (sm_90a) matmul kernels for fp16: the kWgmma16 configs of the table, B N- or K-contiguous; the
// shard being compiled (shard.h; jit_config.json) instantiates its share of them.
// The registry (jit_config.json) compiles this file for sm_90a only and then defines
// AITER_LITE_HAS_MATMUL_WGMMA_FP16 for the module, which lets matmul.cu call it; the kernel itself is
// in matmul_wgmma.cuh, the dispatch in matmul.cu (see matmul_launch.h).
#include "matmul_wgmma.cuh"

#if defined(AITER_LITE_CUDA)

namespace aiter_lite {
namespace matmul_detail {

static_assert(AITER_LITE_SHARDS == AITER_LITE_SHARDS_MATMUL_WGMMA_FP16, "shards of this file: see shard.h");
template bool wgmma_shard_cuda<half_t, AITER_LITE_SHARD, AITER_LITE_SHARDS>(
    const MatmulParams&, int, bool, bool, gpuStream_t, bool);

}  // namespace matmul_detail
}  // namespace aiter_lite

#endif  // AITER_LITE_CUDA
