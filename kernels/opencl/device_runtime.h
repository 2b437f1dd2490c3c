// One OpenCL device made ready to run the backend's kernels: context, in-order queue, the built
// program and one cl_kernel per entry point, plus checked launch and transfer helpers.
//
// Contract: create() takes a device from list_opencl_devices(); it fails with Internal (with
// the compiler's build log) when the program does not build, and with Unsupported when a kernel
// cannot run with the work-group size it was compiled for. Every helper returns a Status naming
// the OpenCL call and kernel. The queue is in order: a write, a launch and a blocking read issued
// in that order complete in that order. Move-only; single-threaded.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "kernels/device_profile.h"
#include "kernels/opencl/cl_device.h"
#include "kernels/opencl/cl_handles.h"
#include "kernels/opencl/cl_kernels.h"

namespace am::kernels::opencl {

enum class KernelId : int {
  kMatmulF32,
  kMatmulF32R1,
  kMatmulF16,
  kMatmulF16R1,
  kMatmulBF16,
  kMatmulBF16R1,
  kRoundBF16,
  kQuantizeQ8,
  kMatmulQ8_0,
  kMatmulQ8_0R1,
  kMatmulQ4_0,
  kMatmulQ4_0R1,
  kMatmulQ4_1,
  kMatmulQ4_1R1,
  kGatherRows,
  kLayerNorm,
  kRmsNorm,
  kSoftmax,
  kActivation,
  kAdd,
  kMul,
  kAttention,
  kRope,
  kScatterAddRows,
  kTopK,
  kMatmulNt,
  kGlobalAvgPool,
  kConv1d,
  kConv2d,
  kGroupNorm,
  kPool2d,
  kSelectiveScan,
  kTimeMix,
  kQuantizeQ8K,
  kMatmulQ2K,
  kMatmulQ2KR1,
  kMatmulQ3K,
  kMatmulQ3KR1,
  kFmaChain,
  kCount,
};

const char* kernel_name(KernelId id);

// Profiling state of a runtime made with ACCELMATRIX_DEVICE_PROFILE (device_profile.h): the
// events of launched kernels not yet read, and the sums read so far.
struct KernelEvents {
  std::vector<std::pair<KernelId, cl_event>> pending;
  DeviceProfile profile;
  // Reads and releases the pending events (their kernels must have completed: after clFinish).
  void collect();
  ~KernelEvents();
};

// Arguments are appended in kernel order; the first failure is kept and reported by run().
class KernelLaunch {
 public:
  KernelLaunch(cl_kernel kernel, KernelId id, KernelEvents* events = nullptr)
      : kernel_(kernel), id_(id), events_(events) {}
  KernelLaunch& mem(cl_mem m);  // a null m passes a NULL buffer (an absent optional input)
  KernelLaunch& i32(int32_t v);
  KernelLaunch& f32(float v);
  // global[d] must be a multiple of local[d] when local is given; dims is 1 or 2.
  Status run(cl_command_queue queue, int dims, const std::size_t* global,
             const std::size_t* local) const;

 private:
  Status set(std::size_t size, const void* value);
  cl_kernel kernel_;
  KernelId id_;
  KernelEvents* events_;  // null: not profiled
  cl_uint next_ = 0;
  Status status_ = Status::Ok();
};

class DeviceRuntime {
 public:
  // `column_matmul`: the float-matmul variant (KernelConfig::column_matmul); unset: the
  // column variant on CPU devices, the 4-column one elsewhere.
  static Result<DeviceRuntime> create(const OpenClDevice& device, std::optional<bool> column_matmul = std::nullopt);

  const OpenClDevice& device() const { return device_; }
  const KernelConfig& config() const { return config_; }
  cl_context context() const { return context_.get(); }
  cl_command_queue queue() const { return queue_.get(); }
  double build_ms() const { return build_ms_; }

  KernelLaunch kernel(KernelId id) const {
    return KernelLaunch(kernels_[static_cast<std::size_t>(id)].get(), id, events_.get());
  }
  // Device time per kernel of the launches finished (finish()) since the last take; empty when
  // not profiling.
  std::vector<DeviceKernelTime> take_profile() const {
    return events_ ? events_->profile.take() : std::vector<DeviceKernelTime>{};
  }
  // Non-blocking: `host` must stay valid until a later blocking call (read or finish) returns.
  Status write(cl_mem dst, const void* host, std::size_t bytes) const;
  Status read(cl_mem src, void* host, std::size_t bytes) const;  // blocking
  // Blocking: returns when `host` has been copied (to dst at byte `offset`).
  Status write_now(cl_mem dst, const void* host, std::size_t bytes, std::size_t offset = 0) const;
  // Queued device-side copy and zero fill (bytes a multiple of 4).
  Status copy(cl_mem src, cl_mem dst, std::size_t bytes, std::size_t src_offset, std::size_t dst_offset) const;
  Status fill_zero(cl_mem dst, std::size_t bytes) const;
  Status finish() const;

 private:
  OpenClDevice device_;
  KernelConfig config_;
  ClContext context_;
  ClQueue queue_;
  ClProgram program_;
  std::array<ClKernel, static_cast<std::size_t>(KernelId::kCount)> kernels_;
  double build_ms_ = 0.0;
  // Set when profiling: the queue then has CL_QUEUE_PROFILING_ENABLE. Shared so that the
  // runtime stays movable while launches point at it.
  std::shared_ptr<KernelEvents> events_;
};

}  // namespace am::kernels::opencl
