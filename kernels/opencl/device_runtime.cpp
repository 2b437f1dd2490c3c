#include "kernels/opencl/device_runtime.h"

#include <string>
#include <vector>

#include "common/clock.h"
#include "common/log.h"

namespace am::kernels::opencl {
namespace {

// CPU devices default to the column float matmul (bert-tiny f32 b1 s32 on PoCL, AMD EPYC 2 vCPUs:
// 6.7 -> 4.6 ms); false gives every device the 4-column kernel, to compare the two.
constexpr bool kColumnMatmulOnCpuDevices = true;

// Enough of a failed build's log to find the error; compilers can print megabytes of warnings.
constexpr std::size_t kMaxBuildLogChars = 4000;

constexpr const char* kKernelNames[] = {
    "matmul_f32",     "matmul_f32_r1",  "matmul_f16",     "matmul_f16_r1", "matmul_bf16",
    "matmul_bf16_r1", "round_bf16",     "quantize_q8",    "matmul_q8_0",   "matmul_q8_0_r1",
    "matmul_q4_0",    "matmul_q4_0_r1", "matmul_q4_1",    "matmul_q4_1_r1", "gather_rows",
    "layer_norm",     "rms_norm",       "softmax_rows",   "activation",    "add",
    "mul",            "attention",      "rope",           "scatter_add_rows", "top_k",
    "matmul_nt",      "global_avg_pool", "conv1d",         "conv2d",        "group_norm",
    "pool2d",         "selective_scan", "time_mix",       "quantize_q8_k", "matmul_q2_k",
    "matmul_q2_k_r1", "matmul_q3_k",    "matmul_q3_k_r1", "fma_chain",
};
static_assert(sizeof(kKernelNames) / sizeof(kKernelNames[0]) ==
              static_cast<std::size_t>(KernelId::kCount));

std::string build_log(cl_program program, cl_device_id device) {
  std::size_t size = 0;
  if (cl().GetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size) !=
          CL_SUCCESS ||
      size == 0) {
    return "(no build log)";
  }
  std::string log(size, '\0');
  if (cl().GetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr) !=
      CL_SUCCESS) {
    return "(no build log)";
  }
  while (!log.empty() && log.back() == '\0') log.pop_back();
  if (log.size() > kMaxBuildLogChars) log = log.substr(0, kMaxBuildLogChars) + "\n...";
  return log;
}

// The work-group size each kernel is launched with (every launch names one).
std::size_t required_group_size(KernelId id, const KernelConfig& c) {
  switch (id) {
    case KernelId::kMatmulF32:
    case KernelId::kMatmulF32R1:
    case KernelId::kMatmulF16:
    case KernelId::kMatmulF16R1:
    case KernelId::kMatmulBF16:
    case KernelId::kMatmulBF16R1:
    case KernelId::kMatmulQ8_0:
    case KernelId::kMatmulQ8_0R1:
    case KernelId::kMatmulQ4_0:
    case KernelId::kMatmulQ4_0R1:
    case KernelId::kMatmulQ4_1:
    case KernelId::kMatmulQ4_1R1:
    case KernelId::kMatmulQ2K:
    case KernelId::kMatmulQ2KR1:
    case KernelId::kMatmulQ3K:
    case KernelId::kMatmulQ3KR1:
      return static_cast<std::size_t>(c.matmul_group);
    case KernelId::kAttention:
      return static_cast<std::size_t>(c.attention_group);
    default:
      return static_cast<std::size_t>(c.row_group);  // row reductions and element-wise launches
  }
}

}  // namespace

// Launch events held before a profiled runtime reads them (each holds driver memory).
constexpr std::size_t kMaxPendingEvents = 4096;

const char* kernel_name(KernelId id) { return kKernelNames[static_cast<std::size_t>(id)]; }

Status KernelLaunch::set(std::size_t size, const void* value) {
  if (!status_.ok()) return status_;
  const cl_uint index = next_++;
  return cl_check(cl().SetKernelArg(kernel_, index, size, value),
                  std::string("clSetKernelArg(") + kernel_name(id_) + ", " + std::to_string(index) + ")");
}

KernelLaunch& KernelLaunch::mem(cl_mem m) {
  status_ = set(sizeof(cl_mem), &m);
  return *this;
}

KernelLaunch& KernelLaunch::i32(int32_t v) {
  const cl_int value = v;
  status_ = set(sizeof(value), &value);
  return *this;
}

KernelLaunch& KernelLaunch::f32(float v) {
  const cl_float value = v;
  status_ = set(sizeof(value), &value);
  return *this;
}

Status KernelLaunch::run(cl_command_queue queue, int dims, const std::size_t* global,
                         const std::size_t* local) const {
  AM_RETURN_IF_ERROR(status_);
  if (events_ != nullptr && events_->pending.size() >= kMaxPendingEvents) {
    // Bounded: read what has run so far.
    AM_RETURN_IF_ERROR(cl_check(cl().Finish(queue), "clFinish (profile)"));
    events_->collect();
  }
  cl_event event = nullptr;
  AM_RETURN_IF_ERROR(cl_check(cl().EnqueueNDRangeKernel(queue, kernel_, static_cast<cl_uint>(dims), nullptr, global,
                                                        local, 0, nullptr, events_ != nullptr ? &event : nullptr),
                              std::string("clEnqueueNDRangeKernel(") + kernel_name(id_) + ")"));
  if (event != nullptr) events_->pending.emplace_back(id_, event);
  return Status::Ok();
}

void KernelEvents::collect() {
  for (const auto& [id, event] : pending) {
    cl_ulong start = 0, end = 0;
    if (cl().GetEventProfilingInfo(event, CL_PROFILING_COMMAND_START, sizeof start, &start, nullptr) == CL_SUCCESS &&
        cl().GetEventProfilingInfo(event, CL_PROFILING_COMMAND_END, sizeof end, &end, nullptr) == CL_SUCCESS &&
        end >= start) {
      profile.add(kernel_name(id), static_cast<double>(end - start) * 1e-9);
    }
    cl().ReleaseEvent(event);
  }
  pending.clear();
}

KernelEvents::~KernelEvents() {
  for (const auto& entry : pending) cl().ReleaseEvent(entry.second);
}

Result<DeviceRuntime> DeviceRuntime::create(const OpenClDevice& device, std::optional<bool> column_matmul) {
  AM_RETURN_IF_ERROR(opencl_api().status());
  const auto start = SteadyClock::now();
  DeviceRuntime rt;
  rt.device_ = device;
  cl_device_fp_config fp = 0;
  cl().GetDeviceInfo(device.device, CL_DEVICE_SINGLE_FP_CONFIG, sizeof(fp), &fp, nullptr);
  rt.config_ = kernel_config_for(device.max_work_group_size,
                                 (fp & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) != 0,
                                 column_matmul.value_or(kColumnMatmulOnCpuDevices && (device.type & CL_DEVICE_TYPE_CPU) != 0));

  cl_int rc = CL_SUCCESS;
  const cl_context_properties props[] = {
      CL_CONTEXT_PLATFORM, reinterpret_cast<cl_context_properties>(device.platform), 0};
  rt.context_ = ClContext(cl().CreateContext(props, 1, &device.device, nullptr, nullptr, &rc));
  AM_RETURN_IF_ERROR(cl_check(rc, "clCreateContext(" + device.label() + ")"));
  const bool profile = device_profiling_requested();
  rt.queue_ = ClQueue(
      cl().CreateCommandQueue(rt.context_.get(), device.device, profile ? CL_QUEUE_PROFILING_ENABLE : 0, &rc));
  AM_RETURN_IF_ERROR(cl_check(rc, "clCreateCommandQueue(" + device.label() + ")"));

  const std::string_view sources[] = {opencl_kernel_source(), opencl_sequence_kernel_source(),
                                      opencl_spatial_kernel_source()};
  constexpr cl_uint kSources = sizeof(sources) / sizeof(sources[0]);
  const char* texts[kSources];
  std::size_t lengths[kSources];
  for (cl_uint i = 0; i < kSources; ++i) {
    texts[i] = sources[i].data();
    lengths[i] = sources[i].size();
  }
  rt.program_ = ClProgram(cl().CreateProgramWithSource(rt.context_.get(), kSources, texts, lengths, &rc));
  AM_RETURN_IF_ERROR(cl_check(rc, "clCreateProgramWithSource"));
  const std::string options = kernel_build_options(rt.config_);
  rc = cl().BuildProgram(rt.program_.get(), 1, &device.device, options.c_str(), nullptr, nullptr);
  if (rc != CL_SUCCESS) {
    return internal_error("opencl: building the kernels for " + device.label() + " with '" +
                          options + "' failed (" + std::string(cl_error_name(rc)) +
                          "):\n" + build_log(rt.program_.get(), device.device));
  }
  for (int i = 0; i < static_cast<int>(KernelId::kCount); ++i) {
    const auto id = static_cast<KernelId>(i);
    rt.kernels_[static_cast<std::size_t>(i)] =
        ClKernel(cl().CreateKernel(rt.program_.get(), kernel_name(id), &rc));
    AM_RETURN_IF_ERROR(cl_check(rc, std::string("clCreateKernel(") + kernel_name(id) + ")"));
    const std::size_t need = required_group_size(id, rt.config_);
    std::size_t allowed = 0;
    AM_RETURN_IF_ERROR(cl_check(
        cl().GetKernelWorkGroupInfo(rt.kernels_[static_cast<std::size_t>(i)].get(), device.device,
                                    CL_KERNEL_WORK_GROUP_SIZE, sizeof(allowed), &allowed, nullptr),
        std::string("clGetKernelWorkGroupInfo(") + kernel_name(id) + ")"));
    if (need > allowed) {
      return unsupported("opencl: kernel " + std::string(kernel_name(id)) + " needs " +
                         std::to_string(need) + " work-items per group, device " + device.label() +
                         " allows " + std::to_string(allowed));
    }
  }
  if (profile) rt.events_ = std::make_shared<KernelEvents>();
  rt.build_ms_ = ms_since(start);
  get_logger("kernels/opencl")
      ->debug("kernels built for {} in {:.0f} ms ({})", device.label(), rt.build_ms_, options);
  return rt;
}

Status DeviceRuntime::write(cl_mem dst, const void* host, std::size_t bytes) const {
  if (bytes == 0) return Status::Ok();
  return cl_check(cl().EnqueueWriteBuffer(queue_.get(), dst, CL_FALSE, 0, bytes, host, 0, nullptr,
                                          nullptr),
                  "clEnqueueWriteBuffer(" + std::to_string(bytes) + " bytes)");
}

Status DeviceRuntime::write_now(cl_mem dst, const void* host, std::size_t bytes, std::size_t offset) const {
  if (bytes == 0) return Status::Ok();
  return cl_check(cl().EnqueueWriteBuffer(queue_.get(), dst, CL_TRUE, offset, bytes, host, 0, nullptr, nullptr),
                  "clEnqueueWriteBuffer(" + std::to_string(bytes) + " bytes, blocking)");
}

Status DeviceRuntime::copy(cl_mem src, cl_mem dst, std::size_t bytes, std::size_t src_offset,
                           std::size_t dst_offset) const {
  if (bytes == 0) return Status::Ok();
  return cl_check(cl().EnqueueCopyBuffer(queue_.get(), src, dst, src_offset, dst_offset, bytes, 0, nullptr, nullptr),
                  "clEnqueueCopyBuffer(" + std::to_string(bytes) + " bytes)");
}

Status DeviceRuntime::fill_zero(cl_mem dst, std::size_t bytes) const {
  if (bytes == 0) return Status::Ok();
  const float zero = 0.0f;
  return cl_check(cl().EnqueueFillBuffer(queue_.get(), dst, &zero, sizeof(zero), 0, bytes, 0, nullptr, nullptr),
                  "clEnqueueFillBuffer(" + std::to_string(bytes) + " bytes)");
}

Status DeviceRuntime::read(cl_mem src, void* host, std::size_t bytes) const {
  if (bytes == 0) return Status::Ok();
  return cl_check(cl().EnqueueReadBuffer(queue_.get(), src, CL_TRUE, 0, bytes, host, 0, nullptr,
                                         nullptr),
                  "clEnqueueReadBuffer(" + std::to_string(bytes) + " bytes)");
}

Status DeviceRuntime::finish() const {
  AM_RETURN_IF_ERROR(cl_check(cl().Finish(queue_.get()), "clFinish"));
  if (events_) events_->collect();
  return Status::Ok();
}

}  // namespace am::kernels::opencl
