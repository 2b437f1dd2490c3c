#include "kernels/formats/bf16.h"

namespace am::kernels {

// Plain loops: the conversion is integer arithmetic the compiler vectorizes for any target, and
// rows are converted once per weight (at load) or once per activation row.
void fp32_to_bf16_row(const float* src, uint16_t* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = fp32_to_bf16(src[i]);
}

void bf16_to_fp32_row(const uint16_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_fp32(src[i]);
}

}  // namespace am::kernels
