// Shared by the Vulkan tests: the device to test (the one select_vulkan_device() picks), or a
// skip with the reason; NMSE limits of every op against the cpu scalar reference.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "kernels/accuracy.h"
#include "kernels/resident_tensors.h"
#include "kernels/vulkan/vk_device.h"
#include "kernels/vulkan/vulkan_backend.h"

namespace am::kernels::testing {

// The shaders use the reference's formulas (the q8 activation quantization bit for bit, the
// same int32 block sums); what remains is float summation order (trees, tiles) and the device's
// exp/tanh and our erf (|error| < 1.2e-7), ~1e-14..1e-12 in NMSE on these shapes. The limits are
// the OpenCL backend's: two to three decades of margin, many decades below any real defect.
struct VulkanTolerance {
  static constexpr double kElementwise = 1e-12;
  static constexpr double kTranscendental = 1e-10;
  static constexpr double kNorm = 1e-10;
  static constexpr double kFloatMatmul = 1e-10;
  // f16 GEMM on matrix units (gemm_coopmat.comp) rounds the activations to f16: a relative error
  // up to 2^-11 per element, ~1e-7 in NMSE; the limit keeps a decade of margin.
  static constexpr double kF16ActivationMatmul = 1e-6;
  static constexpr double kQuantMatmul = 1e-10;
  static constexpr double kAttention = 1e-10;  // online softmax vs two-pass
  // Convolutions: the cpu's order where it has one (direct, grouped), OpenBLAS's im2col GEMM
  // otherwise: float summation order only.
  static constexpr double kConvolution = 1e-10;
  // selective_scan / time_mix: the device's exp (a few ULP) carried through the recurrence.
  static constexpr double kRecurrence = 1e-10;
  // The whole encoder: every op above, compounded through layers and LayerNorms.
  static constexpr double kEncoder = 1e-8;
};

// The device every test runs on, or the reason there is none (no loader, no ICD: the sanitizer
// stage's VK_ICD_FILENAMES=/nonexistent/x.json; or a device the backend refuses, e.g. one with
// fewer than 256 invocations per work-group). Any other failure is a broken installation.
// Every backend the tests make (run_job's included) checks residency: a graph that reads a
// device-resident tensor without to_host() or writes one without from_host() fails its test
// (resident_tensors.h).
inline Result<vulkan::VulkanDeviceInfo> vulkan_device_or_reason() {
  setenv(kResidencyChecksEnv, "1", 0);
  Result<vulkan::VulkanDeviceInfo> device = vulkan::select_vulkan_device();
  if (!device.ok()) return device;
  // Asked once per test binary: can the backend run on it at all?
  static const Status usable = [&] {
    Result<std::unique_ptr<VulkanBackend>> be = VulkanBackend::create(*device);
    return be.ok() ? Status::Ok() : be.status();
  }();
  if (!usable.ok()) return usable;
  return device;
}

#define AM_REQUIRE_VULKAN_DEVICE(device)                                                          \
  auto device##_result = ::am::kernels::testing::vulkan_device_or_reason();                       \
  if (!device##_result.ok()) {                                                                     \
    if (device##_result.status().code() != ::am::StatusCode::kUnsupported) {                       \
      FAIL() << device##_result.status().to_string();                                              \
    }                                                                                               \
    GTEST_SKIP() << "no Vulkan device here (" << device##_result.status().message()                \
                 << "); install mesa-vulkan-drivers (lavapipe; ops/setup.sh does) to run the Vulkan tests"; \
  }                                                                                                 \
  const ::am::kernels::vulkan::VulkanDeviceInfo& device = *device##_result;                        \
  (void)device

// One backend for the whole binary (pipelines are built once); each use drops the cached
// weights of the previous case, whose addresses get reused.
// The shared backend is destroyed when the tests end (a GoogleTest environment's TearDown), not
// by a static destructor at exit: NVIDIA's driver tears itself down in its own exit handler,
// and a device destroyed after that crashed the test binary (SIGSEGV) on an H200.
inline std::unique_ptr<VulkanBackend>& shared_vulkan_backend() {
  static std::unique_ptr<VulkanBackend> backend;
  return backend;
}

class ReleaseVulkanBackendAtTearDown : public ::testing::Environment {
 public:
  void TearDown() override { shared_vulkan_backend().reset(); }
};

inline VulkanBackend& vulkan_backend_for(const vulkan::VulkanDeviceInfo& device) {
  std::unique_ptr<VulkanBackend>& backend = shared_vulkan_backend();
  if (!backend) {
    static ::testing::Environment* const registered =
        ::testing::AddGlobalTestEnvironment(new ReleaseVulkanBackendAtTearDown);
    (void)registered;
    Result<std::unique_ptr<VulkanBackend>> be = VulkanBackend::create(device);
    EXPECT_TRUE(be.ok()) << be.status().message();
    if (!be.ok()) std::abort();
    backend = std::move(be).value();
  }
  backend->release_cached_weights();
  return *backend;
}

}  // namespace am::kernels::testing
