// ACCELMATRIX_DEVICE_PROFILE (kernels/device_profile.h) on each device backend present: a
// profiled backend reports every kernel of the ops it ran, with their launch counts and device
// time, once; an unprofiled one reports nothing. Skips, with the reason, where a backend has no
// device here.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/device_profile.h"
#include "kernels/rng.h"
#include "kernels/thread_pool.h"
#include "tests/kernels/named_formats.h"

namespace am::kernels::testing {
namespace {

constexpr int kLaunches = 3;

// The backend `name` made with profiling on or off (the variable is read at creation only).
Result<std::unique_ptr<Backend>> make_profiled(const std::string& name, bool profile, const ExecContext& ctx) {
  if (profile) {
    setenv(kDeviceProfileEnv, "1", 1);
  } else {
    unsetenv(kDeviceProfileEnv);
  }
  Result<std::unique_ptr<Backend>> be = make_backend(name, ctx);
  unsetenv(kDeviceProfileEnv);
  return be;
}

// Runs a q8_0 linear with one activation row kLaunches times and waits for it.
Status run_linears(Backend& be, const ExecContext& ctx) {
  Tensor w(Shape{48, 64});
  fill_normal(w.data(), w.numel(), 0.0f, 1.0f, 11, ctx);
  ExecContext device_weights = ctx;
  device_weights.cpu_weights = false;  // GGUF rows, which device backends upload
  const Linear layer = Linear::create(std::move(w), Tensor(), format_named("q8_0"), device_weights);
  Tensor x = be.tensor(Shape{1, 64});
  fill_normal(x.data(), x.numel(), 0.0f, 1.0f, 12, ctx);
  AM_RETURN_IF_ERROR(be.from_host(x.view()));
  Tensor y = be.tensor(Shape{1, 48});
  for (int i = 0; i < kLaunches; ++i) AM_RETURN_IF_ERROR(be.linear(layer, x.view(), y.view()));
  return be.synchronize();
}

const DeviceKernelTime* find_kernel(const std::vector<DeviceKernelTime>& p, const std::string& prefix) {
  for (const DeviceKernelTime& k : p) {
    if (k.kernel.rfind(prefix, 0) == 0) return &k;
  }
  return nullptr;
}

class DeviceProfileTest : public ::testing::TestWithParam<std::string> {};

TEST_P(DeviceProfileTest, AProfiledBackendReportsEachKernelOfItsOpsOnce) {
  ThreadPool pool(1);
  const ExecContext ctx{best_kernel_path(), &pool};
  Result<std::unique_ptr<Backend>> be = make_profiled(GetParam(), true, ctx);
  if (!be.ok()) GTEST_SKIP() << GetParam() << " not here: " << be.status().message();
  ASSERT_TRUE(run_linears(**be, ctx).ok());
  const std::vector<DeviceKernelTime> profile = (*be)->take_device_profile();
  // Both backends quantize the activations to q8 blocks, then run the block product: one
  // launch of each per linear.
  const DeviceKernelTime* quantize = find_kernel(profile, "quantize_q8");
  const std::string product = GetParam() == "vulkan" ? "gemv_q8_0" : "matmul_q8_0";
  const DeviceKernelTime* matmul = find_kernel(profile, product);
  ASSERT_NE(quantize, nullptr) << "no quantize_q8 in the profile";
  ASSERT_NE(matmul, nullptr) << "no " << product << " in the profile";
  EXPECT_EQ(quantize->calls, kLaunches);
  EXPECT_EQ(matmul->calls, kLaunches);
  EXPECT_GT(matmul->seconds, 0.0);
  for (std::size_t i = 1; i < profile.size(); ++i) EXPECT_GE(profile[i - 1].seconds, profile[i].seconds) << "largest first";
  EXPECT_TRUE((*be)->take_device_profile().empty()) << "a take clears what it handed out";
}

TEST_P(DeviceProfileTest, AnUnprofiledBackendReportsNothing) {
  ThreadPool pool(1);
  const ExecContext ctx{best_kernel_path(), &pool};
  Result<std::unique_ptr<Backend>> be = make_profiled(GetParam(), false, ctx);
  if (!be.ok()) GTEST_SKIP() << GetParam() << " not here: " << be.status().message();
  ASSERT_TRUE(run_linears(**be, ctx).ok());
  EXPECT_TRUE((*be)->take_device_profile().empty());
}

INSTANTIATE_TEST_SUITE_P(DeviceBackends, DeviceProfileTest, ::testing::Values("vulkan", "opencl"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

}  // namespace
}  // namespace am::kernels::testing
