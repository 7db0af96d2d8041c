// The tests' emulated AVX-512 (CMakeLists.txt, KILN_EMULATE_AVX512; npm run
// build:emulated-avx512): force-included before each *-avx512.cpp file, which is then compiled for
// AVX2 only. SIMDe's AVX-512 (Debian's libsimde-dev) stands in for the intrinsics, so the AVX-512
// tier's code runs, and the tests check its bits against the AVX2 tier's, on machines without
// AVX-512. Exact where the tests need it: integer operations are exact whatever carries them out,
// SIMDe's 512-bit FMA is two 256-bit FMAs (one rounding, as the instruction), and the few intrinsics
// SIMDe 0.7.4 lacks are written below from 256-bit halves, element by element as the instructions
// define them. Never part of the addon users build; speed under emulation means nothing.
#pragma once
#include <immintrin.h>

#include <cstdint>
#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx512.h>
#include <simde/x86/f16c.h>

// SIMDe 0.7.4 aliases the masked form's four arguments under the plain name.
#undef _mm512_madd_epi16
#define _mm512_madd_epi16(a, b) simde_mm512_madd_epi16(a, b)

static inline simde__m512 kilnEmuJoin(simde__m256 lo, simde__m256 hi) {
  return simde_mm512_castpd_ps(simde_mm512_insertf64x4(simde_mm512_castpd256_pd512(simde_mm256_castps_pd(lo)), simde_mm256_castps_pd(hi), 1));
}
static inline simde__m512i kilnEmuJoin(simde__m256i lo, simde__m256i hi) {
  return simde_mm512_inserti64x4(simde_mm512_castsi256_si512(lo), hi, 1);
}

static inline simde__m256 kilnEmuExtractf32x8(simde__m512 a, int i) {
  const simde__m512d d = simde_mm512_castps_pd(a);
  return simde_mm256_castpd_ps(i ? simde_mm512_extractf64x4_pd(d, 1) : simde_mm512_extractf64x4_pd(d, 0));
}
#define _mm512_extractf32x8_ps(a, i) kilnEmuExtractf32x8(a, i)

static inline simde__m512 kilnEmuCvtphPs(simde__m256i a) {
  return kilnEmuJoin(simde_mm256_cvtph_ps(simde_mm256_castsi256_si128(a)), simde_mm256_cvtph_ps(simde_mm256_extracti128_si256(a, 1)));
}
#define _mm512_cvtph_ps(a) kilnEmuCvtphPs(a)

static inline simde__m512 kilnEmuCvtepi32Ps(simde__m512i a) {
  return kilnEmuJoin(simde_mm256_cvtepi32_ps(simde_mm512_castsi512_si256(a)), simde_mm256_cvtepi32_ps(simde_mm512_extracti64x4_epi64(a, 1)));
}
#define _mm512_cvtepi32_ps(a) kilnEmuCvtepi32Ps(a)

static inline simde__m512i kilnEmuCvtepu16Epi32(simde__m256i a) {
  return kilnEmuJoin(simde_mm256_cvtepu16_epi32(simde_mm256_castsi256_si128(a)), simde_mm256_cvtepu16_epi32(simde_mm256_extracti128_si256(a, 1)));
}
#define _mm512_cvtepu16_epi32(a) kilnEmuCvtepu16Epi32(a)

// vpmovdw: each 32-bit lane truncated to its low 16 bits.
static inline simde__m256i kilnEmuCvtepi32Epi16(simde__m512i a) {
  int32_t in[16];
  int16_t out[16];
  simde_mm512_storeu_si512(in, a);
  for (int i = 0; i < 16; i++) out[i] = (int16_t)in[i];
  return simde_mm256_loadu_si256(out);
}
#define _mm512_cvtepi32_epi16(a) kilnEmuCvtepi32Epi16(a)

// Within each 128-bit lane, as vpshufd.
#define _mm512_shuffle_epi32(a, imm)                                                   \
  kilnEmuJoin(simde_mm256_shuffle_epi32(simde_mm512_castsi512_si256(a), (int)(imm)), \
              simde_mm256_shuffle_epi32(simde_mm512_extracti64x4_epi64(a, 1), (int)(imm)))

#define _mm512_zextsi128_si512(a) simde_mm512_inserti32x4(simde_mm512_setzero_si512(), (a), 0)

// The machine probe's sum (its order is GCC's: halves, then quarters, then pairs).
static inline float kilnEmuReduceAddPs(simde__m512 a) {
  const simde__m256 s8 = simde_mm256_add_ps(simde_mm512_castps512_ps256(a), kilnEmuExtractf32x8(a, 1));
  simde__m128 s4 = simde_mm_add_ps(simde_mm256_castps256_ps128(s8), simde_mm256_extractf128_ps(s8, 1));
  s4 = simde_mm_add_ps(s4, simde_mm_movehl_ps(s4, s4));
  s4 = simde_mm_add_ss(s4, simde_mm_shuffle_ps(s4, s4, 1));
  return simde_mm_cvtss_f32(s4);
}
#define _mm512_reduce_add_ps(a) kilnEmuReduceAddPs(a)
