// Interface between the matmul dispatch (matmul.cu) and the translation units that instantiate the
// kernels (matmul_naive.cu, matmul_simt.cu, matmul_tc_*.cu). The kernels are split over several
// files only so that a cold JIT build compiles them in parallel; one file held them all and took
// most of the module's build time.
//
// matmul.cu chooses the path, config and operand orientation, then calls the per-dtype launchers
// declared here. Their definitions (matmul_launch_impl.h) are explicitly instantiated, each in
// exactly one file (listed below): matmul.cu sees declarations only, so it compiles no kernel.
// invalid, path_name and current_device are defined in matmul.cu; the small layout helpers are
// inline here.
#pragma once

#include <cstdint>
#include <string>

#include "matmul_configs.h"
#include "matmul_params.h"
#include "port.h"

namespace aiter_lite {
namespace matmul_detail {

// Largest m, n, k and grid.x (2^31 - 1).
inline constexpr int64_t kMaxDim = 0x7fffffff;

// ---- host helpers, defined in matmul.cu ----------------------------------------------------------

// Throws std::invalid_argument("aiter_lite.matmul: " + what).
[[noreturn]] void invalid(const std::string& what);
const char* path_name(MatmulPath path);
int current_device();

// ---- operand layouts (used by both the dispatch and the launchers) ---------------------------------

inline bool aligned(const void* ptr, int64_t bytes) { return reinterpret_cast<uintptr_t>(ptr) % bytes == 0; }

// One operand seen as [mn, k]: A is (m, k), B is (n, k) with B's strides swapped.
struct OperandLayout {
  const void* ptr;
  int64_t mn_size, k_size;
  int64_t mn_stride, k_stride, batch_stride;
  int64_t elem_bytes;

  bool k_contiguous() const { return k_stride == 1 || k_size == 1; }
  bool mn_contiguous() const { return mn_stride == 1 || mn_size == 1; }
  // Vector access of `vec` elements along the contiguous dim: pointer and all other strides aligned.
  bool vec_ok(int64_t vec, int64_t other_stride) const {
    return aligned(ptr, vec * elem_bytes) && other_stride % vec == 0 && batch_stride % vec == 0;
  }
};

inline OperandLayout operand_a(const MatmulParams& p, int64_t eb) {
  return {p.a, p.m, p.k, p.a_row_stride, p.a_col_stride, p.a_batch_stride, eb};
}
inline OperandLayout operand_b(const MatmulParams& p, int64_t eb) {
  return {p.b, p.n, p.k, p.b_col_stride, p.b_row_stride, p.b_batch_stride, eb};
}

// ---- launchers (matmul_launch_impl.h) ------------------------------------------------------------
// p: one slice of at most 65535 batch entries, with normalized strides (see matmul.cu).

// Naive kernel, any layout.
template <typename T>
void naive_launch(const MatmulParams& p, gpuStream_t stream);
// SIMT kernel with the table's config `config` (a kSimt config), any layout.
template <typename T>
void simt_cuda(const MatmulParams& p, int config, gpuStream_t stream);

extern template void naive_launch<float>(const MatmulParams&, gpuStream_t);       // matmul_naive.cu
extern template void naive_launch<half_t>(const MatmulParams&, gpuStream_t);      // matmul_naive.cu
extern template void naive_launch<bfloat16_t>(const MatmulParams&, gpuStream_t);  // matmul_naive.cu
extern template void simt_cuda<float>(const MatmulParams&, int, gpuStream_t);       // matmul_simt.cu
extern template void simt_cuda<half_t>(const MatmulParams&, int, gpuStream_t);      // matmul_simt.cu
extern template void simt_cuda<bfloat16_t>(const MatmulParams&, int, gpuStream_t);  // matmul_simt.cu

#if defined(AITER_LITE_CUDA)
// Tensor-core kernel with the table's config `config` (T = float: tf32, a kTensorCoreTf32 config;
// fp16/bf16: a kTensorCore16 config). a_k_major / b_k_major: the operand orientations that
// tc_orientation (matmul.cu) found; the layout must be one the tensor-core kernel takes.
template <typename T>
void tc_cuda(const MatmulParams& p, int config, bool a_k_major, bool b_k_major, gpuStream_t stream);

extern template void tc_cuda<half_t>(const MatmulParams&, int, bool, bool, gpuStream_t);      // matmul_tc_fp16.cu
extern template void tc_cuda<bfloat16_t>(const MatmulParams&, int, bool, bool, gpuStream_t);  // matmul_tc_bf16.cu
extern template void tc_cuda<float>(const MatmulParams&, int, bool, bool, gpuStream_t);       // matmul_tc_tf32.cu
#endif

}  // namespace matmul_detail
}  // namespace aiter_lite
