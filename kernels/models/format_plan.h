// Weight formats per tensor role at one precision: how a graph builder turns a job's precision
// into the format of each linear layer. For a single-format precision every role gets that
// format; "mixed" is the per-role policy of jobs::format_for_role (attention and
// embeddings 8-bit, feed-forward 4-bit).
#pragma once

#include <string_view>

#include "common/status.h"
#include "kernels/formats/weight_format.h"

namespace am::kernels {

struct FormatPlan {
  FormatPlan() = default;
  // A single format is the plan that uses it for every role.
  FormatPlan(WeightFormat f)  // NOLINT(google-explicit-constructor): uniform plans read naturally
      : attention(f), feed_forward(f), embedding(f), output(f), other(f) {}

  WeightFormat attention = WeightFormat::kF32;
  WeightFormat feed_forward = WeightFormat::kF32;
  WeightFormat embedding = WeightFormat::kF32;
  WeightFormat output = WeightFormat::kF32;
  WeightFormat other = WeightFormat::kF32;
};

FormatPlan format_plan_for(Precision precision);


}  // namespace am::kernels
