// OpenCL devices visible to this process, and the one a backend should use.
//
// Contract:
//   - list_opencl_devices() enumerates every platform's devices (any type) in ICD order. It
//     returns Unsupported "no OpenCL device found" (with the reason: no loader, no platform, no
//     device) when there is nothing to run on. A platform whose device query fails is skipped
//     and logged.
//   - select_opencl_device() honours ACCELMATRIX_OPENCL_DEVICE=<platform>:<device> (indices as
//     listed); a malformed or out-of-range value is InvalidArgument naming it. Without the
//     variable it picks the first GPU, else the first device of any type (PoCL's CPU device on a
//     box without a GPU).
//   - Thread-safe (OpenCL queries are); each call queries afresh.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "kernels/opencl/cl_api.h"

namespace am::kernels::opencl {

inline constexpr const char* kOpenClDeviceEnv = "ACCELMATRIX_OPENCL_DEVICE";

struct OpenClDevice {
  int platform_index = 0;
  int device_index = 0;
  cl_platform_id platform = nullptr;
  cl_device_id device = nullptr;
  std::string name;
  std::string vendor;
  std::string platform_name;
  std::string version;           // CL_DEVICE_VERSION, e.g. "OpenCL 3.0 PoCL ..."
  std::string driver_version;
  std::string extensions;        // space separated
  cl_device_type type = 0;
  uint64_t global_mem_bytes = 0;
  uint64_t max_alloc_bytes = 0;
  uint64_t local_mem_bytes = 0;
  std::size_t max_work_group_size = 0;
  uint32_t compute_units = 0;

  bool is_gpu() const { return (type & CL_DEVICE_TYPE_GPU) != 0; }
  bool has_extension(std::string_view ext) const;
  // "pthread-cpu (Portable Computing Language, 0:0)"
  std::string label() const;
};

Result<std::vector<OpenClDevice>> list_opencl_devices();
Result<OpenClDevice> select_opencl_device();

}  // namespace am::kernels::opencl
