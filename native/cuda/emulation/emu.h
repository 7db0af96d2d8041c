// The device side of CUDA for the CPU emulation of kiln's kernels (build.sh): the intrinsics the
// kernels use, thread and block indices, and WMMA. A kernel's blocks run one after another; the
// threads of a block run as fibers on one OS thread, switching at __syncthreads and warp shuffles.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <type_traits>

#define __launch_bounds__(...)

namespace emu {

extern uint3 threadIndex, blockIndex;
extern dim3 blockSize, gridSize;

void syncThreads();
float shuffle(float v, int lane, bool xorLanes);
int shuffle(int v, int lane, bool xorLanes);
double shuffle(double v, int lane, bool xorLanes);
void* dynamicShared();

// Checks the launch configuration as the GPU would (a bad one becomes cudaGetLastError's error),
// then runs the kernel, or records it while the stream is being captured.
void launch(dim3 grid, dim3 block, size_t shared, cudaStream_t stream, const void* kernel, std::function<void()> body);

}  // namespace emu

#define threadIdx (emu::threadIndex)
#define blockIdx (emu::blockIndex)
#define blockDim (emu::blockSize)
#define gridDim (emu::gridSize)

inline void __syncthreads() { emu::syncThreads(); }
inline float __shfl_xor_sync(unsigned, float v, int mask) { return emu::shuffle(v, mask, true); }
inline int __shfl_xor_sync(unsigned, int v, int mask) { return emu::shuffle(v, mask, true); }
inline double __shfl_xor_sync(unsigned, double v, int mask) { return emu::shuffle(v, mask, true); }
inline float __shfl_sync(unsigned, float v, int lane) { return emu::shuffle(v, lane, false); }

inline int __dp4a(int a, int b, int c) {
  for (int i = 0; i < 4; i++) c += (int8_t)(a >> (8 * i)) * (int8_t)(b >> (8 * i));
  return c;
}
inline int __vsubss4(int a, int b) {
  uint32_t r = 0;
  for (int i = 0; i < 4; i++) {
    int v = (int8_t)(a >> (8 * i)) - (int8_t)(b >> (8 * i));
    v = v < -128 ? -128 : v > 127 ? 127 : v;
    r |= (uint32_t)(uint8_t)v << (8 * i);
  }
  return (int)r;
}
// volatile: the host compiler may not fuse these into a multiply-add either.
inline float __fmul_rn(float a, float b) { volatile float r = a * b; return r; }
inline float __fsub_rn(float a, float b) { volatile float r = a - b; return r; }
inline float __fadd_rn(float a, float b) { volatile float r = a + b; return r; }
inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
inline int __float2int_rn(float x) { return (int)std::nearbyint(x); }
inline float __uint_as_float(unsigned u) { float f; std::memcpy(&f, &u, 4); return f; }

template <class T> inline T min(T a, T b) { return a < b ? a : b; }
template <class T> inline T max(T a, T b) { return a < b ? b : a; }
// The runtime's C++ overloads, which cuda_runtime.h declares only for nvcc.
template <class T> inline cudaError_t cudaFuncSetAttribute(T* f, cudaFuncAttribute a, int v) {
  return ::cudaFuncSetAttribute(reinterpret_cast<const void*>(f), a, v);
}
template <class T> inline cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* attr, T* f) {
  return ::cudaFuncGetAttributes(attr, reinterpret_cast<const void*>(f));
}

// WMMA by its documented semantics: every lane holds whole 16 x 16 matrices (the GPU spreads them
// over the warp in an unspecified way, which kernels cannot depend on), and pointers must be
// 32-byte aligned, as on the GPU.
namespace nvcuda::wmma {
struct row_major {};
struct col_major {};
struct matrix_a {};
struct matrix_b {};
struct accumulator {};
enum layout_t { mem_row_major, mem_col_major };

template <typename Use, int M, int N, int K, typename T, typename Layout = void>
struct fragment {
  double x[16 * 16];  // exact for the int accumulators too
};

inline void requireAligned(const void* p) {
  if ((uintptr_t)p % 32) __builtin_trap();
}
template <typename T> inline double value(T v) { return (double)(float)v; }
inline double value(signed char v) { return v; }

template <typename Use, int M, int N, int K, typename T, typename L>
inline void fill_fragment(fragment<Use, M, N, K, T, L>& f, double v) {
  for (double& e : f.x) e = v;
}
template <int M, int N, int K, typename T>
inline void load_matrix_sync(fragment<matrix_a, M, N, K, T, row_major>& f, const T* p, unsigned ldm) {
  requireAligned(p);
  for (int m = 0; m < 16; m++)
    for (int k = 0; k < 16; k++) f.x[m * 16 + k] = value(p[m * ldm + k]);
}
template <int M, int N, int K, typename T>
inline void load_matrix_sync(fragment<matrix_b, M, N, K, T, col_major>& f, const T* p, unsigned ldm) {
  requireAligned(p);
  for (int k = 0; k < 16; k++)
    for (int n = 0; n < 16; n++) f.x[k * 16 + n] = value(p[n * ldm + k]);
}
template <int M, int N, int K, typename T, typename C, typename LA, typename LB>
inline void mma_sync(fragment<accumulator, M, N, K, C, void>& d, const fragment<matrix_a, M, N, K, T, LA>& a,
                     const fragment<matrix_b, M, N, K, T, LB>& b, const fragment<accumulator, M, N, K, C, void>& c) {
  double r[256];
  for (int m = 0; m < 16; m++) {
    for (int n = 0; n < 16; n++) {
      if constexpr (std::is_same_v<C, int>) {
        int64_t s = (int64_t)c.x[m * 16 + n];
        for (int k = 0; k < 16; k++) s += (int64_t)a.x[m * 16 + k] * (int64_t)b.x[k * 16 + n];
        r[m * 16 + n] = (double)(int32_t)s;
      } else {
        float s = (float)c.x[m * 16 + n];
        for (int k = 0; k < 16; k++) s += (float)a.x[m * 16 + k] * (float)b.x[k * 16 + n];
        r[m * 16 + n] = s;
      }
    }
  }
  std::memcpy(d.x, r, sizeof r);
}
template <int M, int N, int K, typename C>
inline void store_matrix_sync(C* p, const fragment<accumulator, M, N, K, C, void>& f, unsigned ldm, layout_t layout) {
  requireAligned(p);
  for (int m = 0; m < 16; m++)
    for (int n = 0; n < 16; n++) (layout == mem_col_major ? p[n * ldm + m] : p[m * ldm + n]) = (C)f.x[m * 16 + n];
}
}  // namespace nvcuda::wmma
