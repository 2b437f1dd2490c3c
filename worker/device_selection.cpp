#include "worker/device_selection.h"

#include "kernels/opencl/cl_device.h"

namespace am::worker {

std::vector<std::string> device_selection_env(const nlohmann::json& device) {
  if (!device.is_object()) return {};
  auto backend = device.find("backend");
  auto selector = device.find("selector");
  if (backend == device.end() || !backend->is_string() || selector == device.end() || !selector->is_string()) {
    return {};
  }
  const std::string& value = selector->get_ref<const std::string&>();
  if (value.empty()) return {};
  if (*backend == "opencl") return {std::string(kernels::opencl::kOpenClDeviceEnv) + "=" + value};
  if (*backend == "vulkan") return {std::string(kVulkanDeviceVariable) + "=" + value};
  return {};
}

}  // namespace am::worker
