// Tests name precisions and formats as plans and reports spell them ("q4_0"); these turn a name
// into the enum through the one table (jobs/precision.h), failing the test on a name it lacks.
#pragma once

#include <gtest/gtest.h>

#include <optional>
#include <string_view>

#include "common/status.h"
#include "jobs/precision.h"
#include "kernels/models/format_plan.h"
#include "kernels/tolerances.h"

namespace am::kernels {

inline Precision precision_named(std::string_view name) {
  const std::optional<Precision> p = jobs::parse_precision(name);
  EXPECT_TRUE(p.has_value()) << "no precision named '" << name << "'";
  return p.value_or(Precision::kF32);
}

inline WeightFormat format_named(std::string_view name) {
  const std::optional<WeightFormat> f = jobs::parse_weight_format(name);
  EXPECT_TRUE(f.has_value()) << "no weight format named '" << name << "'";
  return f.value_or(WeightFormat::kF32);
}

inline Result<FormatPlan> plan_named(std::string_view precision) {
  return format_plan_for(precision_named(precision));
}

inline std::optional<Tolerance> tolerance_named(std::string_view precision) {
  const std::optional<Precision> p = jobs::parse_precision(precision);
  if (!p) return std::nullopt;
  return tolerance_for(*p);
}

}  // namespace am::kernels
