// Device time per kernel, for finding where a device backend's op time goes.
//
// Contract: a device backend created while ACCELMATRIX_DEVICE_PROFILE is set (to anything but
// "0") records the device time of every command it runs (Vulkan: a timestamp after each
// dispatch, copy and fill; OpenCL: event profiling of each kernel launch) and
// Backend::take_device_profile() hands out what was counted since the last take, for work
// already waited for (synchronize() first). Profiling serialises nothing the backend would not
// serialise anyway, but it costs a timestamp or an event per command: leave it off for figures
// that are not about the breakdown. The cpu backend and unprofiled backends answer empty.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace am::kernels {

inline constexpr const char* kDeviceProfileEnv = "ACCELMATRIX_DEVICE_PROFILE";

// True when kDeviceProfileEnv asks for profiling.
bool device_profiling_requested();

struct DeviceKernelTime {
  std::string kernel;  // shader or kernel name ("copy", "fill" for transfers)
  int64_t calls = 0;
  double seconds = 0.0;  // device time, summed over the calls
};

// Sums device time by kernel name; take() returns the sums, largest first, and clears them.
class DeviceProfile {
 public:
  void add(const std::string& kernel, double seconds);
  std::vector<DeviceKernelTime> take();

 private:
  std::vector<DeviceKernelTime> times_;  // a handful of kernels per op: a linear search is fine
};

}  // namespace am::kernels
