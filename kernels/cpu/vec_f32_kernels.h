// Per-path f32 vector kernels behind the dispatch in vec_f32.cpp. Internal to kernels/: each is
// compiled for its own instruction set and must only be called when kernel_path_available()
// says so.
#pragma once

#include <cstdint>

namespace am::kernels::detail {

void dot_rows_f32_avx2(const float* x, const float* rows, int64_t stride, int64_t nrows, int64_t n,
                       float* out);
void dot_rows_f32_avx512(const float* x, const float* rows, int64_t stride, int64_t nrows,
                         int64_t n, float* out);
void weighted_sum_rows_f32_avx2(const float* p, const float* rows, int64_t stride, int64_t nrows,
                                int64_t n, float* out);
void weighted_sum_rows_f32_avx512(const float* p, const float* rows, int64_t stride, int64_t nrows,
                                  int64_t n, float* out);

}  // namespace am::kernels::detail
