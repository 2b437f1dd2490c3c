// f32 vector kernels for AVX2 + FMA (function-level target attributes only).
#include <immintrin.h>

#include "kernels/cpu/vec_f32_kernels.h"

#define AM_TARGET_AVX2 __attribute__((target("avx2,fma")))

namespace am::kernels::detail {
namespace {

constexpr int64_t kLanes = 8;

AM_TARGET_AVX2 inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Lane mask for the last partial vector: lanes [0, rest) active.
AM_TARGET_AVX2 inline __m256i tail_mask(int64_t rest) {
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(rest)), lanes);
}

}  // namespace

AM_TARGET_AVX2 void dot_rows_f32_avx2(const float* x, const float* rows, int64_t stride,
                                      int64_t nrows, int64_t n, float* out) {
  const int64_t full = n / kLanes * kLanes;
  const __m256i mask = tail_mask(n - full);
  for (int64_t r = 0; r < nrows; ++r) {
    const float* row = rows + r * stride;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < full; i += kLanes) {
      acc = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(row + i), acc);
    }
    if (full < n) {
      acc = _mm256_fmadd_ps(_mm256_maskload_ps(x + full, mask),
                            _mm256_maskload_ps(row + full, mask), acc);
    }
    out[r] = hsum(acc);
  }
}

AM_TARGET_AVX2 void weighted_sum_rows_f32_avx2(const float* p, const float* rows, int64_t stride,
                                               int64_t nrows, int64_t n, float* out) {
  const int64_t full = n / kLanes * kLanes;
  const __m256i mask = tail_mask(n - full);
  // Output chunk outer, rows inner: each chunk's sum stays in a register for all rows.
  for (int64_t i = 0; i < n; i += kLanes) {
    const bool partial = i >= full;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t r = 0; r < nrows; ++r) {
      const float* src = rows + r * stride + i;
      const __m256 v = partial ? _mm256_maskload_ps(src, mask) : _mm256_loadu_ps(src);
      acc = _mm256_fmadd_ps(_mm256_set1_ps(p[r]), v, acc);
    }
    if (partial) {
      _mm256_maskstore_ps(out + i, mask, acc);
    } else {
      _mm256_storeu_ps(out + i, acc);
    }
  }
}

}  // namespace am::kernels::detail
