#include "kernels/formats/fp16.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define AM_HAVE_X86 1
#endif

#include "kernels/cpu/cpu_features.h"

namespace am::kernels {

bool f16c_available() { return cpu_features().f16c; }

void fp32_to_fp16_row_scalar(const float* src, uint16_t* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = fp32_to_fp16(src[i]);
}

void fp16_to_fp32_row_scalar(const uint16_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = fp16_to_fp32(src[i]);
}

#if defined(AM_HAVE_X86)
__attribute__((target("avx,f16c"))) void fp32_to_fp16_row_f16c(const float* src, uint16_t* dst,
                                                               int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(src + i);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                     _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  for (; i < n; ++i) dst[i] = _cvtss_sh(src[i], _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

__attribute__((target("avx,f16c"))) void fp16_to_fp32_row_f16c(const uint16_t* src, float* dst,
                                                               int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
  }
  for (; i < n; ++i) dst[i] = _cvtsh_ss(src[i]);
}
#else
// No F16C outside x86: f16c_available() is false there and these are the scalar code.
void fp32_to_fp16_row_f16c(const float* src, uint16_t* dst, int64_t n) {
  fp32_to_fp16_row_scalar(src, dst, n);
}
void fp16_to_fp32_row_f16c(const uint16_t* src, float* dst, int64_t n) {
  fp16_to_fp32_row_scalar(src, dst, n);
}
#endif

void fp32_to_fp16_row(const float* src, uint16_t* dst, int64_t n) {
  if (f16c_available()) {
    fp32_to_fp16_row_f16c(src, dst, n);
  } else {
    fp32_to_fp16_row_scalar(src, dst, n);
  }
}

void fp16_to_fp32_row(const uint16_t* src, float* dst, int64_t n) {
  if (f16c_available()) {
    fp16_to_fp32_row_f16c(src, dst, n);
  } else {
    fp16_to_fp32_row_scalar(src, dst, n);
  }
}

}  // namespace am::kernels
