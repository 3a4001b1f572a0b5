// How many thread-block clusters of 1, 2 and 4 CTAs can be resident at once on this GPU when each
// CTA takes a whole SM's worth of shared memory (as every wgmma matmul config does). The persistent
// wgmma kernel launches that many clusters; on an H100 the GPCs' SM counts decide how many SMs a
// cluster size leaves idle.
//   nvcc -arch=sm_90a -o /tmp/cluster_occupancy bench/lab/cluster_occupancy.cu && /tmp/cluster_occupancy
#include <cstdio>
#include <cuda_runtime.h>

__global__ void probe_kernel(int* out) {
  extern __shared__ int smem[];
  if (out) out[0] = smem[0];
}

int main() {
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  const int smem = 210 * 1024, threads = 384;
  cudaFuncSetAttribute(probe_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  cudaFuncSetAttribute(probe_kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
  printf("SMs %d, %d KB shared memory per CTA, %d threads\n", sms, smem / 1024, threads);
  for (int size : {1, 2, 4, 8}) {
    cudaLaunchConfig_t cfg{};
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = size;
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    cfg.gridDim = dim3(sms / size * size, 1, 1);
    cfg.blockDim = dim3(threads, 1, 1);
    cfg.dynamicSmemBytes = smem;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    int clusters = -1;
    const cudaError_t err = cudaOccupancyMaxActiveClusters(&clusters, probe_kernel, &cfg);
    printf("cluster size %d: max active clusters %d (%d CTAs)%s%s\n", size, clusters, clusters * size,
           err == cudaSuccess ? "" : " error: ", err == cudaSuccess ? "" : cudaGetErrorString(err));
  }
  return 0;
}
