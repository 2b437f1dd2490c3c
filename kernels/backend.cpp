#include "kernels/backend.h"

#include <string>

#include "common/check.h"

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
    case Op::kRope: return "rope";
    case Op::kConv1d: return "conv1d";
    case Op::kTopK: return "top_k";
    case Op::kIndexRows: return "index_rows";
    case Op::kScatterAddRows: return "scatter_add_rows";
    case Op::kAttentionBias: return "attention_bias";
    case Op::kConv2d: return "conv2d";
    case Op::kGroupNorm: return "group_norm";
    case Op::kPool2d: return "pool2d";
    case Op::kGlobalAvgPool: return "global_avg_pool";
    case Op::kSelectiveScan: return "selective_scan";
    case Op::kTimeMix: return "time_mix";
    case Op::kMatmulNt: return "matmul_nt";
    case Op::kFmaChain: return "fma_chain";
  }
  // The name lands in stored `unsupported` reasons; a value outside the enum is corruption.
  AM_UNREACHABLE("Op value outside its enum");
}

Status unsupported_op_on(std::string_view backend, Op op, std::string_view detail) {
  std::string what = "op " + std::string(op_name(op));
  if (!detail.empty()) what += " (" + std::string(detail) + ")";
  return unsupported(what + " not implemented on backend " + std::string(backend));
}

std::vector<Precision> supported_precisions(const std::function<Status(Op, WeightFormat)>& supports) {
  std::vector<Precision> out;
  for (const jobs::PrecisionInfo& p : jobs::all_precisions()) {
    bool all = true;
    for (WeightFormat f : jobs::formats_of(p.precision)) all = all && supports(Op::kLinear, f).ok();
    if (all) out.push_back(p.precision);
  }
  return out;
}

Status Backend::unsupported_op(Op op, std::string_view detail) const {
  return unsupported_op_on(name(), op, detail);
}

Status Backend::supports(Op op, WeightFormat) const { return unsupported_op(op); }

Tensor Backend::tensor(Shape shape) { return Tensor(shape); }
Status Backend::to_host(ConstTensorView) { return Status::Ok(); }
Status Backend::from_host(ConstTensorView) { return Status::Ok(); }
TransferCounts Backend::transfers() const { return {}; }

TransferCounts TransferCounts::operator-(const TransferCounts& o) const {
  TransferCounts d;
  d.weight_uploads = weight_uploads - o.weight_uploads;
  d.weight_upload_bytes = weight_upload_bytes - o.weight_upload_bytes;
  d.tensor_uploads = tensor_uploads - o.tensor_uploads;
  d.tensor_upload_bytes = tensor_upload_bytes - o.tensor_upload_bytes;
  d.tensor_downloads = tensor_downloads - o.tensor_downloads;
  d.tensor_download_bytes = tensor_download_bytes - o.tensor_download_bytes;
  d.plain_uploads = plain_uploads - o.plain_uploads;
  d.plain_upload_bytes = plain_upload_bytes - o.plain_upload_bytes;
  d.plain_downloads = plain_downloads - o.plain_downloads;
  d.plain_download_bytes = plain_download_bytes - o.plain_download_bytes;
  d.index_uploads = index_uploads - o.index_uploads;
  d.index_upload_bytes = index_upload_bytes - o.index_upload_bytes;
  d.device_copies = device_copies - o.device_copies;
  return d;
}

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
Status Backend::rope(TensorView, const int32_t*, const RopeParams&) { return unsupported_op(Op::kRope); }
Status Backend::conv1d(const Conv1dArgs&) { return unsupported_op(Op::kConv1d); }
Status Backend::top_k(ConstTensorView, int64_t, bool, int32_t*, float*) { return unsupported_op(Op::kTopK); }
Status Backend::index_rows(ConstTensorView, const int32_t*, int64_t, TensorView) {
  return unsupported_op(Op::kIndexRows);
}
Status Backend::scatter_add_rows(ConstTensorView, const int32_t*, const float*, int64_t, TensorView) {
  return unsupported_op(Op::kScatterAddRows);
}
Status Backend::attention_bias(const AttentionArgs&, ConstTensorView) { return unsupported_op(Op::kAttentionBias); }
Status Backend::conv2d(const Conv2dArgs&) { return unsupported_op(Op::kConv2d); }
Status Backend::group_norm(ConstTensorView, int64_t, int64_t, const float*, const float*, float, TensorView) {
  return unsupported_op(Op::kGroupNorm);
}
Status Backend::pool2d(const Pool2dArgs&) { return unsupported_op(Op::kPool2d); }
Status Backend::global_avg_pool(ConstTensorView, int64_t, TensorView) { return unsupported_op(Op::kGlobalAvgPool); }
Status Backend::selective_scan(const SelectiveScanArgs&) { return unsupported_op(Op::kSelectiveScan); }
Status Backend::time_mix(const TimeMixArgs&) { return unsupported_op(Op::kTimeMix); }
Status Backend::matmul_nt(ConstTensorView, ConstTensorView, float, TensorView) { return unsupported_op(Op::kMatmulNt); }
Status Backend::fma_chain(int32_t, TensorView) { return unsupported_op(Op::kFmaChain); }
Status Backend::synchronize() { return Status::Ok(); }

std::vector<DeviceKernelTime> Backend::take_device_profile() { return {}; }

}  // namespace am::kernels
