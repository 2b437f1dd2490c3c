// Which physical device a job process opens. The probe records, for each OpenCL and Vulkan
// device, the `selector` its backend's device variable takes (OpenCL "<platform>:<device>",
// Vulkan "<physical device index>", both as the loader enumerates them); the worker sets that
// variable in the job process of a job leased for that device key. Without it, every job of a
// backend would run on the backend's default choice (the first GPU), whatever device the
// coordinator leased it for, and the matrix would credit the wrong hardware class.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace am::worker {

// The Vulkan backend's device variable (kernels/vulkan/vk_device.h kVulkanDeviceEnv), named here
// so that a build without the Vulkan backend compiles; probe_vulkan.cpp asserts they agree.
inline constexpr const char* kVulkanDeviceVariable = "ACCELMATRIX_VULKAN_DEVICE";

// "NAME=value" entries for the job process of a job on `device` (a capability record device
// entry); empty for backends that have one device per worker (cpu) or no selector.
std::vector<std::string> device_selection_env(const nlohmann::json& device);

}  // namespace am::worker
