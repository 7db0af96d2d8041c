// The tile walk shared by the SIMD matrix-product files (mat-mul-avx2.cpp, mat-mul-avx512.cpp).
// Everything is in an unnamed namespace on purpose: each file compiles its own copy with its own
// instruction set, and no copy built for AVX-512 can become the one an AVX2 file links to.
#pragma once
#include <cstddef>
#include <cstdint>

namespace kiln {
namespace {

// How far ahead a matrix-vector product asks for its weights: the streams of a few rows in flight
// hide part of the memory latency that the dot products alone leave exposed (measured +20% on one
// thread of a Sapphire Rapids VM; 1024 bytes is on the flat part of the curve).
constexpr int kPrefetchBytes = 1024;
// Packed Q4_0 is one stream per group of 8 rows; there a farther distance pays (9.4 -> 11.7 GB/s).
constexpr int kPackedPrefetchBytes = 4096;

struct TileArgs {
  int64_t n;
  float* s;
  int64_t ldS;
  const char* x;
  size_t xStride;
  const char* y;
  size_t yStride;
};

// Runs kernel<R, T> over full tiles and the smaller shapes over the edges.
template <template <int, int> class Kernel, int R, int T>
void tiles(const TileArgs& a, int64_t nr, int64_t nt) {
  auto at = [&](int64_t r, int64_t t) {
    return TileArgs{a.n, a.s + t * a.ldS + r, a.ldS, a.x + r * a.xStride, a.xStride, a.y + t * a.yStride, a.yStride};
  };
  int64_t r = 0;
  for (; r + R <= nr; r += R) {
    int64_t t = 0;
    for (; t + T <= nt; t += T) Kernel<R, T>::run(at(r, t));
    for (; t < nt; t++) Kernel<R, 1>::run(at(r, t));
  }
  for (; r < nr; r++) {
    int64_t t = 0;
    for (; t + T <= nt; t += T) Kernel<1, T>::run(at(r, t));
    for (; t < nt; t++) Kernel<1, 1>::run(at(r, t));
  }
}

}  // namespace
}  // namespace kiln
