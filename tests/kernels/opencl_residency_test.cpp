// Residency on the OpenCL backend: the shared cases of device_residency_cases.h on every OpenCL
// device (PoCL in CI), each with fresh backends that check residency. Skips without a device.
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <memory>

#include "kernels/opencl/opencl_backend.h"
#include "tests/kernels/device_residency_cases.h"
#include "tests/kernels/opencl_test_util.h"

namespace am::kernels {
namespace {

using testing::OpenClTolerance;

testing::BackendFactory opencl_factory(const opencl::OpenClDevice& device) {
  return [device]() -> std::unique_ptr<Backend> {
    setenv(kResidencyChecksEnv, "1", 1);
    Result<std::unique_ptr<OpenClBackend>> be = OpenClBackend::create(device);
    EXPECT_TRUE(be.ok()) << be.status().message();
    if (!be.ok()) return nullptr;
    return std::move(*be);
  };
}

// Runs `check` with a factory for each OpenCL device.
void on_every_device(const std::vector<opencl::OpenClDevice>& devices,
                     const std::function<void(const testing::BackendFactory&)>& check) {
  for (const opencl::OpenClDevice& device : devices) {
    SCOPED_TRACE(device.label());
    check(opencl_factory(device));
  }
}

TEST(OpenClResidency, EncoderForwardMovesOnlyItsInputsAndOutput) {
  AM_REQUIRE_OPENCL_DEVICES(devices);
  on_every_device(devices, [](const testing::BackendFactory& make) {
    testing::expect_encoder_forward_moves_only_inputs_and_output(make, "opencl", OpenClTolerance::kEncoder);
  });
}

TEST(OpenClResidency, DecoderForwardDownloadsOnlyEachStepsLogits) {
  AM_REQUIRE_OPENCL_DEVICES(devices);
  on_every_device(devices, [](const testing::BackendFactory& make) {
    testing::expect_decoder_forward_downloads_only_each_steps_logits(make, "opencl", OpenClTolerance::kEncoder);
  });
}

TEST(OpenClResidency, RowRangesInPlaceOpsAndAliasedOperandsGiveTheCpusValues) {
  AM_REQUIRE_OPENCL_DEVICES(devices);
  on_every_device(devices, [](const testing::BackendFactory& make) {
    testing::expect_row_ranges_in_place_ops_and_aliases_give_the_cpus_values(make, OpenClTolerance::kNorm,
                                                                             OpenClTolerance::kTranscendental);
  });
}

TEST(OpenClResidency, HostAccessWithoutTheSyncCallsIsCaught) {
  AM_REQUIRE_OPENCL_DEVICES(devices);
  on_every_device(devices, [](const testing::BackendFactory& make) {
    testing::expect_host_access_without_the_sync_calls_caught(make);
  });
}

TEST(OpenClResidency, TensorOutlivingItsBackendKeepsTheDevicesValues) {
  AM_REQUIRE_OPENCL_DEVICES(devices);
  on_every_device(devices, [](const testing::BackendFactory& make) {
    testing::expect_tensor_outliving_its_backend_keeps_the_devices_values(make);
  });
}

TEST(OpenClResidency, EveryFamilyMovesOnlyItsInputsAndOutputs) {
  AM_REQUIRE_OPENCL_DEVICES(devices);
  on_every_device(devices, [](const testing::BackendFactory& make) {
    testing::expect_every_family_moves_only_inputs_and_outputs(make, "opencl");
  });
}

}  // namespace
}  // namespace am::kernels
