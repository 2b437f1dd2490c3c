// VulkanBackend: conv1d, conv2d, group_norm, pool2d, selective_scan and time_mix, each one
// DeviceOps shader (vk_ops_spatial.cpp) between Impl::input/output/finish. Convolution
// weights are rearranged once and cached by address (Impl::conv_weight); biases, A, time_decay
// and time_first are cached weight vectors; a recurrent op's carried state is read and written
// in place (resident when the graph made it with tensor()).
#include <vector>

#include "kernels/cpu/conv1d.h"
#include "kernels/cpu/conv2d.h"
#include "kernels/cpu/group_norm.h"
#include "kernels/cpu/pool2d.h"
#include "kernels/cpu/selective_scan.h"
#include "kernels/cpu/time_mix.h"
#include "kernels/vulkan/backend_impl.h"

namespace am::kernels {

Status VulkanBackend::conv1d(const Conv1dArgs& a) {
  AM_RETURN_IF_ERROR(validate_conv1d(a));
  const int64_t out_len = conv1d_out_len(a);
  const int64_t cin_g = a.in_channels / a.groups;
  Impl& im = *impl_;
  AM_ASSIGN_OR_RETURN(const Buffer* wb, im.conv_weight(a.weight, a.out_channels, cin_g, a.kernel));
  const Buffer* bb = nullptr;
  if (a.bias != nullptr) {
    AM_ASSIGN_OR_RETURN(bb, im.weight_vector(a.bias, a.out_channels));
  }
  const std::size_t y_bytes = float_bytes(a.y.numel());
  AM_ASSIGN_OR_RETURN(const Buffer* xb, im.input(Slot::kInput, a.x.data, float_bytes(a.x.numel())));
  AM_ASSIGN_OR_RETURN(Impl::Out yo, im.output(Slot::kOutput, a.y.data, y_bytes, false));
  const vulkan::DeviceOps::Conv1dShape shape{a.batch,        a.in_len, out_len,    a.in_channels, a.out_channels,
                                             a.kernel,       a.stride, a.dilation, a.pad_left,    a.groups};
  AM_RETURN_IF_ERROR(im.ops.conv1d(shape, *xb, *wb, bb, *yo.buffer));
  return im.finish(yo);
}

Status VulkanBackend::conv2d(const Conv2dArgs& a) {
  AM_RETURN_IF_ERROR(validate_conv2d_args(a));
  const int64_t oh = conv_out_size(a.height, a.kernel_h, a.stride, a.padding);
  const int64_t ow = conv_out_size(a.width, a.kernel_w, a.stride, a.padding);
  const int64_t cin_g = a.in_channels / a.groups;
  Impl& im = *impl_;
  AM_ASSIGN_OR_RETURN(const Buffer* wb, im.conv_weight(a.weight, a.out_channels, cin_g, a.kernel_h * a.kernel_w));
  const Buffer* bb = nullptr;
  if (a.bias != nullptr) {
    AM_ASSIGN_OR_RETURN(bb, im.weight_vector(a.bias, a.out_channels));
  }
  const std::size_t y_bytes = float_bytes(a.y.numel());
  AM_ASSIGN_OR_RETURN(const Buffer* xb, im.input(Slot::kInput, a.x.data, float_bytes(a.x.numel())));
  AM_ASSIGN_OR_RETURN(Impl::Out yo, im.output(Slot::kOutput, a.y.data, y_bytes, false));
  const vulkan::DeviceOps::Conv2dShape shape{a.batch,        a.height,   a.width,    oh,       ow,
                                             a.in_channels,  a.out_channels, a.kernel_h, a.kernel_w, a.stride,
                                             a.padding,      a.groups};
  AM_RETURN_IF_ERROR(im.ops.conv2d(shape, *xb, *wb, bb, *yo.buffer));
  return im.finish(yo);
}

Status VulkanBackend::group_norm(ConstTensorView x, int64_t batch, int64_t groups, const float* gamma,
                                 const float* beta, float eps, TensorView y) {
  AM_RETURN_IF_ERROR(validate_group_norm_args(x, batch, groups, y));
  if (gamma == nullptr) return invalid_argument("group_norm: gamma is null");
  const int64_t channels = x.cols();
  Impl& im = *impl_;
  AM_ASSIGN_OR_RETURN(const Buffer* gb, im.weight_vector(gamma, channels));
  const Buffer* bb = nullptr;
  if (beta != nullptr) {
    AM_ASSIGN_OR_RETURN(bb, im.weight_vector(beta, channels));
  }
  const std::size_t bytes = float_bytes(x.numel());
  AM_ASSIGN_OR_RETURN(const Buffer* xb, im.input(Slot::kInput, x.data, bytes));
  AM_ASSIGN_OR_RETURN(Impl::Out yo, im.output(Slot::kOutput, y.data, bytes, false));
  AM_RETURN_IF_ERROR(im.ops.group_norm(*xb, *gb, bb, eps, batch, x.rows() / batch, channels, groups, *yo.buffer));
  return im.finish(yo);
}

Status VulkanBackend::pool2d(const Pool2dArgs& a) {
  AM_RETURN_IF_ERROR(validate_pool2d_args(a));
  const vulkan::DeviceOps::Pool2dShape shape{a.batch,
                                             a.height,
                                             a.width,
                                             conv_out_size(a.height, a.kernel, a.stride, a.padding),
                                             conv_out_size(a.width, a.kernel, a.stride, a.padding),
                                             a.x.cols(),
                                             a.kernel,
                                             a.stride,
                                             a.padding,
                                             a.kind == PoolKind::kMax};
  Impl& im = *impl_;
  const std::size_t y_bytes = float_bytes(a.y.numel());
  AM_ASSIGN_OR_RETURN(const Buffer* xb, im.input(Slot::kInput, a.x.data, float_bytes(a.x.numel())));
  AM_ASSIGN_OR_RETURN(Impl::Out yo, im.output(Slot::kOutput, a.y.data, y_bytes, false));
  AM_RETURN_IF_ERROR(im.ops.pool2d(shape, *xb, *yo.buffer));
  return im.finish(yo);
}

Status VulkanBackend::selective_scan(const SelectiveScanArgs& a) {
  AM_RETURN_IF_ERROR(validate_selective_scan_args(a));
  Impl& im = *impl_;
  AM_ASSIGN_OR_RETURN(const Buffer* ab, im.weight_vector(a.A, a.channels * a.state_size));
  // D and delta_bias travel with the call (selective_scan.h does not promise they are weights).
  const Buffer* pb = nullptr;
  if (a.D != nullptr || a.delta_bias != nullptr) {
    std::vector<float> params(static_cast<std::size_t>(2 * a.channels), 0.0f);
    for (int64_t d = 0; d < a.channels; ++d) {
      if (a.D != nullptr) params[static_cast<std::size_t>(d)] = a.D[d];
      if (a.delta_bias != nullptr) params[static_cast<std::size_t>(a.channels + d)] = a.delta_bias[d];
    }
    AM_ASSIGN_OR_RETURN(pb, im.host_input(Slot::kParams, params.data(), float_bytes(2 * a.channels)));
  }
  const std::size_t state_bytes = float_bytes(a.batch * a.channels * a.state_size);
  const std::size_t act_bytes = float_bytes(a.u.numel());
  const std::size_t bc_bytes = float_bytes(a.B.numel());
  AM_ASSIGN_OR_RETURN(const Buffer* ub, im.input(Slot::kInput, a.u.data, act_bytes));
  AM_ASSIGN_OR_RETURN(const Buffer* db, im.input(Slot::kOperand, a.delta.data, act_bytes));
  AM_ASSIGN_OR_RETURN(const Buffer* bmb, im.input(Slot::kKeys, a.B.data, bc_bytes));
  AM_ASSIGN_OR_RETURN(const Buffer* cmb, im.input(Slot::kValues, a.C.data, bc_bytes));
  Impl::Out so;
  if (a.state != nullptr) {
    AM_ASSIGN_OR_RETURN(so, im.output(Slot::kState, a.state, state_bytes, true));
  }
  AM_ASSIGN_OR_RETURN(Impl::Out yo, im.output(Slot::kOutput, a.y.data, act_bytes, false));
  const vulkan::DeviceOps::ScanShape shape{a.batch, a.len, a.channels, a.state_size, a.D != nullptr,
                                           a.delta_bias != nullptr, a.delta_softplus};
  AM_RETURN_IF_ERROR(im.ops.selective_scan(shape, *ub, *db, *bmb, *cmb, *ab, pb, so.buffer, *yo.buffer));
  AM_RETURN_IF_ERROR(im.finish(yo));
  if (so.buffer != nullptr) return im.finish(so);
  return Status::Ok();
}

Status VulkanBackend::time_mix(const TimeMixArgs& a) {
  AM_RETURN_IF_ERROR(validate_time_mix_args(a));
  Impl& im = *impl_;
  AM_ASSIGN_OR_RETURN(const Buffer* decay, im.weight_vector(a.time_decay, a.channels));
  AM_ASSIGN_OR_RETURN(const Buffer* first, im.weight_vector(a.time_first, a.channels));
  const std::size_t state_bytes = float_bytes(3 * a.batch * a.channels);
  const std::size_t bytes = float_bytes(a.k.numel());
  AM_ASSIGN_OR_RETURN(const Buffer* kb, im.input(Slot::kKeys, a.k.data, bytes));
  AM_ASSIGN_OR_RETURN(const Buffer* vb, im.input(Slot::kValues, a.v.data, bytes));
  Impl::Out so;
  if (a.state != nullptr) {
    AM_ASSIGN_OR_RETURN(so, im.output(Slot::kState, a.state, state_bytes, true));
  }
  AM_ASSIGN_OR_RETURN(Impl::Out oo, im.output(Slot::kOutput, a.out.data, bytes, false));
  AM_RETURN_IF_ERROR(im.ops.time_mix(a.batch, a.len, a.channels, *kb, *vb, *decay, *first, so.buffer, *oo.buffer));
  AM_RETURN_IF_ERROR(im.finish(oo));
  if (so.buffer != nullptr) return im.finish(so);
  return Status::Ok();
}

}  // namespace am::kernels
