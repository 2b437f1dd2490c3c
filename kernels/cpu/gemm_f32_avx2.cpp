// fp32 GEMV / small-M GEMM block kernel for AVX2 + FMA (function-level target attributes only:
// this file is built into binaries that run on CPUs without AVX2 too).
//
// Register blocking (16 ymm registers):
//   - one row of X (GEMV): 8 rows of W per pass, one accumulator each, the X vector loaded once
//     per step and the W loads folded into the FMAs (9 registers). Eight independent rows keep
//     eight streams in flight and eight FMA chains, enough to cover FMA latency on two pipes.
//     Each W stream is prefetched one pass ahead (the same K position 8 rows on): rows are
//     stored back to back, so the next pass's lines are not the ones the hardware prefetcher is
//     following.
//   - several rows of X: 2 x 4 tiles (8 accumulators + 4 W vectors + 1 X vector): each loaded W
//     vector is reused by 2 rows of X, each X vector by 4 rows of W; 6 loads per 8 FMAs.
//   - K tails (K not a multiple of 8) use masked loads, so nothing past a row is read.
#if defined(__x86_64__)

#include <immintrin.h>

#include "kernels/cpu/gemm_f32_kernels.h"

#define AM_TARGET_AVX2 __attribute__((target("avx2,fma")))

namespace am::kernels::detail {
namespace {

constexpr int64_t kLanes = 8;
constexpr int kGemvRows = 8;   // W rows per pass of the one-row kernel
constexpr int kTileRowsX = 4;  // X rows of the GEMM tile
constexpr int kTileRowsW = 3;  // W rows of the GEMM tile

AM_TARGET_AVX2 inline float hsum(__m256 v) {
  const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(t, _mm_movehdup_ps(t)));
}

AM_TARGET_AVX2 inline __m256i tail_mask(int64_t rest) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(rest)),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// The MR x NR tile at x (MR rows, stride ldx) and w (NR rows, stride ldw) over k.
template <int MR, int NR, bool kPrefetch>
AM_TARGET_AVX2 inline void tile(const float* x, int64_t ldx, const float* w, int64_t ldw, int64_t k,
                                const float* bias, bool accumulate, float* y, int64_t ldy) {
  __m256 acc[MR][NR];
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) acc[i][j] = _mm256_setzero_ps();
  }
  const int64_t full = k / kLanes * kLanes;
  for (int64_t p = 0; p < full; p += kLanes) {
    if constexpr (kPrefetch) {
      // One 64-byte line per row every second step: the next pass's rows, same position.
      if ((p & (2 * kLanes - 1)) == 0) {
#pragma GCC unroll 8
        for (int j = 0; j < NR; ++j) {
          _mm_prefetch(reinterpret_cast<const char*>(w + (j + NR) * ldw + p), _MM_HINT_T0);
        }
      }
    }
    if constexpr (MR == 1) {
      const __m256 xv = _mm256_loadu_ps(x + p);
#pragma GCC unroll 8
      for (int j = 0; j < NR; ++j) {
        acc[0][j] = _mm256_fmadd_ps(xv, _mm256_loadu_ps(w + j * ldw + p), acc[0][j]);
      }
    } else {
      __m256 wv[NR];
#pragma GCC unroll 8
      for (int j = 0; j < NR; ++j) wv[j] = _mm256_loadu_ps(w + j * ldw + p);
#pragma GCC unroll 8
      for (int i = 0; i < MR; ++i) {
        const __m256 xv = _mm256_loadu_ps(x + i * ldx + p);
#pragma GCC unroll 8
        for (int j = 0; j < NR; ++j) acc[i][j] = _mm256_fmadd_ps(xv, wv[j], acc[i][j]);
      }
    }
  }
  if (full < k) {
    const __m256i mask = tail_mask(k - full);
    __m256 wv[NR];
#pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) wv[j] = _mm256_maskload_ps(w + j * ldw + full, mask);
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      const __m256 xv = _mm256_maskload_ps(x + i * ldx + full, mask);
#pragma GCC unroll 8
      for (int j = 0; j < NR; ++j) acc[i][j] = _mm256_fmadd_ps(xv, wv[j], acc[i][j]);
    }
  }
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) {
    float* yr = y + i * ldy;
#pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) {
      const float base = accumulate ? yr[j] : (bias != nullptr ? bias[j] : 0.0f);
      yr[j] = base + hsum(acc[i][j]);
    }
  }
}

// Rows [0, m) of X against NR rows of W: full tiles, then the leftover row of X.
template <int NR>
AM_TARGET_AVX2 inline void x_rows(const float* x, int64_t ldx, int64_t m, const float* w,
                                  int64_t ldw, int64_t k, const float* bias, bool accumulate,
                                  float* y, int64_t ldy) {
  int64_t i = 0;
  for (; i + kTileRowsX <= m; i += kTileRowsX) {
    tile<kTileRowsX, NR, false>(x + i * ldx, ldx, w, ldw, k, bias, accumulate, y + i * ldy, ldy);
  }
  const float* xi = x + i * ldx;
  float* yi = y + i * ldy;
  switch (m - i) {
    case 3:
      tile<3, NR, false>(xi, ldx, w, ldw, k, bias, accumulate, yi, ldy);
      break;
    case 2:
      tile<2, NR, false>(xi, ldx, w, ldw, k, bias, accumulate, yi, ldy);
      break;
    case 1:
      tile<1, NR, false>(xi, ldx, w, ldw, k, bias, accumulate, yi, ldy);
      break;
    default:
      break;
  }
}

}  // namespace

AM_TARGET_AVX2 void gemm_f32_block_avx2(const float* x, int64_t ldx, int64_t m, const float* w,
                                        int64_t ldw, int64_t n, int64_t k, const float* bias,
                                        bool accumulate, float* y, int64_t ldy) {
  int64_t j = 0;
  auto b = [&](int64_t col) { return bias != nullptr ? bias + col : nullptr; };
  if (m == 1) {
    for (; j + kGemvRows <= n; j += kGemvRows) {
      tile<1, kGemvRows, true>(x, ldx, w + j * ldw, ldw, k, b(j), accumulate, y + j, ldy);
    }
  }
  // Each W tile is loaded once per pair of X rows and stays in L1 across the rows of X.
  for (; j + kTileRowsW <= n; j += kTileRowsW) {
    x_rows<kTileRowsW>(x, ldx, m, w + j * ldw, ldw, k, b(j), accumulate, y + j, ldy);
  }
  for (; j < n; ++j) x_rows<1>(x, ldx, m, w + j * ldw, ldw, k, b(j), accumulate, y + j, ldy);
}

}  // namespace am::kernels::detail

#endif  // __x86_64__
