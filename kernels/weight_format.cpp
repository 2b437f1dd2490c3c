#include "kernels/weight_format.h"

#include <string>

namespace am::kernels {

std::string_view weight_format_name(WeightFormat format) {
  switch (format) {
    case WeightFormat::kF32:
      return "f32";
    case WeightFormat::kQ8_0:
      return "q8_0";
  }
  return "unknown";
}

Result<WeightFormat> weight_format_for_precision(std::string_view precision,
                                                 std::string_view backend) {
  for (WeightFormat f : {WeightFormat::kF32, WeightFormat::kQ8_0}) {
    if (weight_format_name(f) == precision) return f;
  }
  return unsupported("precision " + std::string(precision) + " not implemented on backend " +
                     std::string(backend));
}

}  // namespace am::kernels
