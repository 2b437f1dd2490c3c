#include "kernels/cpu/attention_bias.h"
#include "kernels/cpu/cpu_backend.h"

namespace am::kernels {

Status CpuBackend::attention_bias(const AttentionArgs& args, ConstTensorView bias) {
  AM_RETURN_IF_ERROR(validate_attention_bias(args, bias));
  attention_with_bias(args, bias, context());
  return Status::Ok();
}

}  // namespace am::kernels
