// Per-path vector kernels of the activations that need exp or erf (GELU's erf form, SiLU,
// sigmoid), behind the dispatch in activation.cpp. Internal to kernels/: each is compiled for its
// own instruction set and must only be called when kernel_path_available() says so.
//
// Why: BERT's GELU called std::erf one float at a time; at bert-tiny's smallest shape (b1 s32) it
// was a quarter of the forward pass (perf, 2026-12-07), the same share for f32 and every
// quantized precision, so it also flattened their speed-ups.
//
// Accuracy (against the scalar forms in activation.h, which the scalar path keeps as the
// reference): exp by range reduction to |r| <= ln2/2 and a degree-7 Taylor polynomial (relative
// error about 1e-7 from the polynomial, plus rounding); erfc(|z|) by Abramowitz & Stegun 7.1.26
// (absolute error <= 1.5e-7 in erf), so GELU's absolute error stays under about
// 1e-7 * (1 + |x|). NaN stays NaN; infinities give the scalar forms' limits.
#pragma once

#include <cstdint>

namespace am::kernels::detail {

void gelu_erf_avx512(float* p, int64_t n);
void silu_avx512(float* p, int64_t n);
void sigmoid_avx512(float* p, int64_t n);
void gelu_erf_avx2(float* p, int64_t n);
void silu_avx2(float* p, int64_t n);
void sigmoid_avx2(float* p, int64_t n);

}  // namespace am::kernels::detail
