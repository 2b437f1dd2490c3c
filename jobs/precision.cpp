#include "jobs/precision.h"

#include <array>
#include <ostream>

#include "common/check.h"

namespace am::jobs {
namespace {

// Geometry of every storage format; the block formats' sizes are GGUF's (docs/FORMATS.md).
constexpr std::array<WeightFormatInfo, 8> kFormats = {{
    {WeightFormat::kF32, "f32", FormatKind::kFloat, 1, 4},
    {WeightFormat::kQ8_0, "q8_0", FormatKind::kBlockQuantized, 32, 34},
    {WeightFormat::kF16, "f16", FormatKind::kFloat, 1, 2},
    {WeightFormat::kBF16, "bf16", FormatKind::kFloat, 1, 2},
    {WeightFormat::kQ4_0, "q4_0", FormatKind::kBlockQuantized, 32, 18},
    {WeightFormat::kQ4_1, "q4_1", FormatKind::kBlockQuantized, 32, 20},
    {WeightFormat::kQ2_K, "q2_k", FormatKind::kBlockQuantized, 256, 84},
    {WeightFormat::kQ3_K, "q3_k", FormatKind::kBlockQuantized, 256, 110},
}};

// Canonical (report) order.
constexpr std::array<PrecisionInfo, 9> kPrecisions = {{
    {Precision::kF32, "f32", FormatKind::kFloat, WeightFormat::kF32, "32-bit"},
    {Precision::kF16, "f16", FormatKind::kFloat, WeightFormat::kF16, "16-bit"},
    {Precision::kBF16, "bf16", FormatKind::kFloat, WeightFormat::kBF16, "16-bit"},
    {Precision::kQ8_0, "q8_0", FormatKind::kBlockQuantized, WeightFormat::kQ8_0, "8-bit"},
    {Precision::kQ4_0, "q4_0", FormatKind::kBlockQuantized, WeightFormat::kQ4_0, "4-bit"},
    {Precision::kQ4_1, "q4_1", FormatKind::kBlockQuantized, WeightFormat::kQ4_1, "4-bit"},
    {Precision::kQ3_K, "q3_k", FormatKind::kBlockQuantized, WeightFormat::kQ3_K, "3-bit"},
    {Precision::kQ2_K, "q2_k", FormatKind::kBlockQuantized, WeightFormat::kQ2_K, "2-bit"},
    {Precision::kMixed, "mixed", FormatKind::kPolicy, std::nullopt, "4-bit mixed"},
}};

// Outside the table on purpose: see Precision::kExternal. Its "format" stands for nothing; the
// memory estimate and the kernels never see a command job.
constexpr PrecisionInfo kExternalInfo = {Precision::kExternal, "external", FormatKind::kPolicy,
                                         std::nullopt, "external"};

constexpr std::array<TensorRole, 5> kRoles = {TensorRole::kAttention, TensorRole::kFeedForward,
                                              TensorRole::kEmbedding, TensorRole::kOutput,
                                              TensorRole::kOther};

}  // namespace

std::span<const PrecisionInfo> all_precisions() { return kPrecisions; }
std::span<const WeightFormatInfo> all_weight_formats() { return kFormats; }
std::span<const TensorRole> all_tensor_roles() { return kRoles; }

const PrecisionInfo& precision_info(Precision p) {
  if (p == Precision::kExternal) return kExternalInfo;
  for (const PrecisionInfo& i : kPrecisions) {
    if (i.precision == p) return i;
  }
  AM_CHECK(false, "precision enum value outside the table");
  return kPrecisions[0];
}

const WeightFormatInfo& weight_format_info(WeightFormat f) {
  for (const WeightFormatInfo& i : kFormats) {
    if (i.format == f) return i;
  }
  AM_CHECK(false, "weight format enum value outside the table");
  return kFormats[0];
}

std::string_view to_string(Precision p) { return precision_info(p).name; }
std::string_view to_string(WeightFormat f) { return weight_format_info(f).name; }

std::string_view to_string(TensorRole role) {
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

std::optional<Precision> parse_precision(std::string_view name) {
  for (const PrecisionInfo& i : kPrecisions) {
    if (i.name == name) return i.precision;
  }
  return std::nullopt;
}

std::optional<Precision> parse_precision_label(std::string_view name) {
  if (name == kExternalInfo.name) return Precision::kExternal;
  return parse_precision(name);
}

std::optional<WeightFormat> parse_weight_format(std::string_view name) {
  for (const WeightFormatInfo& i : kFormats) {
    if (i.name == name) return i.format;
  }
  return std::nullopt;
}

Precision precision_of(WeightFormat f) {
  for (const PrecisionInfo& i : kPrecisions) {
    if (i.format == f) return i.precision;
  }
  AM_CHECK(false, "weight format without a precision");
  return Precision::kF32;
}

WeightFormat format_for_role(Precision p, TensorRole role) {
  const PrecisionInfo& info = precision_info(p);
  if (info.format) return *info.format;
  // The "4-bit mixed" recipe: the feed-forward matrices hold most of a transformer's weights and
  // tolerate 4 bits; attention projections, embeddings and the output head are more sensitive
  // (their errors reach every token or the logits directly) and keep 8 bits.
  return role == TensorRole::kFeedForward ? WeightFormat::kQ4_0 : WeightFormat::kQ8_0;
}

std::vector<WeightFormat> formats_of(Precision p) {
  std::vector<WeightFormat> out;
  for (TensorRole r : kRoles) {
    const WeightFormat f = format_for_role(p, r);
    bool seen = false;
    for (WeightFormat g : out) seen = seen || g == f;
    if (!seen) out.push_back(f);
  }
  return out;
}

double bits_per_weight(WeightFormat f) {
  const WeightFormatInfo& i = weight_format_info(f);
  return static_cast<double>(i.block_bytes) * 8.0 / static_cast<double>(i.block_size);
}

std::size_t row_bytes(WeightFormat f, int64_t k) {
  const WeightFormatInfo& i = weight_format_info(f);
  const int64_t blocks = (k + i.block_size - 1) / i.block_size;
  return static_cast<std::size_t>(blocks) * i.block_bytes;
}

std::string precision_names() {
  std::string out;
  for (const PrecisionInfo& i : kPrecisions) {
    if (!out.empty()) out += ", ";
    out += i.name;
  }
  return out;
}

std::ostream& operator<<(std::ostream& out, Precision p) { return out << to_string(p); }
std::ostream& operator<<(std::ostream& out, WeightFormat f) { return out << to_string(f); }

}  // namespace am::jobs
