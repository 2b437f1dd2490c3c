// Residency on the Vulkan backend: the shared cases of device_residency_cases.h on the
// selected Vulkan device (lavapipe in CI), each with fresh backends that check residency.
// Skips without a device.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>

#include "kernels/vulkan/vulkan_backend.h"
#include "tests/kernels/device_residency_cases.h"
#include "tests/kernels/vulkan_test_util.h"

namespace am::kernels {
namespace {

using testing::VulkanTolerance;

testing::BackendFactory vulkan_factory(const vulkan::VulkanDeviceInfo& device) {
  return [device]() -> std::unique_ptr<Backend> {
    setenv(kResidencyChecksEnv, "1", 1);
    Result<std::unique_ptr<VulkanBackend>> be = VulkanBackend::create(device);
    EXPECT_TRUE(be.ok()) << be.status().message();
    if (!be.ok()) return nullptr;
    return std::move(*be);
  };
}

TEST(VulkanResidency, EncoderForwardMovesOnlyItsInputsAndOutput) {
  AM_REQUIRE_VULKAN_DEVICE(device);
  testing::expect_encoder_forward_moves_only_inputs_and_output(vulkan_factory(device), "vulkan",
                                                               VulkanTolerance::kEncoder);
}

TEST(VulkanResidency, DecoderForwardDownloadsOnlyEachStepsLogits) {
  AM_REQUIRE_VULKAN_DEVICE(device);
  testing::expect_decoder_forward_downloads_only_each_steps_logits(vulkan_factory(device), "vulkan",
                                                                   VulkanTolerance::kEncoder);
}

TEST(VulkanResidency, RowRangesInPlaceOpsAndAliasedOperandsGiveTheCpusValues) {
  AM_REQUIRE_VULKAN_DEVICE(device);
  testing::expect_row_ranges_in_place_ops_and_aliases_give_the_cpus_values(
      vulkan_factory(device), VulkanTolerance::kNorm, VulkanTolerance::kTranscendental);
}

TEST(VulkanResidency, HostAccessWithoutTheSyncCallsIsCaught) {
  AM_REQUIRE_VULKAN_DEVICE(device);
  testing::expect_host_access_without_the_sync_calls_caught(vulkan_factory(device));
}

TEST(VulkanResidency, TensorOutlivingItsBackendKeepsTheDevicesValues) {
  AM_REQUIRE_VULKAN_DEVICE(device);
  testing::expect_tensor_outliving_its_backend_keeps_the_devices_values(vulkan_factory(device));
}

TEST(VulkanResidency, EveryFamilyMovesOnlyItsInputsAndOutputs) {
  AM_REQUIRE_VULKAN_DEVICE(device);
  testing::expect_every_family_moves_only_inputs_and_outputs(vulkan_factory(device), "vulkan");
}

}  // namespace
}  // namespace am::kernels
