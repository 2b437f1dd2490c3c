#include "kernels/formats/weight_format.h"

#include <array>
#include <string>

namespace am::kernels {
namespace {

constexpr std::array<WeightFormat, 8> kAllFormats = {
    WeightFormat::kF32,  WeightFormat::kQ8_0, WeightFormat::kF16,  WeightFormat::kBF16,
    WeightFormat::kQ4_0, WeightFormat::kQ4_1, WeightFormat::kQ2_K, WeightFormat::kQ3_K};

}  // namespace

std::span<const WeightFormat> all_weight_formats() {
  static_assert(kAllFormats.size() == 8, "one entry per jobs::WeightFormat");
  return kAllFormats;
}

Result<WeightFormat> single_format(Precision precision) {
  const jobs::PrecisionInfo& info = jobs::precision_info(precision);
  if (info.format) return *info.format;
  return invalid_argument("precision " + std::string(info.name) +
                          " is a policy over tensor roles, not one weight format: ask "
                          "jobs::format_for_role() for each tensor");
}

}  // namespace am::kernels
