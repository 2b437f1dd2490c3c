// bfloat16 <-> binary32 conversion.
//
// bf16 is the top half of an IEEE binary32: 1 sign bit, 8 exponent bits (bias 127), 7 mantissa
// bits. Contract:
//   - fp32_to_bf16(): round to nearest, ties to even, on the full binary32 value (subnormals are
//     rounded like every other value, never flushed); finite values that round past the largest
//     bf16 become +-inf; NaN stays NaN with its sign and top payload bits and the quiet bit set.
//   - bf16_to_fp32(): exact (appends 16 zero bits).
//   - The row functions give identical bits on every CPU (they use integer arithmetic, not the
//     VCVTNEPS2BF16 instruction, which flushes subnormal inputs to zero).
//   - All functions are pure and thread-safe.
#pragma once

#include <bit>
#include <cstdint>

namespace am::kernels {

inline constexpr uint32_t kBf16QuietBit = 0x00400000u;

inline float bf16_to_fp32(uint16_t h) { return std::bit_cast<float>(static_cast<uint32_t>(h) << 16); }

inline uint16_t fp32_to_bf16(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((x | kBf16QuietBit) >> 16);
  // Adding 0x7FFF plus the lowest kept bit rounds half to even; a carry into the exponent is
  // the correct rounding (up to inf at the top of the range).
  x += 0x7FFFu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

// Rounds every value to the nearest bf16 and back (the activations of a bf16 matmul).
inline float round_to_bf16(float f) { return bf16_to_fp32(fp32_to_bf16(f)); }

void fp32_to_bf16_row(const float* src, uint16_t* dst, int64_t n);
void bf16_to_fp32_row(const uint16_t* src, float* dst, int64_t n);

}  // namespace am::kernels
