// Block layouts of the quantized weight formats, byte for byte those of GGUF's block types of the
// same names (docs/FORMATS.md), and their reference quantizers and decoders.
//
// Contract:
//   - quantize_row_*(x, y, k) quantizes k floats into ceil(k / block) blocks at y. A partial last
//     block is quantized as if the row were padded with zeros. For q4_0 and q4_1 the bytes equal
//     GGUF's quantize_row_q4_0_ref / quantize_row_q4_1_ref whenever k is a multiple of 32 and the
//     input is finite (q8_0 lives in kernels/formats/q8_0.h with the same promise). The q2_k / q3_k
//     quantizers are this project's own least-squares searches; they produce valid GGUF Q2_K /
//     Q3_K blocks (any GGUF reader decodes them), but not the bytes llama.cpp's quantizer picks.
//   - A block (or super-block) holding a NaN or +-Inf is stored with its scale(s) set to a quiet
//     NaN and every quant zero, so it poisons every product it enters.
//   - dequantize_row_*(x, y, k) writes the first k decoded values (padding is not written).
//   - Pure and thread-safe.
#pragma once

#include <cstdint>

#include "kernels/formats/q8_0.h"

namespace am::kernels {

inline constexpr int64_t kQ4BlockSize = 32;     // q4_0, q4_1
inline constexpr int64_t kSuperBlockSize = 256;  // q2_k, q3_k ("QK_K")
inline constexpr int64_t kSubBlockSize = 16;     // k-quant sub-block with its own scale
inline constexpr int64_t kSubBlocks = kSuperBlockSize / kSubBlockSize;

// w[j] = d * ((qs[j % 16] >> (4 * (j / 16))) & 0xF) - 8)
struct BlockQ4_0 {
  uint16_t d;                    // binary16 scale
  uint8_t qs[kQ4BlockSize / 2];  // element j in the low nibble of byte j, j+16 in the high nibble
};
static_assert(sizeof(BlockQ4_0) == 18, "block_q4_0 must be 18 bytes like GGUF's");

// w[j] = d * q[j] + m, q[j] packed as in q4_0
struct BlockQ4_1 {
  uint16_t d;  // binary16 scale
  uint16_t m;  // binary16 minimum
  uint8_t qs[kQ4BlockSize / 2];
};
static_assert(sizeof(BlockQ4_1) == 20, "block_q4_1 must be 20 bytes like GGUF's");

// 256 weights in 16 sub-blocks of 16. Element e (0..255), with h = e / 128, j = (e % 128) / 32,
// l = e % 32, s = e / 16: q = (qs[32h + l] >> 2j) & 3, w = d * (scales[s] & 0xF) * q
// - dmin * (scales[s] >> 4).
struct BlockQ2_K {
  uint8_t scales[kSubBlocks];         // low nibble: scale, high nibble: min, per sub-block
  uint8_t qs[kSuperBlockSize / 4];    // 2-bit quants
  uint16_t d;                         // binary16 super-block scale for the scales
  uint16_t dmin;                      // binary16 super-block scale for the mins
};
static_assert(sizeof(BlockQ2_K) == 84, "block_q2_K must be 84 bytes like GGUF's");

// 256 weights in 16 sub-blocks of 16. Element e, with h, j, l, s as for q2_k: the 3-bit quant is
// L = ((qs[32h + l] >> 2j) & 3) + 4 * ((hmask[l] >> (4h + j)) & 1) and w = d * (sc[s] - 32) *
// (L - 4), where sc[s] is the 6-bit scale packed in `scales` (see q3_k_scale()).
struct BlockQ3_K {
  uint8_t hmask[kSuperBlockSize / 8];  // high bit of each quant
  uint8_t qs[kSuperBlockSize / 4];     // low 2 bits of each quant
  uint8_t scales[12];                  // 16 six-bit scales
  uint16_t d;                          // binary16 super-block scale
};
static_assert(sizeof(BlockQ3_K) == 110, "block_q3_K must be 110 bytes like GGUF's");

// The 6-bit scale of sub-block s (0..63; the weight uses sc - 32): low 4 bits in the low (s < 8)
// or high (s >= 8) nibble of scales[s % 8], high 2 bits at bit 2 * (s / 4) of scales[8 + s % 4].
inline int q3_k_scale(const BlockQ3_K& b, int s) {
  const int low = s < 8 ? (b.scales[s] & 0xF) : (b.scales[s - 8] >> 4);
  const int high = (b.scales[8 + s % 4] >> (2 * (s / 4))) & 3;
  return low | (high << 4);
}

// The 2/3-bit quant of element e of a k-quant super-block (q2_k: 0..3; q3_k: 0..7).
inline int q2_k_quant(const BlockQ2_K& b, int e) {
  return (b.qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
}
inline int q3_k_quant(const BlockQ3_K& b, int e) {
  const int low = (b.qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
  const int high = (b.hmask[e % 32] >> (e / 32)) & 1;
  return low | (high << 2);
}

void quantize_row_q4_0(const float* x, BlockQ4_0* y, int64_t k);
void quantize_row_q4_1(const float* x, BlockQ4_1* y, int64_t k);
void quantize_row_q2_k(const float* x, BlockQ2_K* y, int64_t k);
void quantize_row_q3_k(const float* x, BlockQ3_K* y, int64_t k);

void dequantize_row_q4_0(const BlockQ4_0* x, float* y, int64_t k);
void dequantize_row_q4_1(const BlockQ4_1* x, float* y, int64_t k);
void dequantize_row_q2_k(const BlockQ2_K* x, float* y, int64_t k);
void dequantize_row_q3_k(const BlockQ3_K* x, float* y, int64_t k);

}  // namespace am::kernels
