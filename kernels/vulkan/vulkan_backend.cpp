#include "kernels/vulkan/vulkan_backend.h"

#include <string>
#include <utility>

#include "kernels/cpu/attention_bias.h"
#include "kernels/vulkan/backend_impl.h"

namespace am::kernels {

using namespace vulkan_detail;

VulkanBackend::VulkanBackend(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
VulkanBackend::~VulkanBackend() = default;

Result<std::unique_ptr<VulkanBackend>> VulkanBackend::create(const vulkan::VulkanDeviceInfo& device,
                                                             const vulkan::VulkanDeviceOptions& options) {
  AM_ASSIGN_OR_RETURN(std::unique_ptr<vulkan::VulkanDevice> dev, vulkan::VulkanDevice::create(device, options));
  // Every GPU has them; Vulkan guarantees only 128.
  if (device.max_workgroup_invocations < kMinWorkgroupInvocations) {
    return unsupported("Vulkan device " + device.name + " allows only " +
                       std::to_string(device.max_workgroup_invocations) + " invocations per work-group (" +
                       std::to_string(kMinWorkgroupInvocations) + " needed)");
  }
  return std::unique_ptr<VulkanBackend>(new VulkanBackend(std::make_unique<Impl>(std::move(dev))));
}

const vulkan::VulkanDeviceInfo& VulkanBackend::device() const { return impl_->dev->info(); }

std::string VulkanBackend::device_name() const {
  const vulkan::VulkanDeviceInfo& d = impl_->dev->info();
  return d.name + " (" + d.driver + ")";
}

void VulkanBackend::release_cached_weights() {
  // The cached buffers are freed next; submitted work may still read them.
  if (Status s = impl_->dev->wait_idle(); !s.ok()) get_logger("kernels/vulkan")->warn("{}", s.message());
  impl_->linears.clear();
  impl_->vectors.clear();
  impl_->convs.clear();
}

std::size_t VulkanBackend::cached_weight_bytes() const {
  std::size_t total = 0;
  for (const auto& [key, l] : impl_->linears) total += l.weight.bytes;
  for (const auto& [key, v] : impl_->vectors) total += v.bytes;
  for (const auto& [key, c] : impl_->convs) total += c.weight.bytes;
  return total;
}

Tensor VulkanBackend::tensor(Shape shape) { return Impl::Resident::make_tensor(impl_->resident, shape); }

Status VulkanBackend::to_host(ConstTensorView v) {
  Impl& im = *impl_;
  return im.resident->to_host(v.data, float_bytes(v.numel()), im.counts, [&](Impl::Entry& e) -> Status {
    AM_RETURN_IF_ERROR(im.dev->download(e.buffer, const_cast<float*>(e.data), e.bytes));
    im.idle();  // the download waited for everything recorded
    return Status::Ok();
  });
}

Status VulkanBackend::from_host(ConstTensorView v) {
  Impl& im = *impl_;
  return im.resident->from_host(v.data, float_bytes(v.numel()), im.counts,
                                [&](Impl::Entry& e, const void* p, std::size_t bytes, std::size_t offset) {
                                  return im.dev->upload(e.buffer, p, bytes, offset);
                                });
}

TransferCounts VulkanBackend::transfers() const { return impl_->counts; }

Status VulkanBackend::synchronize() {
  Impl& im = *impl_;
  AM_RETURN_IF_ERROR(im.dev->submit());  // runs what is recorded and waits for it
  im.idle();
  return Status::Ok();
}

std::vector<DeviceKernelTime> VulkanBackend::take_device_profile() { return impl_->dev->take_profile(); }

Status VulkanBackend::supports(Op op, WeightFormat format) const {
  return supports_on({device().name}, op, format);
}

Status VulkanBackend::supports_on(const VulkanTraits& device, Op op, WeightFormat format) {
  switch (op) {
    case Op::kGatherRows:
    case Op::kLayerNorm:
    case Op::kRmsNorm:
    case Op::kActivation:
    case Op::kAdd:
    case Op::kMul:
    case Op::kSoftmax:
    case Op::kAttention:
    case Op::kAttentionBias:
    case Op::kRope:
    case Op::kIndexRows:
    case Op::kScatterAddRows:
    case Op::kTopK:
    case Op::kMatmulNt:
    case Op::kGlobalAvgPool:
    case Op::kConv1d:
    case Op::kConv2d:
    case Op::kGroupNorm:
    case Op::kPool2d:
    case Op::kSelectiveScan:
    case Op::kTimeMix:
    case Op::kFmaChain:
      return Status::Ok();
    case Op::kLinear:
      break;
    default:
      // Ops added to the seam after this backend was written inherit the base class's answer.
      return unsupported_op_on(kName, op);
  }
  if (!vulkan::weight_kind_for(format)) {
    return unsupported_op_on(kName, op, std::string(weight_format_name(format)) + " weights");
  }
  return Status::Ok();
}

Status VulkanBackend::linear(const Linear& layer, ConstTensorView x, TensorView y) {
  if (x.cols() != layer.in_features() || y.cols() != layer.out_features() || x.rows() != y.rows()) {
    return invalid_argument("linear: x is " + std::to_string(x.rows()) + "x" + std::to_string(x.cols()) +
                            ", y is " + std::to_string(y.rows()) + "x" + std::to_string(y.cols()) +
                            ", layer is " + std::to_string(layer.in_features()) + "->" +
                            std::to_string(layer.out_features()));
  }
  AM_RETURN_IF_ERROR(supports(Op::kLinear, layer.format()));
  const WeightKind kind = *vulkan::weight_kind_for(layer.format());
  const int64_t m = x.rows();
  const int64_t n = layer.out_features();
  const int64_t k = layer.in_features();
  if (m == 0 || n == 0) return Status::Ok();
  Impl& im = *impl_;
  AM_ASSIGN_OR_RETURN(const DeviceLinear* w, im.weight_linear(layer, kind));
  AM_ASSIGN_OR_RETURN(const Buffer* xb, im.input(Slot::kInput, x.data, float_bytes(m * k)));
  AM_ASSIGN_OR_RETURN(Impl::Out yo, im.output(Slot::kOutput, y.data, float_bytes(m * n), false));
  AM_RETURN_IF_ERROR(im.ops.linear(*w, *xb, m, *yo.buffer));
  return im.finish(yo);
}

Status VulkanBackend::gather_rows(ConstTensorView table, const int32_t* ids, int64_t n, TensorView y,
                                  bool accumulate) {
  if (y.rows() != n || y.cols() != table.cols()) {
    return invalid_argument("gather_rows: output must be [n, table cols]");
  }
  for (int64_t i = 0; i < n; ++i) {
    if (ids[i] < 0 || ids[i] >= table.rows()) {
      return invalid_argument("gather_rows: id " + std::to_string(ids[i]) + " at " + std::to_string(i) +
                              " is outside [0, " + std::to_string(table.rows()) + ")");
    }
  }
  const int64_t cols = table.cols();
  if (n == 0 || cols == 0) return Status::Ok();
  Impl& im = *impl_;
  AM_ASSIGN_OR_RETURN(const Buffer* tb, im.weight_vector(table.data, table.numel()));
  AM_ASSIGN_OR_RETURN(const Buffer* ib, im.host_input(Slot::kIndices, ids, static_cast<std::size_t>(n) * sizeof(int32_t)));
  AM_ASSIGN_OR_RETURN(Impl::Out yo, im.output(Slot::kOutput, y.data, float_bytes(n * cols), accumulate));
  AM_RETURN_IF_ERROR(im.ops.gather_rows(*tb, *ib, n, cols, accumulate, *yo.buffer));
  return im.finish(yo);
}

Status VulkanBackend::layer_norm(ConstTensorView x, const float* gamma, const float* beta, float eps,
                                 TensorView y) {
  AM_RETURN_IF_ERROR(same_shape("layer_norm", x, y));
  const int64_t rows = x.rows();
  const int64_t cols = x.cols();
  if (rows == 0 || cols == 0) return Status::Ok();
  Impl& im = *impl_;
  AM_ASSIGN_OR_RETURN(const Buffer* gb, im.weight_vector(gamma, cols));
  const Buffer* bb = nullptr;
  if (beta != nullptr) {
    AM_ASSIGN_OR_RETURN(bb, im.weight_vector(beta, cols));
  }
  AM_ASSIGN_OR_RETURN(const Buffer* xb, im.input(Slot::kInput, x.data, float_bytes(rows * cols)));
  AM_ASSIGN_OR_RETURN(Impl::Out yo, im.output(Slot::kOutput, y.data, float_bytes(rows * cols), false));
  AM_RETURN_IF_ERROR(im.ops.layer_norm(*xb, *gb, bb, eps, rows, cols, *yo.buffer));
  return im.finish(yo);
}

Status VulkanBackend::rms_norm(ConstTensorView x, const float* gamma, float eps, TensorView y) {
  AM_RETURN_IF_ERROR(same_shape("rms_norm", x, y));
  const int64_t rows = x.rows();
  const int64_t cols = x.cols();
  if (rows == 0 || cols == 0) return Status::Ok();
  Impl& im = *impl_;
  AM_ASSIGN_OR_RETURN(const Buffer* gb, im.weight_vector(gamma, cols));
  AM_ASSIGN_OR_RETURN(const Buffer* xb, im.input(Slot::kInput, x.data, float_bytes(rows * cols)));
  AM_ASSIGN_OR_RETURN(Impl::Out yo, im.output(Slot::kOutput, y.data, float_bytes(rows * cols), false));
  AM_RETURN_IF_ERROR(im.ops.rms_norm(*xb, *gb, eps, rows, cols, *yo.buffer));
  return im.finish(yo);
}

Status VulkanBackend::activation(Activation act, TensorView x) {
  const int code = activation_code(act);
  if (code < 0) return unsupported_op(Op::kActivation, activation_name(act));
  const int64_t n = x.numel();
  if (n == 0) return Status::Ok();
  Impl& im = *impl_;
  AM_ASSIGN_OR_RETURN(Impl::Out o, im.output(Slot::kOutput, x.data, float_bytes(n), true));
  AM_RETURN_IF_ERROR(im.ops.activation(*o.buffer, n, static_cast<uint32_t>(code)));
  return im.finish(o);
}

Status VulkanBackend::add(TensorView y, ConstTensorView a) { return impl_->elementwise(0, "add", y, a); }
Status VulkanBackend::mul(TensorView y, ConstTensorView a) { return impl_->elementwise(1, "mul", y, a); }

Status VulkanBackend::softmax(TensorView x) {
  const int64_t rows = x.rows();
  const int64_t cols = x.cols();
  if (rows == 0 || cols == 0) return Status::Ok();
  Impl& im = *impl_;
  AM_ASSIGN_OR_RETURN(Impl::Out o, im.output(Slot::kOutput, x.data, float_bytes(rows * cols), true));
  AM_RETURN_IF_ERROR(im.ops.softmax(*o.buffer, rows, cols));
  return im.finish(o);
}

Status VulkanBackend::attention(const AttentionArgs& args) {
  AM_RETURN_IF_ERROR(validate_attention_args(args));
  return impl_->attention(args, nullptr);
}

Status VulkanBackend::attention_bias(const AttentionArgs& args, ConstTensorView bias) {
  AM_RETURN_IF_ERROR(validate_attention_bias(args, bias));
  return impl_->attention(args, bias.data);
}

Result<std::unique_ptr<Backend>> make_vulkan_backend() {
  AM_ASSIGN_OR_RETURN(vulkan::VulkanDeviceInfo device, vulkan::select_vulkan_device());
  AM_ASSIGN_OR_RETURN(std::unique_ptr<VulkanBackend> backend, VulkanBackend::create(device));
  return std::unique_ptr<Backend>(std::move(backend));
}

}  // namespace am::kernels
