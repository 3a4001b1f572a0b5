// Skinny matmul kernels (M <= 16, matmul_skinny.cuh) for fp32: every row bound and B layout. CUDA and
// HIP. The dispatch is in matmul.cu; see matmul_launch.h for why the kernels are spread over several files.
#include "matmul_skinny_tc.cuh"

namespace aiter_lite {
namespace matmul_detail {

template void skinny_cuda<float>(const MatmulParams&, gpuStream_t);

}  // namespace matmul_detail
}  // namespace aiter_lite
