// A job leased for one device of a backend opens that device: the probe's selector becomes the
// backend's device variable in the job process (worker/device_selection.h).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "kernels/opencl/cl_device.h"
#include "worker/device_selection.h"

namespace am::worker {
namespace {

using nlohmann::json;
using Env = std::vector<std::string>;

TEST(DeviceSelection, OpenClAndVulkanDevicesNameTheirSelectorInTheBackendsVariable) {
  EXPECT_EQ(device_selection_env(json{{"backend", "opencl"}, {"key", "opencl:1"}, {"selector", "1:0"}}),
            Env{std::string(kernels::opencl::kOpenClDeviceEnv) + "=1:0"});
  EXPECT_EQ(device_selection_env(json{{"backend", "vulkan"}, {"key", "vulkan:1"}, {"selector", "2"}}),
            Env{"ACCELMATRIX_VULKAN_DEVICE=2"});
}

TEST(DeviceSelection, DevicesWithoutASelectorOrOfOtherBackendsSetNothing) {
  EXPECT_EQ(device_selection_env(json{{"backend", "cpu"}, {"selector", "0"}}), Env{});
  EXPECT_EQ(device_selection_env(json{{"backend", "opencl"}}), Env{});             // a record from an older worker
  EXPECT_EQ(device_selection_env(json{{"backend", "vulkan"}, {"selector", ""}}), Env{});
  EXPECT_EQ(device_selection_env(json{{"backend", "vulkan"}, {"selector", 3}}), Env{});  // not a string
  EXPECT_EQ(device_selection_env(json::array()), Env{});
}

}  // namespace
}  // namespace am::worker
