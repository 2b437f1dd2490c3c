// Linear weights rearranged once, at upload, into the layouts the Vulkan matmul shaders read.
//
//   - f32 / f16 / bf16: row-major [N, KP], KP = K rounded up to a whole 16-byte chunk (4 f32 or
//     8 halves), zero padded, so a row starts on a 16-byte boundary and is read as uvec4.
//   - q8_0 / q4_0 / q4_1: GGUF interleaves a 2-byte half scale with each block's quants, leaving
//     them unaligned. Here the quants of row n's blocks are contiguous, 16-byte aligned (q8_0: 32
//     int8 per block; q4: the 16 bytes of GGUF-ordered nibbles) in `values`; the half scales (and
//     q4_1 half mins) of block b of row n sit at n * blocks + b in `scales` (`mins`), unchanged
//     bits. The device reads exactly the bytes GGUF stores (18 per q4_0 block, 34 per q8_0).
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
enum class WeightKind { kF32, kF16, kBF16, kQ8_0, kQ4_0, kQ4_1 };

std::optional<WeightKind> weight_kind_for(WeightFormat format);
bool is_block_kind(WeightKind k);
// The format a kind stores, and its name from the precision vocabulary (jobs/precision.h).
WeightFormat weight_format_of(WeightKind k);
std::string weight_kind_name(WeightKind k);

inline constexpr int64_t kBlockValues = 32;
inline constexpr int64_t kChunkBytes = 16;

struct PackedWeight {
  WeightKind kind = WeightKind::kF32;
  int64_t rows = 0;    // N
  int64_t cols = 0;    // K
  int64_t padded = 0;  // KP (float kinds) or blocks per row (block kinds)
  std::vector<uint8_t> values;
  std::vector<uint16_t> scales;  // block kinds: half bits
  std::vector<uint16_t> mins;    // q4_1
};

Result<PackedWeight> pack_weight(WeightKind kind, const void* raw, std::size_t bytes, int64_t rows, int64_t cols);

}  // namespace am::kernels::vulkan
