// fp32 GEMV / small-M GEMM block kernel for AVX-512 F (function-level target attributes only:
// this file is built into binaries that run on CPUs without AVX-512).
//
// Register blocking (32 zmm registers):
//   - one row of X (GEMV): 8 rows of W per pass, one accumulator each, one X vector per step and
//     the W loads folded into the FMAs. Every step reads one 64-byte line of each row, and each
//     W stream is prefetched one pass ahead (the same K position 8 rows on; rows are stored back
//     to back, so the next pass's lines are not the ones the hardware prefetcher follows).
//   - several rows of X: 4 x 4 tiles (16 accumulators + 4 W vectors + 1 X vector): each loaded
//     W vector serves 4 rows of X and each X vector 4 rows of W; 8 loads per 16 FMAs.
//   - K tails (K not a multiple of 16) use masked loads, so nothing past a row is read.
#if defined(__x86_64__)

// GCC 12's AVX-512 headers seed some intrinsics with a deliberately undefined register
// (_mm512_undefined_*), which -W(maybe-)uninitialized misreports at every inlined use.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include "kernels/cpu/gemm_f32_kernels.h"

#define AM_TARGET_AVX512_F32 __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma")))

namespace am::kernels::detail {
namespace {

constexpr int64_t kLanes = 16;
constexpr int kGemvRows = 8;   // W rows per pass of the one-row kernel
constexpr int kTileRowsX = 4;  // X rows of the GEMM tile
constexpr int kTileRowsW = 4;  // W rows of the GEMM tile

template <int MR, int NR, bool kPrefetch>
AM_TARGET_AVX512_F32 inline void tile(const float* x, int64_t ldx, const float* w, int64_t ldw,
                                      int64_t k, const float* bias, bool accumulate, float* y,
                                      int64_t ldy) {
  __m512 acc[MR][NR];
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) acc[i][j] = _mm512_setzero_ps();
  }
  const int64_t full = k / kLanes * kLanes;
  for (int64_t p = 0; p < full; p += kLanes) {
    if constexpr (kPrefetch) {
#pragma GCC unroll 8
      for (int j = 0; j < NR; ++j) {
        _mm_prefetch(reinterpret_cast<const char*>(w + (j + NR) * ldw + p), _MM_HINT_T0);
      }
    }
    if constexpr (MR == 1) {
      const __m512 xv = _mm512_loadu_ps(x + p);
#pragma GCC unroll 8
      for (int j = 0; j < NR; ++j) {
        acc[0][j] = _mm512_fmadd_ps(xv, _mm512_loadu_ps(w + j * ldw + p), acc[0][j]);
      }
    } else {
      __m512 wv[NR];
#pragma GCC unroll 8
      for (int j = 0; j < NR; ++j) wv[j] = _mm512_loadu_ps(w + j * ldw + p);
#pragma GCC unroll 8
      for (int i = 0; i < MR; ++i) {
        const __m512 xv = _mm512_loadu_ps(x + i * ldx + p);
#pragma GCC unroll 8
        for (int j = 0; j < NR; ++j) acc[i][j] = _mm512_fmadd_ps(xv, wv[j], acc[i][j]);
      }
    }
  }
  if (full < k) {
    const __mmask16 mask = static_cast<__mmask16>((1u << (k - full)) - 1u);
    __m512 wv[NR];
#pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) wv[j] = _mm512_maskz_loadu_ps(mask, w + j * ldw + full);
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      const __m512 xv = _mm512_maskz_loadu_ps(mask, x + i * ldx + full);
#pragma GCC unroll 8
      for (int j = 0; j < NR; ++j) acc[i][j] = _mm512_fmadd_ps(xv, wv[j], acc[i][j]);
    }
  }
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) {
    float* yr = y + i * ldy;
#pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) {
      const float base = accumulate ? yr[j] : (bias != nullptr ? bias[j] : 0.0f);
      yr[j] = base + _mm512_reduce_add_ps(acc[i][j]);
    }
  }
}

// Rows [0, m) of X against NR rows of W: full 4-row tiles, then one narrower tile for the rest.
template <int NR>
AM_TARGET_AVX512_F32 inline void x_rows(const float* x, int64_t ldx, int64_t m, const float* w,
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

AM_TARGET_AVX512_F32 void gemm_f32_block_avx512(const float* x, int64_t ldx, int64_t m,
                                                const float* w, int64_t ldw, int64_t n, int64_t k,
                                                const float* bias, bool accumulate, float* y,
                                                int64_t ldy) {
  int64_t j = 0;
  auto b = [&](int64_t col) { return bias != nullptr ? bias + col : nullptr; };
  if (m == 1) {
    for (; j + kGemvRows <= n; j += kGemvRows) {
      tile<1, kGemvRows, true>(x, ldx, w + j * ldw, ldw, k, b(j), accumulate, y + j, ldy);
    }
  }
  // Each W tile is loaded once per 4 rows of X and stays in L1 across the rows of X.
  for (; j + kTileRowsW <= n; j += kTileRowsW) {
    x_rows<kTileRowsW>(x, ldx, m, w + j * ldw, ldw, k, b(j), accumulate, y + j, ldy);
  }
  for (; j < n; ++j) x_rows<1>(x, ldx, m, w + j * ldw, ldw, k, b(j), accumulate, y + j, ldy);
}

}  // namespace am::kernels::detail

#endif  // __x86_64__
