// One row per weight type: block geometry, (de)quantizers and the dot product with activations.
// The `Generic` functions define correct; SIMD variants are chosen at start-up from CPUID.
#pragma once
#include <cstddef>
#include <cstdint>

#include "../common/quant-blocks.h"

namespace kiln {

using ToFloatFn = void (*)(const void* src, float* dst, int64_t n);
using FromFloatFn = void (*)(const float* src, void* dst, int64_t n);
// s = dot(x[0..n), y[0..n)), x in the weight type, y in the traits' vecDotType.
using VecDotFn = void (*)(int64_t n, float* s, const void* x, const void* y);
// A tile of dot products: s[t * ldS + r] = dot(row r of x, row t of y) for r < nr, t < nt, rows of
// x xStride bytes apart and rows of y yStride bytes apart; each entry as the vecDot in use gives it.
using VecDotManyFn = void (*)(int64_t n, int64_t nr, int64_t nt, float* s, int64_t ldS, const void* x,
                              size_t xStride, const void* y, size_t yStride);

struct TypeTraits {
  GgmlType type;
  const char* name;
  int64_t blockSize;    // elements per block
  size_t typeSize;      // bytes per block
  ToFloatFn toFloat;    // dequantize n elements (n a multiple of blockSize)
  FromFloatFn fromFloatRef;  // scalar reference quantizer; writes the GGML block layout
  FromFloatFn fromFloat;     // quantizer used for activations (SIMD where it pays)
  VecDotFn vecDot;           // the kernel in use (generic or SIMD)
  VecDotFn vecDotGeneric;    // the scalar definition of correct
  GgmlType vecDotType;       // what activations are quantized to before vecDot
  bool isWeightType;         // accepted in model files
  // A SIMD kernel for many dots at once (matrix products), or null: mulMat then calls vecDot per
  // dot. Set with vecDot by the kernel level; never set at the generic level.
  VecDotManyFn vecDotMany = nullptr;
};

// Generic: the scalar definitions. Avx2: the best kernels without AVX-512 (so that tests on an
// AVX-512 machine exercise both tiers). Best: everything this CPU has.
enum class KernelLevel { Generic, Avx2, Best };

// Null for a type kiln does not know.
const TypeTraits* typeTraits(GgmlType t);
const TypeTraits* typeTraits(int32_t t);

// Bytes of a row of n elements; n must be a multiple of the block size.
size_t rowBytes(GgmlType t, int64_t n);

// Whether the AVX-512 kernels are in use (the level is Best and the CPU has them).
bool useAvx512();

// Picks the vecDot / fromFloat variants for this CPU. Idempotent; called at addon load.
void initTypeTraits();
// Tests switch between the generic definition and the best kernel for this CPU.
void setKernelLevel(KernelLevel level);
KernelLevel kernelLevel();

// Every type in the table, for the TS dtype table check.
const TypeTraits* const* allTypeTraits(size_t* count);

}  // namespace kiln
