// Tensor-core (mma.sync) matmul kernels for bf16: every kTensorCore16 config of the table, all four operand
// orientations. CUDA only (on HIP this file is empty and the dispatch never calls it). The dispatch is
// in matmul.cu; see matmul_launch.h for why the kernels are spread over several files.
#include "matmul_launch_impl.h"

#if defined(AITER_LITE_CUDA)

namespace aiter_lite {
namespace matmul_detail {

template void tc_cuda<bfloat16_t>(const MatmulParams&, int, bool, bool, gpuStream_t);

}  // namespace matmul_detail
}  // namespace aiter_lite

#endif  // AITER_LITE_CUDA
