#include "kernels/models/format_plan.h"

namespace am::kernels {

FormatPlan format_plan_for(Precision precision) {
  FormatPlan p;
  p.attention = jobs::format_for_role(precision, TensorRole::kAttention);
  p.feed_forward = jobs::format_for_role(precision, TensorRole::kFeedForward);
  p.embedding = jobs::format_for_role(precision, TensorRole::kEmbedding);
  p.output = jobs::format_for_role(precision, TensorRole::kOutput);
  p.other = jobs::format_for_role(precision, TensorRole::kOther);
  return p;
}

}  // namespace am::kernels
