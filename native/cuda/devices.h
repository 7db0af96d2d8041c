// The CUDA devices kiln can run on, found without failing: a machine without a driver or device
// gets an empty list and the reason.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace kiln::cuda {

struct DeviceInfo {
  int index;
  std::string name;
  int major, minor;        // compute capability
  size_t totalMemory;      // bytes
  int multiProcessors;
  double memoryBandwidth;  // peak bytes per second from the memory clock and bus width; 0 if unknown
};

struct DeviceList {
  std::vector<DeviceInfo> devices;
  std::string reason;      // why `devices` is empty (or why some devices were left out)
};

DeviceList listDevices();

// The architectures the kernels were compiled for, e.g. "80;89;90".
const char* compiledArchitectures();

}  // namespace kiln::cuda
