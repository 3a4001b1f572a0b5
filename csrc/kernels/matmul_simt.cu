// SIMT (FFMA) matmul kernels: all dtypes, every kSimt config of the table. The dispatch is in
// matmul.cu; see matmul_launch.h for why the kernels are spread over several files.
#include "matmul_launch_impl.h"

namespace aiter_lite {
namespace matmul_detail {

template void simt_cuda<float>(const MatmulParams&, int, gpuStream_t);
template void simt_cuda<half_t>(const MatmulParams&, int, gpuStream_t);
template void simt_cuda<bfloat16_t>(const MatmulParams&, int, gpuStream_t);

}  // namespace matmul_detail
}  // namespace aiter_lite
