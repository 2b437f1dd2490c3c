// The storage formats the cpu backend implements for linear-layer weights, and how job precision
// names map onto them.
//
// Contract: weight_format_for_precision() returns the format for a precision name the cpu
// backend implements (f32, q8_0) and an Unsupported status naming the precision and backend for
// every other name, e.g. "precision q4_0 not implemented on backend cpu". Pure, thread-safe.
#pragma once

#include <string_view>

#include "common/status.h"

namespace am::kernels {

enum class WeightFormat { kF32, kQ8_0 };

std::string_view weight_format_name(WeightFormat format);  // "f32", "q8_0"
Result<WeightFormat> weight_format_for_precision(std::string_view precision,
                                                 std::string_view backend);

}  // namespace am::kernels
