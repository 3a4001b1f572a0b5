// Tensor-core (mma.sync) matmul kernels for tf32 (fp32 inputs with allow_tf32): the kTensorCoreTf32 configs of the table, all four
// operand orientations: the share of the shard being compiled (shard.h; jit_config.json). CUDA only
// (on HIP this file is empty and the dispatch never calls it). The dispatch is in matmul_launch.h
// (tc_cuda) and matmul.cu; see matmul_launch.h for why the kernels are spread over several files.
#include "matmul_launch_impl.h"

#if defined(AITER_LITE_CUDA)

namespace aiter_lite {
namespace matmul_detail {

static_assert(AITER_LITE_SHARDS == AITER_LITE_SHARDS_MATMUL_TC_TF32, "shards of this file: see shard.h");
template void tc_shard_cuda<float, AITER_LITE_SHARD, AITER_LITE_SHARDS>(
    const MatmulParams&, int, bool, bool, gpuStream_t);

}  // namespace matmul_detail
}  // namespace aiter_lite

#endif  // AITER_LITE_CUDA
