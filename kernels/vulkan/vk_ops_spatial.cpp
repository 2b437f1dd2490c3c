// DeviceOps: the convolution, normalisation, pooling and recurrent ops (conv1d, conv2d,
// group_norm, pool2d, selective_scan, time_mix) of the vision, speech, diffusion and state-space
// families, each one shader following the cpu reference's formula.
#include <limits>
#include <string>

#include "kernels/vulkan/vk_ops.h"

namespace am::kernels::vulkan {
namespace {

constexpr int64_t kMaxIndex = std::numeric_limits<int32_t>::max();
constexpr uint32_t kRecurrenceGroup = 64;  // time_mix.comp: one invocation per (sample, channel)
// Grid y of selective_scan carries the sample (maxComputeWorkGroupCount[1] >= 65535 everywhere).
constexpr int64_t kMaxGridY = 65535;

Status too_big(const char* op) {
  return unsupported(std::string("op ") + op + " (sizes beyond 2^31-1) not implemented on backend vulkan");
}

uint32_t u32(int64_t v) { return static_cast<uint32_t>(v); }

// The power of two >= n (n >= 1).
uint32_t pow2_at_least(int64_t n) {
  uint32_t p = 1;
  while (static_cast<int64_t>(p) < n) p *= 2;
  return p;
}

}  // namespace

Status DeviceOps::conv1d(const Conv1dShape& s, const Buffer& x, const Buffer& w, const Buffer* bias,
                         const Buffer& y) {
  const int64_t total = s.batch * s.out_len * s.out_channels;
  if (total == 0) return Status::Ok();
  if (total > kMaxIndex || s.batch * s.in_len * s.in_channels > kMaxIndex ||
      s.out_channels * (s.in_channels / s.groups) * s.kernel > kMaxIndex ||
      s.out_len * s.stride + s.kernel * s.dilation > kMaxIndex) {
    return too_big("conv1d");
  }
  AM_ASSIGN_OR_RETURN(VkBuffer none, dummy());
  AM_ASSIGN_OR_RETURN(const Pipeline* p, dev_.pipeline("conv1d", 4));
  const uint32_t push[] = {u32(total),    u32(s.in_len), u32(s.out_len),  u32(s.in_channels),
                           u32(s.out_channels), u32(s.kernel), u32(s.stride), u32(s.dilation),
                           u32(s.pad_left), u32(s.groups), bias != nullptr ? 1u : 0u};
  return flat(*p, {x.get(), w.get(), bias != nullptr ? bias->get() : none, y.get()}, push, sizeof push, total,
              kFlatGroup);
}

Status DeviceOps::conv2d(const Conv2dShape& s, const Buffer& x, const Buffer& w, const Buffer* bias,
                         const Buffer& y) {
  const int64_t total = s.batch * s.out_h * s.out_w * s.out_channels;
  if (total == 0) return Status::Ok();
  if (total > kMaxIndex || s.batch * s.height * s.width * s.in_channels > kMaxIndex ||
      s.out_channels * (s.in_channels / s.groups) * s.kernel_h * s.kernel_w > kMaxIndex ||
      (s.out_h + s.out_w) * s.stride + s.kernel_h + s.kernel_w > kMaxIndex) {
    return too_big("conv2d");
  }
  AM_ASSIGN_OR_RETURN(VkBuffer none, dummy());
  AM_ASSIGN_OR_RETURN(const Pipeline* p, dev_.pipeline("conv2d", 4));
  const uint32_t push[] = {u32(total),       u32(s.height),   u32(s.width),    u32(s.out_h),
                           u32(s.out_w),     u32(s.in_channels), u32(s.out_channels), u32(s.kernel_h),
                           u32(s.kernel_w),  u32(s.stride),   u32(s.padding),  u32(s.groups),
                           bias != nullptr ? 1u : 0u};
  return flat(*p, {x.get(), w.get(), bias != nullptr ? bias->get() : none, y.get()}, push, sizeof push, total,
              kFlatGroup);
}

Status DeviceOps::group_norm(const Buffer& x, const Buffer& gamma, const Buffer* beta, float eps, int64_t batch,
                             int64_t positions, int64_t channels, int64_t groups, const Buffer& y) {
  const int64_t tasks = batch * groups;
  if (tasks == 0 || positions * channels == 0) return Status::Ok();
  if (batch * positions * channels > kMaxIndex) return too_big("group_norm");
  AM_ASSIGN_OR_RETURN(VkBuffer none, dummy());
  const int32_t spec[] = {static_cast<int32_t>(kRowGroup)};
  AM_ASSIGN_OR_RETURN(const Pipeline* p, dev_.pipeline("group_norm", 4, spec));
  struct {
    uint32_t tasks, groups, positions, channels;
    float eps;
    uint32_t has_beta;
  } push{u32(tasks), u32(groups), u32(positions), u32(channels), eps, beta != nullptr ? 1u : 0u};
  uint32_t gx = 0, gy = 0;
  groups_2d(tasks, gx, gy);
  return dev_.dispatch(*p, {x.get(), gamma.get(), beta != nullptr ? beta->get() : none, y.get()}, &push,
                       sizeof push, gx, gy);
}

Status DeviceOps::pool2d(const Pool2dShape& s, const Buffer& x, const Buffer& y) {
  const int64_t total = s.batch * s.out_h * s.out_w * s.channels;
  if (total == 0) return Status::Ok();
  if (total > kMaxIndex || s.batch * s.height * s.width * s.channels > kMaxIndex ||
      (s.out_h + s.out_w) * s.stride + 2 * s.kernel > kMaxIndex) {
    return too_big("pool2d");
  }
  AM_ASSIGN_OR_RETURN(const Pipeline* p, dev_.pipeline("pool2d", 2));
  const uint32_t push[] = {u32(total),  u32(s.height), u32(s.width),  u32(s.out_h),   u32(s.out_w),
                           u32(s.channels), u32(s.kernel), u32(s.stride), u32(s.padding), s.max ? 1u : 0u};
  return flat(*p, {x.get(), y.get()}, push, sizeof push, total, kFlatGroup);
}

Status DeviceOps::selective_scan(const ScanShape& s, const Buffer& u, const Buffer& delta, const Buffer& B,
                                 const Buffer& C, const Buffer& A, const Buffer* params, const Buffer* state,
                                 const Buffer& y) {
  if (s.batch == 0 || s.len == 0 || s.channels == 0) return Status::Ok();
  if (s.state_size > kScanMaxState) {
    return unsupported("op selective_scan (state_size " + std::to_string(s.state_size) + " above " +
                       std::to_string(kScanMaxState) + ") not implemented on backend vulkan");
  }
  const uint32_t sp = pow2_at_least(s.state_size);
  const int64_t per_group = static_cast<int64_t>(kRowGroup / sp);
  const int64_t channel_groups = (s.channels + per_group - 1) / per_group;
  if (s.batch * s.len * s.channels > kMaxIndex || s.batch * s.len * s.state_size > kMaxIndex ||
      s.batch * s.channels * s.state_size > kMaxIndex || channel_groups > dev_.max_groups_x() ||
      s.batch > kMaxGridY) {
    return too_big("selective_scan");
  }
  AM_ASSIGN_OR_RETURN(VkBuffer none, dummy());
  const int32_t spec[] = {static_cast<int32_t>(kRowGroup), static_cast<int32_t>(sp)};
  AM_ASSIGN_OR_RETURN(const Pipeline* p, dev_.pipeline("selective_scan", 8, spec));
  const uint32_t push[] = {u32(s.len),         u32(s.channels),       u32(s.state_size),
                           s.has_D ? 1u : 0u,  s.has_delta_bias ? 1u : 0u, s.softplus ? 1u : 0u,
                           state != nullptr ? 1u : 0u};
  return dev_.dispatch(*p,
                       {u.get(), delta.get(), B.get(), C.get(), A.get(), params != nullptr ? params->get() : none,
                        state != nullptr ? state->get() : none, y.get()},
                       push, sizeof push, u32(channel_groups), u32(s.batch));
}

Status DeviceOps::time_mix(int64_t batch, int64_t len, int64_t channels, const Buffer& k, const Buffer& v,
                           const Buffer& decay, const Buffer& first, const Buffer* state, const Buffer& out) {
  const int64_t total = batch * channels;
  if (total == 0 || len == 0) return Status::Ok();
  if (batch * len * channels > kMaxIndex || 3 * batch * channels > kMaxIndex) return too_big("time_mix");
  AM_ASSIGN_OR_RETURN(VkBuffer none, dummy());
  AM_ASSIGN_OR_RETURN(const Pipeline* p, dev_.pipeline("time_mix", 6));
  const uint32_t push[] = {u32(total), u32(len), u32(channels), state != nullptr ? 1u : 0u};
  return flat(*p, {k.get(), v.get(), decay.get(), first.get(), state != nullptr ? state->get() : none, out.get()},
              push, sizeof push, total, kRecurrenceGroup);
}

}  // namespace am::kernels::vulkan
