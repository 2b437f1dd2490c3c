#include "kernels/backend.h"

#include <string>

namespace am::kernels {

std::string_view op_name(Op op) {
  switch (op) {
    case Op::kLinear: return "linear";
    case Op::kGatherRows: return "gather_rows";
    case Op::kLayerNorm: return "layer_norm";
    case Op::kRmsNorm: return "rms_norm";
    case Op::kActivation: return "activation";
    case Op::kAdd: return "add";
    case Op::kMul: return "mul";
    case Op::kSoftmax: return "softmax";
    case Op::kAttention: return "attention";
  }
  return "unknown";
}

Status Backend::unsupported_op(Op op, std::string_view detail) const {
  std::string what = "op " + std::string(op_name(op));
  if (!detail.empty()) what += " (" + std::string(detail) + ")";
  return unsupported(what + " not implemented on backend " + std::string(name()));
}

Status Backend::supports(Op op, WeightFormat) const { return unsupported_op(op); }

Status Backend::linear(const Linear&, ConstTensorView, TensorView) { return unsupported_op(Op::kLinear); }
Status Backend::gather_rows(ConstTensorView, const int32_t*, int64_t, TensorView, bool) {
  return unsupported_op(Op::kGatherRows);
}
Status Backend::layer_norm(ConstTensorView, const float*, const float*, float, TensorView) {
  return unsupported_op(Op::kLayerNorm);
}
Status Backend::rms_norm(ConstTensorView, const float*, float, TensorView) {
  return unsupported_op(Op::kRmsNorm);
}
Status Backend::activation(Activation, TensorView) { return unsupported_op(Op::kActivation); }
Status Backend::add(TensorView, ConstTensorView) { return unsupported_op(Op::kAdd); }
Status Backend::mul(TensorView, ConstTensorView) { return unsupported_op(Op::kMul); }
Status Backend::softmax(TensorView) { return unsupported_op(Op::kSoftmax); }
Status Backend::attention(const AttentionArgs&) { return unsupported_op(Op::kAttention); }

}  // namespace am::kernels
