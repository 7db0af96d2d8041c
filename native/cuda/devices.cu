// Device discovery. The static CUDA runtime loads the driver on its first call, here, so a machine
// without one learns it from cudaGetDeviceCount's error rather than a failed load of the addon. A
// device counts only if the kernels in this binary run on it (a probe kernel's attributes load).
#include "cuda-check.h"
#include "devices.h"

#ifndef KILN_CUDA_ARCHITECTURES
#define KILN_CUDA_ARCHITECTURES "unknown"
#endif

namespace kiln::cuda {

namespace {

__global__ void probeKernel(int* x) {
  if (x) *x = 0;
}

}  // namespace

const char* compiledArchitectures() { return KILN_CUDA_ARCHITECTURES; }

DeviceList listDevices() {
  DeviceList list;
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    int driver = 0, runtime = 0;
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    auto version = [](int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); };
    list.reason = std::string("no CUDA device is usable: ") + cudaGetErrorString(err) + " (driver: " +
                  (driver ? "CUDA " + version(driver) : std::string("none found")) + "; kiln's CUDA runtime: " + version(runtime) + ")";
    cudaGetLastError();
    return list;
  }
  if (count == 0) {
    list.reason = "no CUDA device is present";
    return list;
  }
  int previous = 0;
  cudaGetDevice(&previous);
  for (int i = 0; i < count; i++) {
    cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, i) != cudaSuccess) continue;
    const std::string label = std::string(p.name) + " (compute " + std::to_string(p.major) + "." + std::to_string(p.minor) + ")";
    cudaFuncAttributes attr;
    if (p.major < 8 || cudaSetDevice(i) != cudaSuccess || cudaFuncGetAttributes(&attr, probeKernel) != cudaSuccess) {
      cudaGetLastError();
      list.reason += (list.reason.empty() ? "" : "; ") + label + " is not supported: kiln's CUDA kernels are built for architectures " +
                     compiledArchitectures() + " and need compute capability 8.0 or newer";
      continue;
    }
    int clockKHz = 0;
    cudaDeviceGetAttribute(&clockKHz, cudaDevAttrMemoryClockRate, i);
    cudaGetLastError();
    list.devices.push_back(DeviceInfo{i, p.name, p.major, p.minor, p.totalGlobalMem, p.multiProcessorCount,
                                      2.0 * clockKHz * 1e3 * (p.memoryBusWidth / 8.0)});
  }
  cudaSetDevice(previous);
  return list;
}

}  // namespace kiln::cuda
