#include "kernels/opencl/cl_device.h"

#include <charconv>
#include <cstdlib>
#include <sstream>

#include "common/log.h"

namespace am::kernels::opencl {
namespace {

// The ICD loader answers this (cl_khr_icd) when no vendor platform is installed.
constexpr cl_int kPlatformNotFoundKhr = -1001;

std::string platform_string(cl_platform_id p, cl_platform_info what) {
  std::size_t size = 0;
  if (cl().GetPlatformInfo(p, what, 0, nullptr, &size) != CL_SUCCESS || size == 0) return {};
  std::string s(size, '\0');
  if (cl().GetPlatformInfo(p, what, size, s.data(), nullptr) != CL_SUCCESS) return {};
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

std::string device_string(cl_device_id d, cl_device_info what) {
  std::size_t size = 0;
  if (cl().GetDeviceInfo(d, what, 0, nullptr, &size) != CL_SUCCESS || size == 0) return {};
  std::string s(size, '\0');
  if (cl().GetDeviceInfo(d, what, size, s.data(), nullptr) != CL_SUCCESS) return {};
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

template <typename T>
T device_value(cl_device_id d, cl_device_info what) {
  T v{};
  if (cl().GetDeviceInfo(d, what, sizeof(v), &v, nullptr) != CL_SUCCESS) return T{};
  return v;
}

Result<std::pair<int, int>> parse_device_env(std::string_view text) {
  const std::size_t colon = text.find(':');
  int platform = -1;
  int device = -1;
  auto parse = [](std::string_view s, int& out) {
    const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc() && ptr == s.data() + s.size() && out >= 0;
  };
  if (colon == std::string_view::npos || !parse(text.substr(0, colon), platform) ||
      !parse(text.substr(colon + 1), device)) {
    return invalid_argument(std::string(kOpenClDeviceEnv) + "='" + std::string(text) +
                            "' must be <platform>:<device>, e.g. 0:0");
  }
  return std::pair<int, int>{platform, device};
}

}  // namespace

bool OpenClDevice::has_extension(std::string_view ext) const {
  std::istringstream in(extensions);
  std::string word;
  while (in >> word) {
    if (word == ext) return true;
  }
  return false;
}

std::string OpenClDevice::label() const {
  return name + " (" + platform_name + ", " + std::to_string(platform_index) + ":" +
         std::to_string(device_index) + ")";
}

Result<std::vector<OpenClDevice>> list_opencl_devices() {
  Result<const ClApi*> api = opencl_api();
  if (!api.ok()) return unsupported("no OpenCL device found: " + api.status().message());
  cl_uint num_platforms = 0;
  const cl_int rc = cl().GetPlatformIDs(0, nullptr, &num_platforms);
  if (rc == kPlatformNotFoundKhr || (rc == CL_SUCCESS && num_platforms == 0)) {
    return unsupported("no OpenCL device found: the ICD loader lists no platform");
  }
  AM_RETURN_IF_ERROR(cl_check(rc, "clGetPlatformIDs"));
  std::vector<cl_platform_id> platforms(num_platforms);
  AM_RETURN_IF_ERROR(cl_check(cl().GetPlatformIDs(num_platforms, platforms.data(), nullptr),
                              "clGetPlatformIDs"));
  std::vector<OpenClDevice> out;
  for (cl_uint p = 0; p < num_platforms; ++p) {
    cl_uint num_devices = 0;
    const cl_int drc = cl().GetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, 0, nullptr, &num_devices);
    if (drc == CL_DEVICE_NOT_FOUND || num_devices == 0) continue;
    if (drc != CL_SUCCESS) {
      get_logger("kernels/opencl")->warn("platform {} skipped: clGetDeviceIDs returned {}", p,
                                         cl_error_name(drc));
      continue;
    }
    std::vector<cl_device_id> devices(num_devices);
    if (cl().GetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, num_devices, devices.data(), nullptr) !=
        CL_SUCCESS) {
      continue;
    }
    const std::string platform_name = platform_string(platforms[p], CL_PLATFORM_NAME);
    for (cl_uint d = 0; d < num_devices; ++d) {
      OpenClDevice dev;
      dev.platform_index = static_cast<int>(p);
      dev.device_index = static_cast<int>(d);
      dev.platform = platforms[p];
      dev.device = devices[d];
      dev.platform_name = platform_name;
      dev.name = device_string(devices[d], CL_DEVICE_NAME);
      dev.vendor = device_string(devices[d], CL_DEVICE_VENDOR);
      dev.version = device_string(devices[d], CL_DEVICE_VERSION);
      dev.driver_version = device_string(devices[d], CL_DRIVER_VERSION);
      dev.extensions = device_string(devices[d], CL_DEVICE_EXTENSIONS);
      dev.type = device_value<cl_device_type>(devices[d], CL_DEVICE_TYPE);
      dev.global_mem_bytes = device_value<cl_ulong>(devices[d], CL_DEVICE_GLOBAL_MEM_SIZE);
      dev.max_alloc_bytes = device_value<cl_ulong>(devices[d], CL_DEVICE_MAX_MEM_ALLOC_SIZE);
      dev.local_mem_bytes = device_value<cl_ulong>(devices[d], CL_DEVICE_LOCAL_MEM_SIZE);
      dev.max_work_group_size = device_value<std::size_t>(devices[d], CL_DEVICE_MAX_WORK_GROUP_SIZE);
      dev.compute_units = device_value<cl_uint>(devices[d], CL_DEVICE_MAX_COMPUTE_UNITS);
      if (device_value<cl_bool>(devices[d], CL_DEVICE_AVAILABLE) == CL_FALSE) {
        get_logger("kernels/opencl")->info("device {} is not available; skipped", dev.label());
        continue;
      }
      out.push_back(std::move(dev));
    }
  }
  if (out.empty()) return unsupported("no OpenCL device found: platforms list no available device");
  return out;
}

Result<OpenClDevice> select_opencl_device() {
  AM_ASSIGN_OR_RETURN(std::vector<OpenClDevice> devices, list_opencl_devices());
  if (const char* env = std::getenv(kOpenClDeviceEnv); env != nullptr && *env != '\0') {
    AM_ASSIGN_OR_RETURN(auto wanted, parse_device_env(env));
    for (OpenClDevice& d : devices) {
      if (d.platform_index == wanted.first && d.device_index == wanted.second) return std::move(d);
    }
    return invalid_argument(std::string(kOpenClDeviceEnv) + "=" + env +
                            " names no available OpenCL device");
  }
  for (OpenClDevice& d : devices) {
    if (d.is_gpu()) return std::move(d);
  }
  return std::move(devices.front());
}

}  // namespace am::kernels::opencl
