// The tile walk and the float tiles shared by the SIMD matrix-product files (mat-mul-avx2.cpp, mat-mul-avx512.cpp).
// Everything is in an unnamed namespace on purpose: each file compiles its own copy with its own
// instruction set, and no copy built for AVX-512 can become the one an AVX2 file links to.
#pragma once
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <vector>

// First: its `fp-contract=off` pragma must cover the float tiles below (their sums are not fused).
#include "quants.h"

namespace kiln {
namespace {

// How far ahead a float tile of rows side by side asks for its weights (F16 decode now reads a few
// long streams a thread instead, FloatTile::streams; what follows is how this was set when it read
// 8 rows side by side). The streams of a few rows in flight
// hide part of the memory latency that the dot products alone leave exposed (measured +20% on one
// thread of a Sapphire Rapids VM). Float rows ask once per cache line, 512 bytes ahead: F16 decode
// 2048 -> 5632 on 2 threads took 833-859 us asking every 32 bytes 1024 ahead, 798-825 once per line
// 1024 ahead, 773-812 at 512, 833-842 at 256, 850-900 at 1536-2048 (alternating builds). Near a
// row's end the request goes to the same distance into the row R rows on (where this stream picks
// up in the tile's next call), not into the next row, which another stream of the tile has already
// read: the next group's rows then start with their first lines on the way. Zen 5, 2 threads, a
// chain of 20 x (2048 -> 5632, 5632 -> 2048) F16 products from memory (GB/s, alternating builds):
// best tier 44.5 / 37.4 / 39.8 -> 50.8 / 44.8 / 46.4, AVX2 tier 36.1 / 39.8 / 40.9 -> 46.0 / 47.1 /
// 50.0; asking R rows on throughout (as Q8_0's file-layout decode does) 33.7 / 47.5 / 42.1, and one
// row at a time (one stream, one accumulator, 8 KB ahead) 34.4.
constexpr int kPrefetchBytes = 512;
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

// Dot-product tiles of float types, written once for any vector width. L (the lanes) gives
// `V`, `kWidth`, zero(), fmadd(a, b, c), store(float*, V) and hsum(V) (the final sum in its file's
// order); XE and YE (the weights' and activations' elements) give `E`, load(const E*) -> V and
// scalar(E) -> float. Each dot product's lanes are summed by L::hsum, then the last n % kWidth
// products are added in order, whatever R and T are.
template <typename L, typename XE, typename YE>
struct FloatTile {
  // R rows x T tokens: row r at rows[r], its sum for token t into out[r][t * a.ldS]. Decode (T = 1)
  // asks for each cache line `ahead` bytes on; near a row's end, that far into the row `next` bytes
  // past it (where this stream reads next).
  template <int R, int T>
  static void rowsAt(const TileArgs& a, const char* const* rows, float* const* out, int64_t next, int64_t ahead) {
    typename L::V acc[R][T];
    for (int r = 0; r < R; r++)
      for (int t = 0; t < T; t++) acc[r][t] = L::zero();
    const typename XE::E* x[R];
    const typename YE::E* y[T];
    for (int r = 0; r < R; r++) x[r] = reinterpret_cast<const typename XE::E*>(rows[r]);
    for (int t = 0; t < T; t++) y[t] = reinterpret_cast<const typename YE::E*>(a.y + t * a.yStride);
    const int64_t rowBytes = a.n * (int64_t)sizeof(typename XE::E);
    int64_t i = 0;
    for (; i + L::kWidth <= a.n; i += L::kWidth) {
      typename L::V vx[R];
      const bool lineStart = T == 1 && ((i * sizeof(typename XE::E)) & 63) == 0;  // ask once per cache line
      for (int r = 0; r < R; r++) {
        if (lineStart) {
          const int64_t past = (int64_t)(i * sizeof(typename XE::E)) + ahead - rowBytes;
          __builtin_prefetch(past < 0 ? reinterpret_cast<const char*>(x[r] + i) + ahead : rows[r] + next + past, 0, 3);
        }
        vx[r] = XE::load(x[r] + i);
      }
      for (int t = 0; t < T; t++) {
        const typename L::V vy = YE::load(y[t] + i);
        for (int r = 0; r < R; r++) acc[r][t] = L::fmadd(vx[r], vy, acc[r][t]);
      }
    }
    for (int r = 0; r < R; r++) {
      for (int t = 0; t < T; t++) {
        float sum = L::hsum(acc[r][t]);
        for (int64_t j = i; j < a.n; j++) sum += XE::scalar(x[r][j]) * YE::scalar(y[t][j]);
        out[r][t * a.ldS] = sum;
      }
    }
  }

  // Rows a.x, a.x + a.xStride, ... side by side; near a row's end a decode tile asks into the row
  // R rows on, where this stream picks up in the tile's next call.
  template <int R, int T>
  struct Kernel {
    static void run(const TileArgs& a) {
      const char* rows[R];
      float* out[R];
      for (int r = 0; r < R; r++) {
        rows[r] = a.x + r * a.xStride;
        out[r] = a.s + r;
      }
      rowsAt<R, T>(a, rows, out, R * (int64_t)a.xStride, kPrefetchBytes);
    }
  };

  // Decode of one token as S weight streams: the chunk's rows in S runs of nr / S, one row of each
  // run side by side (the rest one at a time), each asking `ahead` bytes on, into the rows after it
  // near its end. S = 1 reads the rows one at a time.
  template <int S>
  static void streams(const TileArgs& a, int64_t nr, int64_t ahead) {
    const int64_t h = nr / S;
    for (int64_t i = 0; i < h; i++) {
      const char* rows[S];
      float* out[S];
      for (int k = 0; k < S; k++) {
        rows[k] = a.x + (i + k * h) * a.xStride;
        out[k] = a.s + i + k * h;
      }
      rowsAt<S, 1>(a, rows, out, (int64_t)a.xStride, ahead);
    }
    for (int64_t r = S * h; r < nr; r++) {
      const char* row = a.x + r * a.xStride;
      float* out = a.s + r;
      rowsAt<1, 1>(a, &row, &out, (int64_t)a.xStride, ahead);
    }
  }
};

// Matrix products with half-precision activations (elements YE): from WT tokens on, each group of
// WT tokens is widened to float once (exactly, into a buffer each thread keeps) and meets every row
// of the chunk in Wide<WR, WT> tiles; fewer tokens (decode) read the halves directly in
// Direct<DR, DT> tiles. Both sum in the same lanes and order, so the bits do not depend on the
// token count.
template <typename L, typename YE, template <int, int> class Direct, int DR, int DT, template <int, int> class Wide, int WR,
          int WT>
void halfTiles(const TileArgs& a, int64_t nr, int64_t nt) {
  if (nt < WT) {
    tiles<Direct, DR, DT>(a, nr, nt);
    return;
  }
  thread_local std::vector<float> wide;
  if (wide.size() < (size_t)(WT * a.n)) wide.resize((size_t)(WT * a.n));
  for (int64_t t0 = 0; t0 < nt; t0 += WT) {
    const int64_t count = nt - t0 < WT ? nt - t0 : WT;
    for (int64_t t = 0; t < count; t++) {
      const typename YE::E* src = reinterpret_cast<const typename YE::E*>(a.y + (t0 + t) * a.yStride);
      float* dst = wide.data() + t * a.n;
      int64_t i = 0;
      for (; i + L::kWidth <= a.n; i += L::kWidth) L::store(dst + i, YE::load(src + i));
      for (; i < a.n; i++) dst[i] = YE::scalar(src[i]);
    }
    const TileArgs w{a.n, a.s + t0 * a.ldS, a.ldS, a.x, a.xStride, reinterpret_cast<const char*>(wide.data()), (size_t)a.n * sizeof(float)};
    tiles<Wide, WR, WT>(w, nr, count);
  }
}

}  // namespace
}  // namespace kiln
