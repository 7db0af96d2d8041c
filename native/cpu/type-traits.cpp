// The traits table (one row per type kiln computes with) and the choice of kernels for this CPU.
#include "type-traits.h"

#include <mutex>

#include "cpu-features.h"
#include "quants.h"

namespace kiln {

namespace {

// Activations are converted with the reference quantizers, except for Q8_0, which rounds as
// llama.cpp's x86 activation quantizer does. Conversion is O(cols) per token against O(rows * cols)
// for the product, but in a decode step it runs on one thread while the others wait, so Q8_0 (the
// partner of Q8_0 and Q4_0 weights) and F16 have AVX2 versions with the same bits (Q8_0 was 4% of a
// Q4_0 decode).
// vecDot and fromFloat start as the generic definitions; initTypeTraits() swaps in the best.
TypeTraits table[] = {
    {GgmlType::F32, "f32", 1, sizeof(float), toFloatF32, fromFloatF32, fromFloatF32, vecDotF32_generic,
     vecDotF32_generic, GgmlType::F32, true},
    {GgmlType::F16, "f16", 1, sizeof(fp16_t), toFloatF16, fromFloatF16, fromFloatF16, vecDotF16_generic,
     vecDotF16_generic, GgmlType::F16, true},
    {GgmlType::BF16, "bf16", 1, sizeof(bf16_t), toFloatBF16, fromFloatBF16, fromFloatBF16, vecDotBF16_generic,
     vecDotBF16_generic, GgmlType::BF16, true},
    {GgmlType::Q8_0, "q8_0", QK8_0, sizeof(BlockQ8_0), toFloatQ8_0, fromFloatQ8_0, fromFloatActivationsQ8_0,
     vecDotQ8_0_generic, vecDotQ8_0_generic, GgmlType::Q8_0, true},
    {GgmlType::Q4_0, "q4_0", QK4_0, sizeof(BlockQ4_0), toFloatQ4_0, fromFloatQ4_0, fromFloatQ4_0,
     vecDotQ4_0_generic, vecDotQ4_0_generic, GgmlType::Q8_0, true},
    {GgmlType::Q4_K, "q4_K", QK_K, sizeof(BlockQ4_K), toFloatQ4_K, fromFloatQ4_K, fromFloatQ4_K,
     vecDotQ4_K_generic, vecDotQ4_K_generic, GgmlType::Q8_K, true},
    {GgmlType::Q5_K, "q5_K", QK_K, sizeof(BlockQ5_K), toFloatQ5_K, fromFloatQ5_K, fromFloatQ5_K,
     vecDotQ5_K_generic, vecDotQ5_K_generic, GgmlType::Q8_K, true},
    {GgmlType::Q6_K, "q6_K", QK_K, sizeof(BlockQ6_K), toFloatQ6_K, fromFloatQ6_K, fromFloatQ6_K,
     vecDotQ6_K_generic, vecDotQ6_K_generic, GgmlType::Q8_K, true},
    // Activations only: nothing is multiplied in Q8_K form, so it has no dot product of its own.
    {GgmlType::Q8_K, "q8_K", QK_K, sizeof(BlockQ8_K), toFloatQ8_K, fromFloatQ8_K, fromFloatQ8_K, nullptr,
     nullptr, GgmlType::Q8_K, false},
};

constexpr size_t kTypes = sizeof(table) / sizeof(table[0]);

VecDotFn bestVecDot[kTypes];
VecDotManyFn bestVecDotMany[kTypes], avx2VecDotMany[kTypes];
FromFloatFn genericFromFloat[kTypes], bestFromFloat[kTypes];
const TypeTraits* tablePointers[kTypes];
KernelLevel currentLevel = KernelLevel::Generic;

VecDotFn fastestFor(const TypeTraits& t) {
#if defined(__x86_64__) || defined(__i386__)
  const CpuFeatures& f = cpuFeatures();
  if (f.avx2 && f.fma && f.f16c) {
    switch (t.type) {
      case GgmlType::F32: return vecDotF32_avx2;
      case GgmlType::F16: return vecDotF16_avx2;
      case GgmlType::BF16: return vecDotBF16_avx2;
      case GgmlType::Q8_0: return vecDotQ8_0_avx2;
      case GgmlType::Q4_0: return vecDotQ4_0_avx2;
      case GgmlType::Q4_K: return vecDotQ4_K_avx2;
      case GgmlType::Q5_K: return vecDotQ5_K_avx2;
      case GgmlType::Q6_K: return vecDotQ6_K_avx2;
      default: break;
    }
  }
#endif
  return t.vecDotGeneric;
}

FromFloatFn fastestFromFloatFor(const TypeTraits& t) {
#if defined(__x86_64__) || defined(__i386__)
  const CpuFeatures& f = cpuFeatures();
  if (f.avx2 && f.fma && f.f16c && t.type == GgmlType::Q8_0) return fromFloatActivationsQ8_0_avx2;
  if (f.avx2 && f.fma && f.f16c && t.type == GgmlType::F16) return fromFloatF16_avx2;
  if (f.avx2 && f.fma && f.f16c && t.type == GgmlType::Q8_K) return fromFloatQ8_K_avx2;
#endif
  return t.fromFloat;
}

VecDotManyFn fastestManyFor(const TypeTraits& t, bool avx512) {
#if defined(__x86_64__) || defined(__i386__)
  const CpuFeatures& f = cpuFeatures();
  if (avx512 && f.avx512Vnni && f.avx2 && f.fma && f.f16c) {
    switch (t.type) {
      case GgmlType::F16: return vecDotManyF16_avx512;
      case GgmlType::Q8_0: return vecDotManyQ8_0_avx512;
      case GgmlType::Q4_K: return vecDotManyQ4_K_avx512;
      case GgmlType::Q5_K: return vecDotManyQ5_K_avx512;
      case GgmlType::Q6_K: return vecDotManyQ6_K_avx512;
      default: break;
    }
  }
  if (f.avx2 && f.fma && f.f16c) {
    switch (t.type) {
      case GgmlType::F32: return vecDotManyF32_avx2;
      case GgmlType::F16: return vecDotManyF16_avx2;
      case GgmlType::BF16: return vecDotManyBF16_avx2;
      case GgmlType::Q8_0: return vecDotManyQ8_0_avx2;
      case GgmlType::Q4_K: return vecDotManyQ4_K_avx2;
      case GgmlType::Q5_K: return vecDotManyQ5_K_avx2;
      case GgmlType::Q6_K: return vecDotManyQ6_K_avx2;
      default: break;
    }
  }
#endif
  return nullptr;
}

}  // namespace

const TypeTraits* typeTraits(GgmlType t) {
  for (const TypeTraits& row : table)
    if (row.type == t) return &row;
  return nullptr;
}

const TypeTraits* typeTraits(int32_t t) { return typeTraits(static_cast<GgmlType>(t)); }

size_t rowBytes(GgmlType t, int64_t n) {
  const TypeTraits* tr = typeTraits(t);
  return tr ? tr->typeSize * (size_t)(n / tr->blockSize) : 0;
}

void initTypeTraits() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (size_t i = 0; i < kTypes; i++) {
      bestVecDot[i] = fastestFor(table[i]);
      bestVecDotMany[i] = fastestManyFor(table[i], true);
      avx2VecDotMany[i] = fastestManyFor(table[i], false);
      genericFromFloat[i] = table[i].fromFloat;
      bestFromFloat[i] = fastestFromFloatFor(table[i]);
      tablePointers[i] = &table[i];
    }
    setKernelLevel(KernelLevel::Best);
  });
}

// Not synchronised with running products: tests switch levels between calls only.
void setKernelLevel(KernelLevel level) {
  currentLevel = level;
  const bool simd = level != KernelLevel::Generic;
  for (size_t i = 0; i < kTypes; i++) {
    table[i].vecDot = simd && bestVecDot[i] ? bestVecDot[i] : table[i].vecDotGeneric;
    table[i].vecDotMany = level == KernelLevel::Best ? bestVecDotMany[i] : simd ? avx2VecDotMany[i] : nullptr;
    table[i].fromFloat = simd ? bestFromFloat[i] : genericFromFloat[i];
  }
}

bool useAvx512() { return currentLevel == KernelLevel::Best && cpuFeatures().avx512Vnni; }

KernelLevel kernelLevel() { return currentLevel; }

const TypeTraits* const* allTypeTraits(size_t* count) {
  initTypeTraits();
  *count = kTypes;
  return tablePointers;
}

}  // namespace kiln
