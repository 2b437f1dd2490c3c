#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "kernels/cpu/cpu_features.h"

namespace am::kernels {
namespace {

// Sets ACCELMATRIX_KERNEL_PATH for one scope and restores the previous value.
class ScopedKernelPathEnv {
 public:
  explicit ScopedKernelPathEnv(const char* value) {
    if (const char* old = std::getenv(kKernelPathEnvVar)) saved_ = old;
    had_ = std::getenv(kKernelPathEnvVar) != nullptr;
    setenv(kKernelPathEnvVar, value, 1);
  }
  ~ScopedKernelPathEnv() {
    if (had_) {
      setenv(kKernelPathEnvVar, saved_.c_str(), 1);
    } else {
      unsetenv(kKernelPathEnvVar);
    }
  }

 private:
  bool had_ = false;
  std::string saved_;
};

TEST(KernelPath, ScalarIsAlwaysAvailableAndListedFirst) {
  const auto paths = available_kernel_paths();
  ASSERT_FALSE(paths.empty());
  EXPECT_EQ(paths.front(), KernelPath::kScalar);
  EXPECT_EQ(best_kernel_path(), paths.back());
}

TEST(KernelPath, AvailabilityFollowsCpuid) {
  const CpuFeatures& f = cpu_features();
#if defined(__aarch64__)
  EXPECT_TRUE(kernel_path_available(KernelPath::kNeon));
#else
  EXPECT_FALSE(kernel_path_available(KernelPath::kNeon));
#endif
  EXPECT_EQ(kernel_path_available(KernelPath::kAvx2), f.avx2 && f.fma && f.f16c);
  EXPECT_EQ(kernel_path_available(KernelPath::kAvx512),
            f.avx512f && f.avx512bw && f.avx512vl && f.avx512vnni && f.avx2 && f.fma && f.f16c);
}

TEST(KernelPath, NamesRoundTrip) {
  for (KernelPath p : {KernelPath::kScalar, KernelPath::kAvx2, KernelPath::kAvx512, KernelPath::kNeon}) {
    EXPECT_EQ(kernel_path_from_name(kernel_path_name(p)), p);
  }
  EXPECT_FALSE(kernel_path_from_name("sve").has_value());
}

TEST(KernelPath, EnvironmentForcesEachAvailablePath) {
  for (KernelPath p : available_kernel_paths()) {
    ScopedKernelPathEnv env(std::string(kernel_path_name(p)).c_str());
    const Result<KernelPath> got = select_kernel_path();
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    EXPECT_EQ(*got, p);
  }
}

TEST(KernelPath, EmptyEnvironmentSelectsBestPath) {
  ScopedKernelPathEnv env("");
  const Result<KernelPath> got = select_kernel_path();
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, best_kernel_path());
}

TEST(KernelPath, UnknownForcedPathIsInvalidArgument) {
  ScopedKernelPathEnv env("sse9");
  const Result<KernelPath> got = select_kernel_path();
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(got.status().message().find("sse9"), std::string::npos);
}

TEST(KernelPath, UnavailableForcedPathIsUnsupported) {
  for (KernelPath p : {KernelPath::kAvx2, KernelPath::kAvx512, KernelPath::kNeon}) {
    if (kernel_path_available(p)) continue;
    ScopedKernelPathEnv env(std::string(kernel_path_name(p)).c_str());
    const Result<KernelPath> got = select_kernel_path();
    ASSERT_FALSE(got.ok());
    EXPECT_EQ(got.status().code(), StatusCode::kUnsupported);
    return;
  }
  GTEST_SKIP() << "every kernel path is available on this CPU";
}

}  // namespace
}  // namespace am::kernels
