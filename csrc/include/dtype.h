// Element types shared by Python, bindings and kernels. The integer values are part of the
// binding ABI: aiter_lite/ops/_dtypes.py maps torch dtypes onto them.
#pragma once
#include <cstdint>

namespace aiter_lite {

enum class DType : int32_t { kFloat32 = 0, kFloat16 = 1, kBFloat16 = 2 };

inline const char* dtype_name(DType t) {
  switch (t) {
    case DType::kFloat32: return "float32";
    case DType::kFloat16: return "float16";
    case DType::kBFloat16: return "bfloat16";
  }
  return "unknown";
}

}  // namespace aiter_lite
