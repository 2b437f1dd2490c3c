// Kernel-side view of the weight formats. The formats, their names and geometry and the mixed
// per-role policy are defined once, in jobs/precision.h; this header brings those types into the
// kernels' namespace and gives the kernels short names for the table's answers (docs/FORMATS.md
// has every layout byte by byte).
//
// Contract:
//   - Block formats store each row of K weights as ceil(K / block_size) blocks of block_bytes
//     bytes (the last block zero-padded); the float formats (f32, f16, bf16) have block_size 1
//     and store exactly K values per row.
//   - single_format() is the one format of a precision that has one; for "mixed", a policy over
//     tensor roles, it is InvalidArgument saying so (ask jobs::format_for_role()).
//   - All functions are pure and thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "common/status.h"
#include "jobs/precision.h"

namespace am::kernels {

using jobs::Precision;
using jobs::TensorRole;
using jobs::WeightFormat;

// Every storage format, in the order of the enum.
std::span<const WeightFormat> all_weight_formats();

inline std::string_view weight_format_name(WeightFormat f) { return jobs::to_string(f); }
inline std::string_view tensor_role_name(TensorRole r) { return jobs::to_string(r); }
// Weights per block (1 for f32/f16/bf16, 32 for q8_0/q4_0/q4_1, 256 for q2_k/q3_k).
inline int64_t weight_format_block_size(WeightFormat f) { return jobs::weight_format_info(f).block_size; }
// Bytes per block (4, 34, 2, 2, 18, 20, 84, 110 in enum order).
inline std::size_t weight_format_block_bytes(WeightFormat f) { return jobs::weight_format_info(f).block_bytes; }
// Bytes of one stored row of k weights, padding included.
inline std::size_t weight_format_row_bytes(WeightFormat f, int64_t k) { return jobs::row_bytes(f, k); }
// Stored bits per weight for rows that fill whole blocks, scales included (e.g. 4.5 for q4_0).
inline double weight_format_bits_per_weight(WeightFormat f) { return jobs::bits_per_weight(f); }
inline bool weight_format_is_block_quantized(WeightFormat f) {
  return jobs::weight_format_info(f).kind == jobs::FormatKind::kBlockQuantized;
}

Result<WeightFormat> single_format(Precision precision);

}  // namespace am::kernels
