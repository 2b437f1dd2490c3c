// The vision, speech, diffusion and state-space ops (conv1d, conv2d, group_norm, pool2d,
// selective_scan, time_mix) and the k-quant linear layers on every OpenCL device against the cpu
// scalar reference (the cases are device_op_cases.h, shared with Vulkan). Skips without OpenCL.
#include <gtest/gtest.h>

#include "kernels/cpu/cpu_backend.h"
#include "tests/kernels/device_op_cases.h"
#include "tests/kernels/opencl_test_util.h"

namespace am::kernels {
namespace {

using testing::opencl_backend_for;
using testing::OpenClTolerance;
using testing::scalar_context;

TEST(OpenClSpatialOps, Conv1dMatchesCpuStridedDilatedGroupedAndCausal) {
  AM_REQUIRE_OPENCL_DEVICES(devices);
  CpuBackend cpu(scalar_context());
  for (const opencl::OpenClDevice& device : devices) {
    SCOPED_TRACE(device.label());
    testing::expect_conv1d_matches_cpu<OpenClTolerance>(opencl_backend_for(device), cpu);
  }
}

TEST(OpenClSpatialOps, Conv2dMatchesCpuPaddedStridedGroupedAndPatchEmbedding) {
  AM_REQUIRE_OPENCL_DEVICES(devices);
  CpuBackend cpu(scalar_context());
  for (const opencl::OpenClDevice& device : devices) {
    SCOPED_TRACE(device.label());
    testing::expect_conv2d_matches_cpu<OpenClTolerance>(opencl_backend_for(device), cpu);
  }
}

TEST(OpenClSpatialOps, GroupNormMatchesCpuInPlaceAndOutOfPlace) {
  AM_REQUIRE_OPENCL_DEVICES(devices);
  CpuBackend cpu(scalar_context());
  for (const opencl::OpenClDevice& device : devices) {
    SCOPED_TRACE(device.label());
    testing::expect_group_norm_matches_cpu<OpenClTolerance>(opencl_backend_for(device), cpu);
  }
}

TEST(OpenClSpatialOps, Pool2dMaxIsExactAndAverageMatchesCpu) {
  AM_REQUIRE_OPENCL_DEVICES(devices);
  CpuBackend cpu(scalar_context());
  for (const opencl::OpenClDevice& device : devices) {
    SCOPED_TRACE(device.label());
    testing::expect_pool2d_matches_cpu<OpenClTolerance>(opencl_backend_for(device), cpu);
  }
}

TEST(OpenClSpatialOps, SelectiveScanMatchesCpuAndCarriesItsState) {
  AM_REQUIRE_OPENCL_DEVICES(devices);
  CpuBackend cpu(scalar_context());
  for (const opencl::OpenClDevice& device : devices) {
    SCOPED_TRACE(device.label());
    testing::expect_selective_scan_matches_cpu<OpenClTolerance>(opencl_backend_for(device), cpu);
  }
}

TEST(OpenClSpatialOps, TimeMixMatchesCpuFreshAndCarried) {
  AM_REQUIRE_OPENCL_DEVICES(devices);
  CpuBackend cpu(scalar_context());
  for (const opencl::OpenClDevice& device : devices) {
    SCOPED_TRACE(device.label());
    testing::expect_time_mix_matches_cpu<OpenClTolerance>(opencl_backend_for(device), cpu);
  }
}

TEST(OpenClSpatialOps, KQuantLinearMatchesCpuAndPropagatesNaN) {
  AM_REQUIRE_OPENCL_DEVICES(devices);
  const ExecContext ctx = scalar_context();
  CpuBackend cpu(ctx);
  for (const opencl::OpenClDevice& device : devices) {
    SCOPED_TRACE(device.label());
    testing::expect_k_quant_linear_matches_cpu<OpenClTolerance>(
        opencl_backend_for(device), cpu, ctx,
        [](Backend& be) { static_cast<OpenClBackend&>(be).release_cached_weights(); });
  }
}

}  // namespace
}  // namespace am::kernels
