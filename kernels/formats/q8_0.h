// q8_0: 8-bit block quantization, byte-compatible with GGUF's block_q8_0.
//
// Layout (docs/FORMATS.md has the full description): a row of K weights is stored as
// ceil(K/32) consecutive 34-byte blocks; each block is an IEEE half scale `d` (little-endian)
// followed by 32 int8 values `qs`, and decodes as w[j] = d * qs[j] (8.5 bits per weight).
// When K is not a multiple of 32 the last block is quantized as if the row were padded with
// zeros (the padding never changes d and decodes to 0); for K % 32 == 0 the bytes equal GGUF's.
//
// Quantization (per block, matching GGUF's reference quantize_row_q8_0): amax = max|x|,
// d = amax / 127, id = d ? 1/d : 0, qs[j] = round-half-away-from-zero(x[j] * id), stored d =
// fp32_to_fp16(d). Extensions for inputs the GGUF reference leaves undefined: a block holding a
// NaN or Inf stores d = NaN (qs = 0) so it poisons every dot product it enters; products that
// overflow (subnormal amax) clamp to +-127.
//
// Contract: all functions are pure and thread-safe; `path` picks the SIMD implementation and
// must be available on this CPU (see cpu_features.h). quantize_row_q8_0 gives byte-identical
// output on every path. Weight matrices in q8_0 are kernels::WeightMatrix
// (kernels/formats/weight_matrix.h); their products are kernels::matmul (kernels/cpu/matmul.h).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cpu/cpu_features.h"

namespace am::kernels {

inline constexpr int64_t kQ8_0BlockSize = 32;
inline constexpr double kQ8_0BitsPerWeight = 8.5;

struct BlockQ8_0 {
  uint16_t d;                 // IEEE binary16 scale
  int8_t qs[kQ8_0BlockSize];  // quantized values in [-127, 127]
};
static_assert(sizeof(BlockQ8_0) == 34, "block_q8_0 must be 34 bytes like GGUF's");

inline int64_t q8_0_blocks_per_row(int64_t k) { return (k + kQ8_0BlockSize - 1) / kQ8_0BlockSize; }
inline std::size_t q8_0_row_bytes(int64_t k) {
  return static_cast<std::size_t>(q8_0_blocks_per_row(k)) * sizeof(BlockQ8_0);
}

// k values from x into q8_0_blocks_per_row(k) blocks at y.
void quantize_row_q8_0_ref(const float* x, BlockQ8_0* y, int64_t k);
void quantize_row_q8_0(const float* x, BlockQ8_0* y, int64_t k, KernelPath path);
// Decodes the first k values of the row (the padding of a partial last block is not written).
void dequantize_row_q8_0(const BlockQ8_0* x, float* y, int64_t k);

}  // namespace am::kernels
