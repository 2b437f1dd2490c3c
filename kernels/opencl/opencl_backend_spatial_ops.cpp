// The OpenClBackend ops of the vision, speech, diffusion and state-space families: convolutions,
// group norm, pooling windows and the two recurrences (cl_kernels_spatial_ops.cpp). Convolution
// weights are rearranged once and cached by address; biases, gamma/beta, A, time_decay and
// time_first are cached weight vectors; a recurrent op's carried state is read and written in
// place (resident when the graph made it with tensor()).
#include <algorithm>
#include <string>
#include <vector>

#include "kernels/cpu/conv1d.h"
#include "kernels/cpu/conv2d.h"
#include "kernels/cpu/group_norm.h"
#include "kernels/cpu/pool2d.h"
#include "kernels/cpu/selective_scan.h"
#include "kernels/cpu/time_mix.h"
#include "kernels/opencl/backend_impl.h"

namespace am::kernels {

using opencl::KernelId;
using opencl::ScratchSlot;
using namespace opencl_detail;

namespace {

int32_t i32(int64_t v) { return static_cast<int32_t>(v); }

// The power of two >= n (n >= 1).
int64_t pow2_at_least(int64_t n) {
  int64_t p = 1;
  while (p < n) p *= 2;
  return p;
}

}  // namespace

Status OpenClBackend::conv1d(const Conv1dArgs& a) {
  AM_RETURN_IF_ERROR(validate_conv1d(a));
  const int64_t out_len = conv1d_out_len(a);
  const int64_t cin_g = a.in_channels / a.groups;
  const int64_t total = a.y.numel();
  if (total > kMaxKernelIndex || a.x.numel() > kMaxKernelIndex || a.out_channels * cin_g * a.kernel > kMaxKernelIndex ||
      out_len * a.stride + a.kernel * a.dilation > kMaxKernelIndex) {
    return unsupported_op(Op::kConv1d, "sizes beyond 2^31-1");
  }
  Impl& im = *impl_;
  return im.run([&]() -> Status {
    AM_ASSIGN_OR_RETURN(cl_mem wbuf, im.conv_weight(a.weight, a.out_channels, cin_g, a.kernel));
    cl_mem bbuf = nullptr;
    if (a.bias != nullptr) {
      AM_ASSIGN_OR_RETURN(bbuf, im.weight_vector(a.bias, a.out_channels));
    }
    AM_ASSIGN_OR_RETURN(cl_mem xbuf, im.input(ScratchSlot::kInput, a.x.data, float_bytes(a.x.numel())));
    AM_ASSIGN_OR_RETURN(Impl::Out yo, im.output(ScratchSlot::kOutput, a.y.data, float_bytes(total), false));
    cl_mem ybuf = yo.buffer;
    auto launch = im.rt.kernel(KernelId::kConv1d);
    launch.mem(xbuf).mem(wbuf).mem(bbuf).i32(a.bias != nullptr ? 1 : 0).mem(ybuf).i32(i32(total))
        .i32(i32(a.in_len)).i32(i32(out_len)).i32(i32(a.in_channels)).i32(i32(a.out_channels))
        .i32(i32(a.kernel)).i32(i32(a.stride)).i32(i32(a.dilation)).i32(i32(a.pad_left)).i32(i32(a.groups));
    AM_RETURN_IF_ERROR(im.launch_flat(total, launch));
    return im.finish(yo);
  });
}

Status OpenClBackend::conv2d(const Conv2dArgs& a) {
  AM_RETURN_IF_ERROR(validate_conv2d_args(a));
  const int64_t oh = conv_out_size(a.height, a.kernel_h, a.stride, a.padding);
  const int64_t ow = conv_out_size(a.width, a.kernel_w, a.stride, a.padding);
  const int64_t cin_g = a.in_channels / a.groups;
  const int64_t total = a.y.numel();
  if (total > kMaxKernelIndex || a.x.numel() > kMaxKernelIndex ||
      a.out_channels * cin_g * a.kernel_h * a.kernel_w > kMaxKernelIndex ||
      (oh + ow) * a.stride + a.kernel_h + a.kernel_w > kMaxKernelIndex) {
    return unsupported_op(Op::kConv2d, "sizes beyond 2^31-1");
  }
  Impl& im = *impl_;
  return im.run([&]() -> Status {
    AM_ASSIGN_OR_RETURN(cl_mem wbuf, im.conv_weight(a.weight, a.out_channels, cin_g, a.kernel_h * a.kernel_w));
    cl_mem bbuf = nullptr;
    if (a.bias != nullptr) {
      AM_ASSIGN_OR_RETURN(bbuf, im.weight_vector(a.bias, a.out_channels));
    }
    AM_ASSIGN_OR_RETURN(cl_mem xbuf, im.input(ScratchSlot::kInput, a.x.data, float_bytes(a.x.numel())));
    AM_ASSIGN_OR_RETURN(Impl::Out yo, im.output(ScratchSlot::kOutput, a.y.data, float_bytes(total), false));
    cl_mem ybuf = yo.buffer;
    auto launch = im.rt.kernel(KernelId::kConv2d);
    launch.mem(xbuf).mem(wbuf).mem(bbuf).i32(a.bias != nullptr ? 1 : 0).mem(ybuf).i32(i32(total))
        .i32(i32(a.height)).i32(i32(a.width)).i32(i32(oh)).i32(i32(ow)).i32(i32(a.in_channels))
        .i32(i32(a.out_channels)).i32(i32(a.kernel_h)).i32(i32(a.kernel_w)).i32(i32(a.stride))
        .i32(i32(a.padding)).i32(i32(a.groups));
    AM_RETURN_IF_ERROR(im.launch_flat(total, launch));
    return im.finish(yo);
  });
}

Status OpenClBackend::group_norm(ConstTensorView x, int64_t batch, int64_t groups, const float* gamma,
                                 const float* beta, float eps, TensorView y) {
  AM_RETURN_IF_ERROR(validate_group_norm_args(x, batch, groups, y));
  if (gamma == nullptr) return invalid_argument("group_norm: gamma is null");
  if (x.numel() > kMaxKernelIndex) return unsupported_op(Op::kGroupNorm, "more than 2^31-1 elements");
  const int64_t channels = x.cols();
  Impl& im = *impl_;
  return im.run([&]() -> Status {
    AM_ASSIGN_OR_RETURN(cl_mem gbuf, im.weight_vector(gamma, channels));
    cl_mem bbuf = nullptr;
    if (beta != nullptr) {
      AM_ASSIGN_OR_RETURN(bbuf, im.weight_vector(beta, channels));
    }
    AM_ASSIGN_OR_RETURN(cl_mem xbuf, im.input(ScratchSlot::kInput, x.data, float_bytes(x.numel())));
    AM_ASSIGN_OR_RETURN(Impl::Out yo, im.output(ScratchSlot::kOutput, y.data, float_bytes(x.numel()), false));
    cl_mem ybuf = yo.buffer;
    auto launch = im.rt.kernel(KernelId::kGroupNorm);
    launch.mem(xbuf).mem(gbuf).mem(bbuf).i32(beta != nullptr ? 1 : 0).f32(eps).i32(i32(groups))
        .i32(i32(x.rows() / batch)).i32(i32(channels)).mem(ybuf);
    AM_RETURN_IF_ERROR(im.launch_rows(batch * groups, im.rt.config().row_group, launch));
    return im.finish(yo);
  });
}

Status OpenClBackend::pool2d(const Pool2dArgs& a) {
  AM_RETURN_IF_ERROR(validate_pool2d_args(a));
  const int64_t oh = conv_out_size(a.height, a.kernel, a.stride, a.padding);
  const int64_t ow = conv_out_size(a.width, a.kernel, a.stride, a.padding);
  const int64_t total = a.y.numel();
  if (total == 0) return Status::Ok();
  if (total > kMaxKernelIndex || a.x.numel() > kMaxKernelIndex || (oh + ow) * a.stride + 2 * a.kernel > kMaxKernelIndex) {
    return unsupported_op(Op::kPool2d, "sizes beyond 2^31-1");
  }
  Impl& im = *impl_;
  return im.run([&]() -> Status {
    AM_ASSIGN_OR_RETURN(cl_mem xbuf, im.input(ScratchSlot::kInput, a.x.data, float_bytes(a.x.numel())));
    AM_ASSIGN_OR_RETURN(Impl::Out yo, im.output(ScratchSlot::kOutput, a.y.data, float_bytes(total), false));
    cl_mem ybuf = yo.buffer;
    auto launch = im.rt.kernel(KernelId::kPool2d);
    launch.mem(xbuf).mem(ybuf).i32(i32(total)).i32(i32(a.height)).i32(i32(a.width)).i32(i32(oh)).i32(i32(ow))
        .i32(i32(a.x.cols())).i32(i32(a.kernel)).i32(i32(a.stride)).i32(i32(a.padding))
        .i32(a.kind == PoolKind::kMax ? 1 : 0);
    AM_RETURN_IF_ERROR(im.launch_flat(total, launch));
    return im.finish(yo);
  });
}

Status OpenClBackend::selective_scan(const SelectiveScanArgs& a) {
  AM_RETURN_IF_ERROR(validate_selective_scan_args(a));
  Impl& im = *impl_;
  const int64_t group = im.rt.config().row_group;
  // sp work-items per channel, each keeping `per` states in registers (cl_kernels.h).
  const int64_t sp = std::min(pow2_at_least(a.state_size), group);
  const int64_t per = (a.state_size + sp - 1) / sp;
  if (per > opencl::kScanStatesPerItem) {
    return unsupported_op(Op::kSelectiveScan, "state_size " + std::to_string(a.state_size) + " above " +
                                                  std::to_string(opencl::kScanStatesPerItem * group));
  }
  const int64_t rows = a.batch * a.len;
  if (rows * a.channels > kMaxKernelIndex || rows * a.state_size > kMaxKernelIndex ||
      a.batch * a.channels * a.state_size > kMaxKernelIndex) {
    return unsupported_op(Op::kSelectiveScan, "sizes beyond 2^31-1");
  }
  const int64_t channel_groups = (a.channels + group / sp - 1) / (group / sp);
  return im.run([&]() -> Status {
    AM_ASSIGN_OR_RETURN(cl_mem abuf, im.weight_vector(a.A, a.channels * a.state_size));
    // D and delta_bias travel with the call (selective_scan.h does not promise they are weights).
    cl_mem pbuf = nullptr;
    std::vector<float> params;
    if (a.D != nullptr || a.delta_bias != nullptr) {
      params.assign(static_cast<std::size_t>(2 * a.channels), 0.0f);
      for (int64_t d = 0; d < a.channels; ++d) {
        if (a.D != nullptr) params[static_cast<std::size_t>(d)] = a.D[d];
        if (a.delta_bias != nullptr) params[static_cast<std::size_t>(a.channels + d)] = a.delta_bias[d];
      }
      AM_ASSIGN_OR_RETURN(pbuf, im.host_input(ScratchSlot::kParams, params.data(), float_bytes(2 * a.channels)));
    }
    const std::size_t state_bytes = float_bytes(a.batch * a.channels * a.state_size);
    Impl::Out so;
    if (a.state != nullptr) {
      AM_ASSIGN_OR_RETURN(so, im.output(ScratchSlot::kState, a.state, state_bytes, true));
    }
    cl_mem sbuf = so.buffer;
    const std::size_t act_bytes = float_bytes(rows * a.channels);
    const std::size_t bc_bytes = float_bytes(rows * a.state_size);
    AM_ASSIGN_OR_RETURN(cl_mem ubuf, im.input(ScratchSlot::kInput, a.u.data, act_bytes));
    AM_ASSIGN_OR_RETURN(cl_mem dbuf, im.input(ScratchSlot::kOperand, a.delta.data, act_bytes));
    AM_ASSIGN_OR_RETURN(cl_mem bbuf, im.input(ScratchSlot::kKeys, a.B.data, bc_bytes));
    AM_ASSIGN_OR_RETURN(cl_mem cbuf, im.input(ScratchSlot::kValues, a.C.data, bc_bytes));
    AM_ASSIGN_OR_RETURN(Impl::Out yo, im.output(ScratchSlot::kOutput, a.y.data, act_bytes, false));
    cl_mem ybuf = yo.buffer;
    auto launch = im.rt.kernel(KernelId::kSelectiveScan);
    launch.mem(ubuf).mem(dbuf).mem(bbuf).mem(cbuf).mem(abuf).mem(pbuf).i32(a.D != nullptr ? 1 : 0)
        .i32(a.delta_bias != nullptr ? 1 : 0).i32(a.delta_softplus ? 1 : 0).mem(sbuf)
        .i32(a.state != nullptr ? 1 : 0).mem(ybuf).i32(i32(a.len)).i32(i32(a.channels)).i32(i32(a.state_size))
        .i32(i32(sp)).i32(i32(per));
    const std::size_t global[2] = {static_cast<std::size_t>(channel_groups * group), static_cast<std::size_t>(a.batch)};
    const std::size_t local[2] = {static_cast<std::size_t>(group), 1};
    AM_RETURN_IF_ERROR(launch.run(im.rt.queue(), 2, global, local));
    AM_RETURN_IF_ERROR(im.finish(yo));
    if (sbuf != nullptr) return im.finish(so);
    return Status::Ok();
  });
}

Status OpenClBackend::time_mix(const TimeMixArgs& a) {
  AM_RETURN_IF_ERROR(validate_time_mix_args(a));
  const int64_t total = a.batch * a.channels;
  if (a.k.numel() > kMaxKernelIndex || 3 * total > kMaxKernelIndex) {
    return unsupported_op(Op::kTimeMix, "sizes beyond 2^31-1");
  }
  Impl& im = *impl_;
  return im.run([&]() -> Status {
    AM_ASSIGN_OR_RETURN(cl_mem decay, im.weight_vector(a.time_decay, a.channels));
    AM_ASSIGN_OR_RETURN(cl_mem first, im.weight_vector(a.time_first, a.channels));
    const std::size_t state_bytes = float_bytes(3 * total);
    Impl::Out so;
    if (a.state != nullptr) {
      AM_ASSIGN_OR_RETURN(so, im.output(ScratchSlot::kState, a.state, state_bytes, true));
    }
    cl_mem sbuf = so.buffer;
    const std::size_t bytes = float_bytes(a.k.numel());
    AM_ASSIGN_OR_RETURN(cl_mem kbuf, im.input(ScratchSlot::kKeys, a.k.data, bytes));
    AM_ASSIGN_OR_RETURN(cl_mem vbuf, im.input(ScratchSlot::kValues, a.v.data, bytes));
    AM_ASSIGN_OR_RETURN(Impl::Out oo, im.output(ScratchSlot::kOutput, a.out.data, bytes, false));
    cl_mem obuf = oo.buffer;
    auto launch = im.rt.kernel(KernelId::kTimeMix);
    launch.mem(kbuf).mem(vbuf).mem(decay).mem(first).mem(sbuf).i32(a.state != nullptr ? 1 : 0).mem(obuf)
        .i32(i32(total)).i32(i32(a.len)).i32(i32(a.channels));
    AM_RETURN_IF_ERROR(im.launch_flat(total, launch));
    AM_RETURN_IF_ERROR(im.finish(oo));
    if (sbuf != nullptr) return im.finish(so);
    return Status::Ok();
  });
}

}  // namespace am::kernels
