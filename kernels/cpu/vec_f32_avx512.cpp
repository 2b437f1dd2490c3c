// f32 vector kernels for AVX-512 F (function-level target attributes only).
// GCC 12's AVX-512 headers seed some intrinsics with a deliberately undefined register
// (_mm512_undefined_*), which -Wmaybe-uninitialized misreports at every inlined use.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "kernels/cpu/vec_f32_kernels.h"

#define AM_TARGET_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,fma")))

namespace am::kernels::detail {
namespace {

constexpr int64_t kLanes = 16;

AM_TARGET_AVX512 inline __mmask16 tail_mask(int64_t rest) {
  return static_cast<__mmask16>((1u << rest) - 1u);
}

}  // namespace

AM_TARGET_AVX512 void dot_rows_f32_avx512(const float* x, const float* rows, int64_t stride,
                                          int64_t nrows, int64_t n, float* out) {
  const int64_t full = n / kLanes * kLanes;
  const __mmask16 mask = tail_mask(n - full);
  for (int64_t r = 0; r < nrows; ++r) {
    const float* row = rows + r * stride;
    __m512 acc = _mm512_setzero_ps();
    for (int64_t i = 0; i < full; i += kLanes) {
      acc = _mm512_fmadd_ps(_mm512_loadu_ps(x + i), _mm512_loadu_ps(row + i), acc);
    }
    if (full < n) {
      acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mask, x + full),
                            _mm512_maskz_loadu_ps(mask, row + full), acc);
    }
    out[r] = _mm512_reduce_add_ps(acc);
  }
}

AM_TARGET_AVX512 void weighted_sum_rows_f32_avx512(const float* p, const float* rows,
                                                   int64_t stride, int64_t nrows, int64_t n,
                                                   float* out) {
  const int64_t full = n / kLanes * kLanes;
  const __mmask16 mask = tail_mask(n - full);
  // Output chunk outer, rows inner: each chunk's sum stays in a register for all rows.
  for (int64_t i = 0; i < n; i += kLanes) {
    const __mmask16 m = i >= full ? mask : static_cast<__mmask16>(0xFFFF);
    __m512 acc = _mm512_setzero_ps();
    for (int64_t r = 0; r < nrows; ++r) {
      acc = _mm512_fmadd_ps(_mm512_set1_ps(p[r]), _mm512_maskz_loadu_ps(m, rows + r * stride + i),
                            acc);
    }
    _mm512_mask_storeu_ps(out + i, m, acc);
  }
}

}  // namespace am::kernels::detail
