// IEEE 754 binary16 ("half") <-> binary32 conversion.
//
// Contract:
//   - fp32_to_fp16(): round to nearest, ties to even; overflow rounds to +-inf; values below half
//     the smallest subnormal (2^-25) flush to signed zero, everything between becomes a correctly
//     rounded subnormal; NaN stays NaN with its sign and top payload bits and the quiet bit set.
//   - fp16_to_fp32(): exact for every non-NaN half; a NaN gets the quiet bit set (x86 F16C does the
//     same, so the scalar and hardware paths agree bit for bit on all 65536 inputs).
//   - The row functions use F16C when the CPU has it and the scalar code otherwise; results are
//     identical either way. The *_scalar / *_f16c variants are exposed for tests; calling the f16c
//     variant on a CPU without F16C is undefined.
//   - All functions are pure and thread-safe.
#pragma once

#include <bit>
#include <cstdint>

namespace am::kernels {

inline float fp16_to_fp32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  const uint32_t mant = h & 0x3FFu;
  if (exp == 0x1F) {  // inf or NaN
    const uint32_t quiet = mant ? 0x00400000u : 0u;
    return std::bit_cast<float>(sign | 0x7F800000u | quiet | (mant << 13));
  }
  if (exp == 0) {
    if (mant == 0) return std::bit_cast<float>(sign);
    // Subnormal half: mant * 2^-24, exactly representable as a normal float.
    const float magnitude = static_cast<float>(mant) * 0x1p-24f;
    return sign ? -magnitude : magnitude;
  }
  return std::bit_cast<float>(sign | ((exp + 112u) << 23) | (mant << 13));
}

inline uint16_t fp32_to_fp16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t ax = x & 0x7FFFFFFFu;
  if (ax >= 0x7F800000u) {  // inf or NaN
    if (ax == 0x7F800000u) return sign | 0x7C00u;
    return static_cast<uint16_t>(sign | 0x7E00u | ((ax >> 13) & 0x3FFu));
  }
  if (ax >= 0x477FF000u) return sign | 0x7C00u;  // >= 65520 rounds past the largest half
  if (ax < 0x38800000u) {                        // below 2^-14: subnormal half or zero
    if (ax <= 0x33000000u) return sign;          // <= 2^-25 (a tie at 2^-25 goes to even 0)
    const uint32_t e = ax >> 23;                 // 102..112
    const uint32_t m = (ax & 0x7FFFFFu) | 0x800000u;
    const uint32_t shift = 126u - e;  // value in units of 2^-24 is m >> shift
    uint32_t q = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1u);
    const uint32_t half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (q & 1u))) ++q;
    return static_cast<uint16_t>(sign | q);
  }
  // Normal: rebias the exponent and round the 13 dropped mantissa bits; a carry out of the
  // mantissa correctly bumps the exponent.
  uint32_t h = ((ax >> 13) - (112u << 10));
  const uint32_t rem = ax & 0x1FFFu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
  return static_cast<uint16_t>(sign | h);
}

bool f16c_available();

void fp32_to_fp16_row(const float* src, uint16_t* dst, int64_t n);
void fp16_to_fp32_row(const uint16_t* src, float* dst, int64_t n);

void fp32_to_fp16_row_scalar(const float* src, uint16_t* dst, int64_t n);
void fp16_to_fp32_row_scalar(const uint16_t* src, float* dst, int64_t n);
void fp32_to_fp16_row_f16c(const float* src, uint16_t* dst, int64_t n);
void fp16_to_fp32_row_f16c(const uint16_t* src, float* dst, int64_t n);

}  // namespace am::kernels
