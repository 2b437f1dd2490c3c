#include "kernels/formats/weight_format.h"

#include <array>
#include <string>

namespace am::kernels {
namespace {

struct FormatInfo {
  WeightFormat format;
  std::string_view name;
  int64_t block_size;       // weights per block
  std::size_t block_bytes;  // bytes per block
};

// Geometry of every format in one table; the block sizes and byte counts are the GGUF ones for
// the block formats (docs/FORMATS.md).
constexpr std::array<FormatInfo, 8> kFormats = {{
    {WeightFormat::kF32, "f32", 1, 4},
    {WeightFormat::kQ8_0, "q8_0", 32, 34},
    {WeightFormat::kF16, "f16", 1, 2},
    {WeightFormat::kBF16, "bf16", 1, 2},
    {WeightFormat::kQ4_0, "q4_0", 32, 18},
    {WeightFormat::kQ4_1, "q4_1", 32, 20},
    {WeightFormat::kQ2_K, "q2_k", 256, 84},
    {WeightFormat::kQ3_K, "q3_k", 256, 110},
}};

constexpr std::array<WeightFormat, 8> kAllFormats = {
    WeightFormat::kF32,  WeightFormat::kQ8_0, WeightFormat::kF16,  WeightFormat::kBF16,
    WeightFormat::kQ4_0, WeightFormat::kQ4_1, WeightFormat::kQ2_K, WeightFormat::kQ3_K};

const FormatInfo& info(WeightFormat format) {
  for (const FormatInfo& f : kFormats) {
    if (f.format == format) return f;
  }
  return kFormats[0];  // unreachable for valid enum values
}

}  // namespace

std::span<const WeightFormat> all_weight_formats() { return kAllFormats; }

std::string_view weight_format_name(WeightFormat format) { return info(format).name; }

std::string_view tensor_role_name(TensorRole role) {
  switch (role) {
    case TensorRole::kAttention:
      return "attention";
    case TensorRole::kFeedForward:
      return "feed-forward";
    case TensorRole::kEmbedding:
      return "embedding";
    case TensorRole::kOutput:
      return "output";
    case TensorRole::kOther:
      return "other";
  }
  return "unknown";
}

int64_t weight_format_block_size(WeightFormat format) { return info(format).block_size; }

std::size_t weight_format_block_bytes(WeightFormat format) { return info(format).block_bytes; }

std::size_t weight_format_row_bytes(WeightFormat format, int64_t k) {
  const FormatInfo& f = info(format);
  const int64_t blocks = (k + f.block_size - 1) / f.block_size;
  return static_cast<std::size_t>(blocks) * f.block_bytes;
}

double weight_format_bits_per_weight(WeightFormat format) {
  const FormatInfo& f = info(format);
  return static_cast<double>(f.block_bytes) * 8.0 / static_cast<double>(f.block_size);
}

bool weight_format_is_block_quantized(WeightFormat format) { return info(format).block_size > 1; }

Result<WeightFormat> weight_format_for_precision(std::string_view precision,
                                                 std::string_view backend) {
  for (const FormatInfo& f : kFormats) {
    if (f.name == precision) return f.format;
  }
  if (precision == kMixedPrecision) {
    return invalid_argument(
        "precision mixed is a policy over tensor roles, not one weight format: ask "
        "weight_format_for_role() for each tensor");
  }
  return unsupported("precision " + std::string(precision) + " not implemented on backend " +
                     std::string(backend));
}

Result<WeightFormat> weight_format_for_role(std::string_view precision, TensorRole role,
                                            std::string_view backend) {
  if (precision != kMixedPrecision) return weight_format_for_precision(precision, backend);
  // The "4-bit mixed" recipe: the feed-forward matrices hold most of a transformer's weights
  // and tolerate 4 bits; attention projections, embeddings and the output head are more
  // sensitive (their errors reach every token or the logits directly) and keep 8 bits.
  switch (role) {
    case TensorRole::kFeedForward:
      return WeightFormat::kQ4_0;
    case TensorRole::kAttention:
    case TensorRole::kEmbedding:
    case TensorRole::kOutput:
    case TensorRole::kOther:
      return WeightFormat::kQ8_0;
  }
  return WeightFormat::kQ8_0;
}

}  // namespace am::kernels
