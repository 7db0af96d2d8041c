// The AVX2 inner loops of the machine probes (machine-probe.cpp): a streaming read and a chain of
// independent FMAs. Compiled with -mavx2 -mfma; called only when cpuFeatures() reports both.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

namespace kiln {

// Reads n bytes (a multiple of 128, 32-byte aligned) with 256-bit loads; the sum keeps the loads alive.
uint64_t readBytes_avx2(const uint8_t* p, size_t n) {
  __m256i acc[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256()};
  for (size_t i = 0; i < n; i += 128)
    for (int k = 0; k < 4; k++)
      acc[k] = _mm256_add_epi64(acc[k], _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 32 * k)));
  const __m256i s = _mm256_add_epi64(_mm256_add_epi64(acc[0], acc[1]), _mm256_add_epi64(acc[2], acc[3]));
  alignas(32) uint64_t lanes[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), s);
  return lanes[0] + lanes[1] + lanes[2] + lanes[3];
}

// 12 independent chains of 8-wide FMAs: more than latency (4 cycles) x ports (2) so both FMA units
// stay busy. Each iteration is 12 * 8 * 2 flops. The values converge to 1 and never go subnormal.
float fmaChains_avx2(int64_t iterations) {
  constexpr int kChains = 12;
  __m256 acc[kChains];
  for (int k = 0; k < kChains; k++) acc[k] = _mm256_set1_ps(1.0f + 0.01f * k);
  const __m256 m = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(0.000001f);
  for (int64_t i = 0; i < iterations; i++)
    for (int k = 0; k < kChains; k++) acc[k] = _mm256_fmadd_ps(acc[k], m, c);
  __m256 s = acc[0];
  for (int k = 1; k < kChains; k++) s = _mm256_add_ps(s, acc[k]);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, s);
  return lanes[0];
}

}  // namespace kiln
