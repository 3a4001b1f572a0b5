// The matmul epilogue's activations on one fp32 value, for the CPU kernel and the GPU kernels alike
// (host and device): out = act(alpha * acc + bias) + beta * residual (MatmulEpilogue).
#pragma once

#include <cmath>

#include "matmul_params.h"

#if defined(__CUDACC__) || defined(__HIPCC__)
#define AITER_LITE_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define AITER_LITE_HOST_DEVICE inline
#endif

namespace aiter_lite {

// act(x) in fp32. gelu: the exact form x * Phi(x) (erf), as torch's F.gelu; gelu_tanh: its tanh
// approximation, as F.gelu(approximate="tanh"); silu: x * sigmoid(x).
AITER_LITE_HOST_DEVICE float matmul_activation(MatmulActivation act, float x) {
  switch (act) {
    case MatmulActivation::kRelu: return x > 0.f ? x : 0.f;
    case MatmulActivation::kGeluErf: return 0.5f * x * (1.f + erff(x * 0.70710678118654752f));
    case MatmulActivation::kGeluTanh: {
      const float inner = 0.79788456080286536f * (x + 0.044715f * x * x * x);  // sqrt(2/pi) (x + c x^3)
      return 0.5f * x * (1.f + tanhf(inner));
    }
    case MatmulActivation::kSilu: return x / (1.f + expf(-x));
    default: return x;
  }
}

}  // namespace aiter_lite
