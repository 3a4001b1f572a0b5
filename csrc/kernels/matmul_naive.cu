// Naive matmul kernel (variant kNaive), all dtypes. The dispatch is in matmul.cu; see
// matmul_launch.h for why the kernels are spread over several files.
#include "matmul_launch_impl.h"

namespace aiter_lite {
namespace matmul_detail {

template void naive_launch<float>(const MatmulParams&, gpuStream_t);
template void naive_launch<half_t>(const MatmulParams&, gpuStream_t);
template void naive_launch<bfloat16_t>(const MatmulParams&, gpuStream_t);

}  // namespace matmul_detail
}  // namespace aiter_lite
