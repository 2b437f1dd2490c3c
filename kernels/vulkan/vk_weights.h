// Linear weights rearranged once, at upload, into the layouts the Vulkan matmul shaders read.
//
//   - f32 / f16 / bf16: row-major [N, KP], KP = K rounded up to a whole 16-byte chunk (4 f32 or
//     8 halves), zero padded, so a row starts on a 16-byte boundary and is read as uvec4.
//   - q8_0 / q4_0 / q4_1: GGUF interleaves a 2-byte half scale with each block's quants, leaving
//     them unaligned. Here the quants of row n's blocks are contiguous, 16-byte aligned (q8_0: 32
//     int8 per block; q4: the 16 bytes of GGUF-ordered nibbles) in `values`; the half scales (and
//     q4_1 half mins) of block b of row n sit at n * blocks + b in `scales` (`mins`), unchanged
//     bits. The device reads exactly the bytes GGUF stores (18 per q4_0 block, 34 per q8_0).
//   - q2_k / q3_k (super-blocks of 256): each block's bytes other than its half scales, in GGUF
//     order and contiguous per row, read as 32-bit words (q2_k: scales[16] then qs[64] in GGUF
//     become qs[64] then scales[16], 20 words; q3_k: hmask[32], qs[64], scales[12], 27 words);
//     the half d of block b of row n (and q2_k's half dmin) at n * blocks + b in `scales`
//     (`mins`). Again exactly GGUF's bytes (84 per q2_k block, 110 per q3_k).
//
// Contract: `raw` holds the layer's weight as Linear::weight_data() documents it; a byte count
// that disagrees with rows x cols in the format is InvalidArgument naming both sizes. Pure,
// thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "kernels/formats/weight_format.h"

namespace am::kernels::vulkan {

// How a Linear's weight lives on the device. Formats added to WeightFormat later are
// Unsupported until this backend learns them.
enum class WeightKind { kF32, kF16, kBF16, kQ8_0, kQ4_0, kQ4_1, kQ2_K, kQ3_K };

std::optional<WeightKind> weight_kind_for(WeightFormat format);
// Block kinds keep their half scales in `scales` (and `mins`) and multiply q8 activations.
bool is_block_kind(WeightKind k);
// The k-quants among them: super-blocks of 256, activations in q8 blocks of 256.
bool is_k_quant_kind(WeightKind k);
// Values per activation block a block kind multiplies (32, or 256 for the k-quants).
int64_t activation_block(WeightKind k);
// The format a kind stores, and its name from the precision vocabulary (jobs/precision.h).
WeightFormat weight_format_of(WeightKind k);
std::string weight_kind_name(WeightKind k);

inline constexpr int64_t kBlockValues = 32;
inline constexpr int64_t kSuperBlockValues = 256;
inline constexpr int64_t kChunkBytes = 16;

struct PackedWeight {
  WeightKind kind = WeightKind::kF32;
  int64_t rows = 0;    // N
  int64_t cols = 0;    // K
  int64_t padded = 0;  // KP (float kinds) or blocks (super-blocks) per row (block kinds)
  std::vector<uint8_t> values;
  std::vector<uint16_t> scales;  // block kinds: half bits
  std::vector<uint16_t> mins;    // q4_1: half mins; q2_k: half dmin
};

Result<PackedWeight> pack_weight(WeightKind kind, const void* raw, std::size_t bytes, int64_t rows, int64_t cols);

}  // namespace am::kernels::vulkan
