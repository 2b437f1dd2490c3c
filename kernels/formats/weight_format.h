// The storage formats of linear-layer weights, their geometry, and how job precision names map
// onto them (docs/FORMATS.md has every layout byte by byte).
//
// Contract:
//   - WeightFormat names one storage format. Block formats store each row of K weights as
//     ceil(K / block_size) blocks of block_bytes bytes (the last block zero-padded); the float
//     formats (f32, f16, bf16) have block_size 1 and store exactly K values per row.
//   - weight_format_for_precision() maps a job precision name (f32 f16 bf16 q8_0 q4_0 q4_1 q3_k
//     q2_k) to its format. "mixed" is not a format but a policy over tensor roles, answered by
//     weight_format_for_role(); weight_format_for_precision("mixed") is InvalidArgument saying so.
//     Any other name is Unsupported naming the precision and the backend, e.g.
//     "precision q5_k not implemented on backend cpu".
//   - weight_format_for_role() gives the format a tensor of `role` is stored in at `precision`:
//     for "mixed" (the "4-bit mixed" of hardware compatibility reports) attention and embedding /
//     output tensors are q8_0 and feed-forward tensors q4_0; every other precision gives all
//     roles the format weight_format_for_precision() gives.
//   - All functions are pure and thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "common/status.h"

namespace am::kernels {

enum class WeightFormat { kF32, kQ8_0, kF16, kBF16, kQ4_0, kQ4_1, kQ2_K, kQ3_K };

// Where a weight tensor sits in a model; the mixed-precision policy is defined over these.
enum class TensorRole { kAttention, kFeedForward, kEmbedding, kOutput, kOther };

inline constexpr std::string_view kMixedPrecision = "mixed";

// Every format, in the order of the enum.
std::span<const WeightFormat> all_weight_formats();

std::string_view weight_format_name(WeightFormat format);  // "f32", "q8_0", "q2_k", ...
std::string_view tensor_role_name(TensorRole role);         // "attention", "feed-forward", ...

// Weights per block (1 for f32/f16/bf16, 32 for q8_0/q4_0/q4_1, 256 for q2_k/q3_k).
int64_t weight_format_block_size(WeightFormat format);
// Bytes per block (4, 2, 2, 34, 18, 20, 84, 110).
std::size_t weight_format_block_bytes(WeightFormat format);
// Bytes of one stored row of k weights, padding included.
std::size_t weight_format_row_bytes(WeightFormat format, int64_t k);
// Stored bits per weight for rows that fill whole blocks, scales included (e.g. 4.5 for q4_0).
double weight_format_bits_per_weight(WeightFormat format);
bool weight_format_is_block_quantized(WeightFormat format);

Result<WeightFormat> weight_format_for_precision(std::string_view precision,
                                                 std::string_view backend);
Result<WeightFormat> weight_format_for_role(std::string_view precision, TensorRole role,
                                            std::string_view backend);

}  // namespace am::kernels
