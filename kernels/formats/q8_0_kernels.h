// Per-path q8_0 kernels behind the dispatch in q8_0.cpp. Internal to kernels/: each function is
// compiled for its own instruction set (function-level target attributes, never global flags)
// and must only be called when kernel_path_available() says so.
#pragma once

#include <cstdint>

#include "kernels/formats/q8_0.h"

namespace am::kernels::detail {

// One full block of 32 floats each.
void quantize_block_q8_0_avx2(const float* x, BlockQ8_0* y);
void quantize_block_q8_0_avx512(const float* x, BlockQ8_0* y);

// Shared by every path so that the special cases are decided identically.
inline constexpr float kQ8_0MaxQ = 127.0f;
inline constexpr uint16_t kFp16QuietNaN = 0x7E00;

}  // namespace am::kernels::detail
