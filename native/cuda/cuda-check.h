// Turning CUDA runtime errors into exceptions that name the call that failed. Host code only.
#pragma once
#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

namespace kiln::cuda {

class CudaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The device lacks the memory a plan needs.
class CudaOutOfMemoryError : public CudaError {
 public:
  using CudaError::CudaError;
};

inline void check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) throw CudaError(std::string(what) + ": " + cudaGetErrorString(err));
}

// After a kernel launch: a bad launch configuration shows up here, not at the next sync.
inline void checkLaunch(const char* kernel) { check(cudaGetLastError(), kernel); }

}  // namespace kiln::cuda
