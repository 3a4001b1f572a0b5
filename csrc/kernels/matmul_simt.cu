// SIMT (FFMA) matmul kernels: all dtypes, every kSimt config of the table. The dispatch is in
// matmul.cu; see matmul_launch.h for why the kernels are spread over several files. The registry
// may compile this file in shards (shard.h): dtype i goes to shard i % AITER_LITE_SHARDS.
#include "matmul_launch_impl.h"

namespace aiter_lite {
namespace matmul_detail {

#if 0 % AITER_LITE_SHARDS == AITER_LITE_SHARD
template void simt_cuda<float>(const MatmulParams&, int, gpuStream_t);
#endif
#if 1 % AITER_LITE_SHARDS == AITER_LITE_SHARD
template void simt_cuda<half_t>(const MatmulParams&, int, gpuStream_t);
#endif
#if 2 % AITER_LITE_SHARDS == AITER_LITE_SHARD
template void simt_cuda<bfloat16_t>(const MatmulParams&, int, gpuStream_t);
#endif

}  // namespace matmul_detail
}  // namespace aiter_lite
