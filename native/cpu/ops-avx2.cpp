// AVX2 + FMA + F16C versions of the ops in ops.cpp, with the same contracts; chosen by
// opKernels() when the kernel level is 'best' and the CPU has all three. The scalar definitions
// in ops.cpp stay the reference they are tested against.
// This file is compiled with -mavx2 -mfma -mf16c: it must not call an inline function with external
// linkage from a shared header (fp16ToFloat and friends), see quants.h.
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "ops.h"
#include "simd-avx2.h"

namespace kiln {

using namespace simd;

namespace {

// expf for 8 floats, computed as glibc computes expf on CPUs with FMA (its __expf_fma variant,
// ARM's optimized-routines algorithm): k = round(x * 32/ln2), 2^(k/32) from a 32-entry table of
// doubles, a cubic in double for the rest, then one rounding to float. Same constants, same fused
// operations, so the results equal the scalar definitions' std::exp bit for bit on glibc, and
// greedy outputs do not move when the SIMD kernels replace the scalar ones.
constexpr uint64_t kExp2Table[32] = {  // bits of 2^(i/32) minus i << 47
    0x3ff0000000000000, 0x3fefd9b0d3158574, 0x3fefb5586cf9890f, 0x3fef9301d0125b51, 0x3fef72b83c7d517b,
    0x3fef54873168b9aa, 0x3fef387a6e756238, 0x3fef1e9df51fdee1, 0x3fef06fe0a31b715, 0x3feef1a7373aa9cb,
    0x3feedea64c123422, 0x3feece086061892d, 0x3feebfdad5362a27, 0x3feeb42b569d4f82, 0x3feeab07dd485429,
    0x3feea47eb03a5585, 0x3feea09e667f3bcd, 0x3fee9f75e8ec5f74, 0x3feea11473eb0187, 0x3feea589994cce13,
    0x3feeace5422aa0db, 0x3feeb737b0cdc5e5, 0x3feec49182a3f090, 0x3feed503b23e255d, 0x3feee89f995ad3ad,
    0x3feeff76f2fb5e47, 0x3fef199bdd85529c, 0x3fef3720dcef9069, 0x3fef5818dcfba487, 0x3fef7c97337b9b5f,
    0x3fefa4afa2a490da, 0x3fefd0765b6e4540,
};

__m128 expHalf(__m128 x) {
  const __m256d shift = _mm256_set1_pd(0x1.8p52);
  const __m256d z = _mm256_mul_pd(_mm256_set1_pd(0x1.71547652b82fep+0 * 32), _mm256_cvtps_pd(x));
  const __m256d kShifted = _mm256_add_pd(z, shift);
  const __m256i ki = _mm256_castpd_si256(kShifted);
  const __m256d r = _mm256_sub_pd(z, _mm256_sub_pd(kShifted, shift));
  const __m256i t = _mm256_add_epi64(
      _mm256_i64gather_epi64(reinterpret_cast<const long long*>(kExp2Table), _mm256_and_si256(ki, _mm256_set1_epi64x(31)), 8),
      _mm256_slli_epi64(ki, 47));
  const __m256d c0 = _mm256_set1_pd(0x1.c6af84b912394p-5 / (32.0 * 32.0 * 32.0));
  const __m256d c1 = _mm256_set1_pd(0x1.ebfce50fac4f3p-3 / (32.0 * 32.0));
  const __m256d c2 = _mm256_set1_pd(0x1.62e42ff0c52d6p-1 / 32.0);
  const __m256d zz = _mm256_fmadd_pd(c0, r, c1);
  __m256d y = _mm256_fmadd_pd(c2, r, _mm256_set1_pd(1.0));
  y = _mm256_fmadd_pd(zz, _mm256_mul_pd(r, r), y);
  return _mm256_cvtpd_ps(_mm256_mul_pd(y, _mm256_castsi256_pd(t)));
}

__m256 expExact(__m256 x) {
  // The table path is exact for x in [-103.97, 88.72]; beyond, expf gives 0 and inf; NaN stays.
  const __m256 lo = _mm256_set1_ps(-0x1.9fe368p6f), hi = _mm256_set1_ps(0x1.62e42ep6f);
  const __m256 clamped = _mm256_min_ps(_mm256_max_ps(x, lo), hi);
  __m256 y = _mm256_set_m128(expHalf(_mm256_extractf128_ps(clamped, 1)), expHalf(_mm256_castps256_ps128(clamped)));
  y = _mm256_blendv_ps(y, _mm256_setzero_ps(), _mm256_cmp_ps(x, lo, _CMP_LT_OQ));
  y = _mm256_blendv_ps(y, _mm256_set1_ps(INFINITY), _mm256_cmp_ps(x, hi, _CMP_GT_OQ));
  return _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

}  // namespace

void rmsNormRows_avx2(const float* x, const float* w, float* y, int64_t nGroups, int64_t width, float eps, int ith, int nth) {
  int64_t g0, g1;
  splitRange(nGroups, ith, nth, &g0, &g1);
  for (int64_t g = g0; g < g1; g++) {
    const float* xr = x + g * width;
    float* yr = y + g * width;
    // Float squares summed in double as the scalar definition (and ggml) does, but in eight lanes:
    // the order moves the double sum's last bits, which reach the float scale only rarely.
    __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
    int64_t i = 0;
    for (; i + 8 <= width; i += 8) {
      const __m256 v = _mm256_loadu_ps(xr + i);
      const __m256 sq = _mm256_mul_ps(v, v);
      s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm256_castps256_ps128(sq)));
      s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(_mm256_extractf128_ps(sq, 1)));
    }
    double sum = hsum(_mm256_add_pd(s0, s1));
    for (; i < width; i++) sum += (double)(xr[i] * xr[i]);
    const float scale = 1.0f / std::sqrt((float)(sum / (double)width) + eps);
    const __m256 vs = _mm256_set1_ps(scale);
    for (i = 0; i + 8 <= width; i += 8)
      _mm256_storeu_ps(yr + i, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(xr + i), vs), _mm256_loadu_ps(w + i)));
    for (; i < width; i++) yr[i] = xr[i] * scale * w[i];
  }
}

void ropeRows_avx2(float* x, int64_t nTokens, const int32_t* positions, const RopeParams& p, const float* freqFactors,
                   int ith, int nth) {
  const int64_t rows = nTokens * p.nHeads;
  int64_t r0, r1;
  splitRange(rows, ith, nth, &r0, &r1);
  const float thetaScale = std::pow(p.freqBase, -2.0f / (float)p.nRot);
  const int half = p.nRot / 2;
  // cos/sin of one token, computed exactly as the scalar definition does and shared by its heads.
  float cs[2 * 512];
  if (half > 512) {
    ropeRows(x, nTokens, positions, p, freqFactors, ith, nth);
    return;
  }
  int64_t cachedToken = -1;
  for (int64_t r = r0; r < r1; r++) {
    const int64_t t = r / p.nHeads;
    if (t != cachedToken) {
      float thetaBase = (float)positions[t];
      for (int i = 0; i < half; i++) {
        const float ff = freqFactors ? freqFactors[i] : 1.0f;
        const float theta = p.freqScale * (thetaBase / ff);
        cs[i] = std::cos(theta);
        cs[half + i] = std::sin(theta);
        thetaBase *= thetaScale;
      }
      cachedToken = t;
    }
    float* v = x + r * p.headDim;
    const float* c = cs;
    const float* s = cs + half;
    int i = 0;
    if (p.neox) {
      for (; i + 8 <= half; i += 8) {
        const __m256 x0 = _mm256_loadu_ps(v + i), x1 = _mm256_loadu_ps(v + half + i);
        const __m256 vc = _mm256_loadu_ps(c + i), vs = _mm256_loadu_ps(s + i);
        _mm256_storeu_ps(v + i, _mm256_fmsub_ps(x0, vc, _mm256_mul_ps(x1, vs)));
        _mm256_storeu_ps(v + half + i, _mm256_fmadd_ps(x0, vs, _mm256_mul_ps(x1, vc)));
      }
      for (; i < half; i++) {
        const float x0 = v[i], x1 = v[half + i];
        v[i] = fmaSingle(x0, c[i], -(x1 * s[i]));
        v[half + i] = fmaSingle(x0, s[i], x1 * c[i]);
      }
    } else {
      // Four adjacent pairs per vector: (x0, x1) -> (x0 c - x1 s, x0 s + x1 c) with x0's products
      // fused and x1's rounded first, as the scalar definition: fmaddsub of (x0, x0) * (c, s) and
      // (x1, x1) * (s, c).
      for (; i + 4 <= half; i += 4) {
        const __m256 xv = _mm256_loadu_ps(v + 2 * i);
        const __m128 c4 = _mm_loadu_ps(c + i), s4 = _mm_loadu_ps(s + i);
        const __m256 cs = _mm256_set_m128(_mm_unpackhi_ps(c4, s4), _mm_unpacklo_ps(c4, s4));
        const __m256 sc = _mm256_set_m128(_mm_unpackhi_ps(s4, c4), _mm_unpacklo_ps(s4, c4));
        const __m256 x1Products = _mm256_mul_ps(_mm256_movehdup_ps(xv), sc);
        _mm256_storeu_ps(v + 2 * i, _mm256_fmaddsub_ps(_mm256_moveldup_ps(xv), cs, x1Products));
      }
      for (; i < half; i++) {
        const float x0 = v[2 * i], x1 = v[2 * i + 1];
        v[2 * i] = fmaSingle(x0, c[i], -(x1 * s[i]));
        v[2 * i + 1] = fmaSingle(x0, s[i], x1 * c[i]);
      }
    }
  }
}

void kvStoreRows_avx2(const KvView& kv, const float* k, const float* v, int64_t nTokens, const int32_t* positions,
                      int64_t rowWidth, int ith, int nth) {
  if (kv.type != GgmlType::F16) {
    kvStoreRows(kv, k, v, nTokens, positions, rowWidth, ith, nth);
    return;
  }
  int64_t t0, t1;
  splitRange(nTokens, ith, nth, &t0, &t1);
  for (int64_t t = t0; t < t1; t++) {
    fp16_t* dk = static_cast<fp16_t*>(kv.k) + (int64_t)positions[t] * rowWidth;
    fp16_t* dv = static_cast<fp16_t*>(kv.v) + (int64_t)positions[t] * rowWidth;
    const float* sk = k + t * rowWidth;
    const float* sv = v + t * rowWidth;
    int64_t i = 0;
    for (; i + 8 <= rowWidth; i += 8) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dk + i), _mm256_cvtps_ph(_mm256_loadu_ps(sk + i), _MM_FROUND_TO_NEAREST_INT));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dv + i), _mm256_cvtps_ph(_mm256_loadu_ps(sv + i), _MM_FROUND_TO_NEAREST_INT));
    }
    for (; i < rowWidth; i++) {
      dk[i] = _cvtss_sh(sk[i], _MM_FROUND_TO_NEAREST_INT);
      dv[i] = _cvtss_sh(sv[i], _MM_FROUND_TO_NEAREST_INT);
    }
  }
}

void swigluRows_avx2(const float* gate, const float* up, float* y, int64_t n, int ith, int nth) {
  int64_t i0, i1;
  splitRange(n, ith, nth, &i0, &i1);
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 sign = _mm256_set1_ps(-0.0f);
  int64_t i = i0;
  for (; i + 8 <= i1; i += 8) {
    const __m256 g = _mm256_loadu_ps(gate + i);
    const __m256 silu = _mm256_div_ps(g, _mm256_add_ps(one, expExact(_mm256_xor_ps(g, sign))));
    _mm256_storeu_ps(y + i, _mm256_mul_ps(silu, _mm256_loadu_ps(up + i)));
  }
  for (; i < i1; i++) y[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

double softmaxExps_avx2(const float* x, float* out, int64_t n, double t, double* blocks) {
  const __m256 fmax = _mm256_set1_ps(FLT_MAX), fmin = _mm256_set1_ps(-FLT_MAX);
  const __m256d dmax = _mm256_set1_pd(FLT_MAX), dmin = _mm256_set1_pd(-FLT_MAX), vt = _mm256_set1_pd(t);
  __m256 vm = fmin;
  for (int64_t i = 0; i < n; i += 8) {
    const int64_t rest = n - i < 8 ? n - i : 8;
    alignas(32) float tail[8];
    const float* src = x + i;
    if (rest < 8) {
      for (int l = 0; l < 8; l++) tail[l] = l < rest ? x[i + l] : -FLT_MAX;
      src = tail;
    }
    // max(v, -MAX) takes -MAX for NaN (maxps yields its second operand), then min(., MAX).
    __m256 v = _mm256_min_ps(_mm256_max_ps(_mm256_loadu_ps(src), fmin), fmax);
    if (t != 1.0) {
      const __m256d lo = _mm256_div_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(v)), vt);
      const __m256d hi = _mm256_div_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)), vt);
      v = _mm256_set_m128(_mm256_cvtpd_ps(_mm256_min_pd(_mm256_max_pd(hi, dmin), dmax)),
                          _mm256_cvtpd_ps(_mm256_min_pd(_mm256_max_pd(lo, dmin), dmax)));
    }
    vm = _mm256_max_ps(v, vm);
    if (rest == 8) {
      _mm256_storeu_ps(out + i, v);
    } else {
      _mm256_store_ps(tail, v);
      for (int l = 0; l < rest; l++) out[i + l] = tail[l];
    }
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, vm);
  float m = lanes[0];
  for (float v : lanes) m = v > m ? v : m;
  const __m256 vmax = _mm256_set1_ps(m);
  double total = 0;
  for (int64_t i = 0, b = 0; i < n; i += 8, b++) {
    __m256 e;
    if (n - i >= 8) {
      e = expGgml(_mm256_sub_ps(_mm256_loadu_ps(out + i), vmax));
      _mm256_storeu_ps(out + i, e);
    } else {
      alignas(32) float tail[8] = {};
      for (int64_t l = 0; i + l < n; l++) tail[l] = out[i + l];
      e = expGgml(_mm256_sub_ps(_mm256_load_ps(tail), vmax));
      _mm256_store_ps(tail, e);
      for (int64_t l = 0; l < 8; l++) {
        if (i + l < n) out[i + l] = tail[l];
        else tail[l] = 0;
      }
      e = _mm256_load_ps(tail);
    }
    // [e0 + e4, e1 + e5, e2 + e6, e3 + e7] in double, then (a0 + a2) + (a1 + a3): blockSum's order.
    blocks[b] = hsum(_mm256_add_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(e)), _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1))));
    total += blocks[b];
  }
  return total;
}

void addRows_avx2(const float* a, const float* b, float* y, int64_t n, int ith, int nth) {
  int64_t i0, i1;
  splitRange(n, ith, nth, &i0, &i1);
  int64_t i = i0;
  for (; i + 8 <= i1; i += 8) _mm256_storeu_ps(y + i, _mm256_add_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
  for (; i < i1; i++) y[i] = a[i] + b[i];
}

}  // namespace kiln
