#include "kernels/device_profile.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace am::kernels {

bool device_profiling_requested() {
  const char* v = std::getenv(kDeviceProfileEnv);
  return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
}

void DeviceProfile::add(const std::string& kernel, double seconds) {
  for (DeviceKernelTime& t : times_) {
    if (t.kernel == kernel) {
      ++t.calls;
      t.seconds += seconds;
      return;
    }
  }
  times_.push_back({kernel, 1, seconds});
}

std::vector<DeviceKernelTime> DeviceProfile::take() {
  std::vector<DeviceKernelTime> out = std::move(times_);
  times_.clear();
  std::sort(out.begin(), out.end(),
            [](const DeviceKernelTime& a, const DeviceKernelTime& b) { return a.seconds > b.seconds; });
  return out;
}

}  // namespace am::kernels
