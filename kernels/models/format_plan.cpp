#include "kernels/models/format_plan.h"

namespace am::kernels {

Result<FormatPlan> format_plan_for(std::string_view precision) {
  FormatPlan p;
  AM_ASSIGN_OR_RETURN(p.attention, weight_format_for_role(precision, TensorRole::kAttention, "cpu"));
  AM_ASSIGN_OR_RETURN(p.feed_forward, weight_format_for_role(precision, TensorRole::kFeedForward, "cpu"));
  AM_ASSIGN_OR_RETURN(p.embedding, weight_format_for_role(precision, TensorRole::kEmbedding, "cpu"));
  AM_ASSIGN_OR_RETURN(p.output, weight_format_for_role(precision, TensorRole::kOutput, "cpu"));
  AM_ASSIGN_OR_RETURN(p.other, weight_format_for_role(precision, TensorRole::kOther, "cpu"));
  return p;
}

}  // namespace am::kernels
