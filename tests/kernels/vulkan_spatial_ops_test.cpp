// The vision, speech, diffusion and state-space ops (conv1d, conv2d, group_norm, pool2d,
// selective_scan, time_mix) and the k-quant linear layers on the Vulkan backend against the cpu
// scalar reference (the cases are device_op_cases.h, shared with OpenCL). Skips without a device.
#include <gtest/gtest.h>

#include "kernels/cpu/cpu_backend.h"
#include "tests/kernels/device_op_cases.h"
#include "tests/kernels/vulkan_test_util.h"

namespace am::kernels {
namespace {

using testing::VulkanTolerance;
using testing::vulkan_backend_for;

ExecContext scalar_context() { return ExecContext{KernelPath::kScalar, nullptr}; }

TEST(VulkanSpatialOps, Conv1dMatchesCpuStridedDilatedGroupedAndCausal) {
  AM_REQUIRE_VULKAN_DEVICE(device);
  CpuBackend cpu(scalar_context());
  testing::expect_conv1d_matches_cpu<VulkanTolerance>(vulkan_backend_for(device), cpu);
}

TEST(VulkanSpatialOps, Conv2dMatchesCpuPaddedStridedGroupedAndPatchEmbedding) {
  AM_REQUIRE_VULKAN_DEVICE(device);
  CpuBackend cpu(scalar_context());
  testing::expect_conv2d_matches_cpu<VulkanTolerance>(vulkan_backend_for(device), cpu);
}

TEST(VulkanSpatialOps, GroupNormMatchesCpuInPlaceAndOutOfPlace) {
  AM_REQUIRE_VULKAN_DEVICE(device);
  CpuBackend cpu(scalar_context());
  testing::expect_group_norm_matches_cpu<VulkanTolerance>(vulkan_backend_for(device), cpu);
}

TEST(VulkanSpatialOps, Pool2dMaxIsExactAndAverageMatchesCpu) {
  AM_REQUIRE_VULKAN_DEVICE(device);
  CpuBackend cpu(scalar_context());
  testing::expect_pool2d_matches_cpu<VulkanTolerance>(vulkan_backend_for(device), cpu);
}

TEST(VulkanSpatialOps, SelectiveScanMatchesCpuAndCarriesItsState) {
  AM_REQUIRE_VULKAN_DEVICE(device);
  CpuBackend cpu(scalar_context());
  testing::expect_selective_scan_matches_cpu<VulkanTolerance>(vulkan_backend_for(device), cpu);
}

TEST(VulkanSpatialOps, TimeMixMatchesCpuFreshAndCarried) {
  AM_REQUIRE_VULKAN_DEVICE(device);
  CpuBackend cpu(scalar_context());
  testing::expect_time_mix_matches_cpu<VulkanTolerance>(vulkan_backend_for(device), cpu);
}

TEST(VulkanSpatialOps, KQuantLinearMatchesCpuAndPropagatesNaN) {
  AM_REQUIRE_VULKAN_DEVICE(device);
  const ExecContext ctx = scalar_context();
  CpuBackend cpu(ctx);
  testing::expect_k_quant_linear_matches_cpu<VulkanTolerance>(
      vulkan_backend_for(device), cpu, ctx, [](Backend& be) { static_cast<VulkanBackend&>(be).release_cached_weights(); });
}

}  // namespace
}  // namespace am::kernels
