// The AVX-512 FMA loop of the peak probe (machine-probe.cpp): where the CPU has 512-bit vectors the
// matrix kernels use them, so "of limit" columns need the 512-bit peak, twice the AVX2 one on a
// core with two full-width FMA units. Compiled with the *-avx512.cpp flags; called only where
// cpuFeatures() reports avx512Vnni (F/BW/VL/VNNI together).
#include <immintrin.h>

#include <cstdint>

namespace kiln {

// 12 independent chains of 16-wide FMAs, as fmaChains_avx2 with twice the lanes: each iteration is
// 12 * 16 * 2 flops. The values converge to 1 and never go subnormal.
float fmaChains_avx512(int64_t iterations) {
  constexpr int kChains = 12;
  __m512 acc[kChains];
  for (int k = 0; k < kChains; k++) acc[k] = _mm512_set1_ps(1.0f + 0.01f * k);
  const __m512 m = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(0.000001f);
  for (int64_t i = 0; i < iterations; i++)
    for (int k = 0; k < kChains; k++) acc[k] = _mm512_fmadd_ps(acc[k], m, c);
  __m512 s = acc[0];
  for (int k = 1; k < kChains; k++) s = _mm512_add_ps(s, acc[k]);
  return _mm512_reduce_add_ps(s);
}

}  // namespace kiln
