// CHECK(call) for the standalone CUDA microbenchmarks in bench/: on an error, print it with the
// file and line and return 1 from the calling function (main or a function returning int).
#pragma once

#include <cstdio>

#include <cuda_runtime.h>

#define CHECK(x)                                                                          \
  do {                                                                                    \
    cudaError_t e = (x);                                                                  \
    if (e != cudaSuccess) {                                                               \
      std::printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); \
      return 1;                                                                           \
    }                                                                                     \
  } while (0)
