// The OpenCL backend beyond the op harness (tests/kernels/backend_ops/, which holds every op and
// format to the cpu reference): device listing and selection, supports() (f16 only with
// cl_khr_fp16) and weight caching, on every OpenCL device present.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tests/kernels/named_formats.h"
#include "kernels/cpu/attention_bias.h"
#include "kernels/backend.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/linear.h"
#include "kernels/opencl/opencl_backend.h"
#include "kernels/formats/weight_format.h"
#include "tests/kernels/opencl_test_util.h"
#include "tests/kernels/test_util.h"

namespace am::kernels {
namespace {

using testing::all_finite;
using testing::nmse;
using testing::OpenClTolerance;
using testing::poison;
using testing::random_tensor;
using testing::scalar_context;

// One backend per device for the whole binary: building the program is the slow part on PoCL.
// Each case drops the cached weights of the previous one (their addresses get reused).
OpenClBackend& backend_for(const opencl::OpenClDevice& device, bool f16_anywhere = false) {
  static std::map<std::string, std::unique_ptr<OpenClBackend>> backends;
  const std::string key = device.label() + (f16_anywhere ? "/f16" : "");
  auto it = backends.find(key);
  if (it == backends.end()) {
    OpenClBackendOptions options;
    options.f16_without_extension = f16_anywhere;
    Result<std::unique_ptr<OpenClBackend>> be = OpenClBackend::create(device, options);
    EXPECT_TRUE(be.ok()) << be.status().message();
    if (!be.ok()) std::abort();
    it = backends.emplace(key, std::move(be).value()).first;
  }
  it->second->release_cached_weights();
  return *it->second;
}

TEST(OpenClDevices, ListsEveryDeviceWithNameAndLimits) {
  AM_REQUIRE_OPENCL_DEVICES(devices);
  ASSERT_FALSE(devices.empty());
  for (const opencl::OpenClDevice& d : devices) {
    EXPECT_FALSE(d.name.empty());
    EXPECT_FALSE(d.platform_name.empty());
    EXPECT_GT(d.max_alloc_bytes, 0u);
    EXPECT_GT(d.max_work_group_size, 0u);
    EXPECT_NE(d.label().find(d.name), std::string::npos);
  }
  Result<opencl::OpenClDevice> picked = opencl::select_opencl_device();
  ASSERT_TRUE(picked.ok()) << picked.status().message();
}

TEST(OpenClDevices, MalformedDeviceVariableIsRejectedByName) {
  AM_REQUIRE_OPENCL_DEVICES(devices);
  ASSERT_EQ(setenv(opencl::kOpenClDeviceEnv, "gpu", 1), 0);
  Result<opencl::OpenClDevice> bad = opencl::select_opencl_device();
  ASSERT_EQ(setenv(opencl::kOpenClDeviceEnv, "97:0", 1), 0);
  Result<opencl::OpenClDevice> missing = opencl::select_opencl_device();
  ASSERT_EQ(setenv(opencl::kOpenClDeviceEnv, "0:0", 1), 0);
  Result<opencl::OpenClDevice> first = opencl::select_opencl_device();
  unsetenv(opencl::kOpenClDeviceEnv);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find(opencl::kOpenClDeviceEnv), std::string::npos);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("97:0"), std::string::npos);
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_EQ(first->platform_index, 0);
}

TEST(OpenClBackend, MakeBackendNamesOpenClAndItsDevice) {
  AM_REQUIRE_OPENCL_DEVICES(devices);
  Result<std::unique_ptr<Backend>> be = make_backend("opencl", scalar_context());
  ASSERT_TRUE(be.ok()) << be.status().message();
  EXPECT_EQ((*be)->name(), "opencl");
  EXPECT_FALSE((*be)->device_name().empty());
}

TEST(OpenClBackend, SupportsEveryOpAndFormatButF16WithoutTheExtension) {
  AM_REQUIRE_OPENCL_DEVICES(devices);
  for (const opencl::OpenClDevice& device : devices) {
    OpenClBackend& be = backend_for(device);
    for (WeightFormat f : all_weight_formats()) {
      const std::string name(weight_format_name(f));
      const Status s = be.supports(Op::kLinear, f);
      if (name == "f16" && !device.has_extension("cl_khr_fp16")) {
        ASSERT_FALSE(s.ok());
        EXPECT_EQ(s.code(), StatusCode::kUnsupported);
        EXPECT_EQ(s.message(), "precision f16 needs cl_khr_fp16 on device " + device.name);
      } else {
        EXPECT_TRUE(s.ok()) << name << ": " << s.message();
      }
      // supports_on() is what the worker's probe advertises: the same answer without a context.
      EXPECT_EQ(OpenClBackend::supports_on({device.name, device.has_extension("cl_khr_fp16"), false}, Op::kLinear, f)
                    .message(),
                s.message());
    }
    for (Op op : {Op::kGatherRows, Op::kLayerNorm, Op::kRmsNorm, Op::kActivation, Op::kAdd, Op::kMul,
                  Op::kSoftmax, Op::kAttention, Op::kAttentionBias, Op::kRope, Op::kIndexRows,
                  Op::kScatterAddRows, Op::kTopK, Op::kMatmulNt, Op::kGlobalAvgPool, Op::kConv1d,
                  Op::kConv2d, Op::kGroupNorm, Op::kPool2d, Op::kSelectiveScan, Op::kTimeMix}) {
      EXPECT_TRUE(be.supports(op).ok()) << op_name(op);
    }
  }
}



// The two float-matmul kernels (cl_kernels.h, KernelConfig::column_matmul: one output column
// per work-item on CPU devices, four on GPUs) are forced in turn on the first device: each
// matches the cpu scalar reference, and the two give the same bits (both sum k in order).
// The op harness runs only the variant the device picks, so the GPU one is held here on PoCL.
TEST(OpenClBackend, ColumnAndFourColumnFloatMatmulsAgreeWithTheCpu) {
  AM_REQUIRE_OPENCL_DEVICES(devices);
  struct Shape3 {
    int64_t m, k, n;
  };
  const Shape3 shapes[] = {{1, 96, 33}, {7, 160, 65}, {37, 96, 19}, {130, 224, 131}, {2, 4128, 37}};
  CpuBackend cpu(scalar_context());
  std::unique_ptr<OpenClBackend> variants[2];
  for (int column = 0; column < 2; ++column) {
    OpenClBackendOptions options;
    options.f16_without_extension = true;
    options.column_matmul = column == 1;
    Result<std::unique_ptr<OpenClBackend>> be = OpenClBackend::create(devices.front(), options);
    ASSERT_TRUE(be.ok()) << be.status().message();
    variants[column] = std::move(be).value();
  }
  uint32_t seed = 900;
  for (const char* name : {"f32", "f16", "bf16"}) {
    for (const Shape3& s : shapes) {
      SCOPED_TRACE(std::string(name) + " " + std::to_string(s.m) + "x" + std::to_string(s.k) + "x" + std::to_string(s.n));
      const Linear layer = Linear::create(random_tensor(Shape{s.n, s.k}, ++seed, 0.5f), random_tensor(Shape{s.n}, ++seed),
                                          format_named(name), scalar_context());
      const Tensor x = random_tensor(Shape{s.m, s.k}, ++seed);
      Tensor ref(Shape{s.m, s.n});
      ASSERT_TRUE(cpu.linear(layer, x.view(), ref.view()).ok());
      Tensor got[2] = {Tensor(Shape{s.m, s.n}), Tensor(Shape{s.m, s.n})};
      for (int column = 0; column < 2; ++column) {
        poison(got[column].view());
        const Status st = variants[column]->linear(layer, x.view(), got[column].view());
        ASSERT_TRUE(st.ok()) << st.message();
        ASSERT_TRUE(testing::all_finite(got[column].view()));
        EXPECT_LE(testing::nmse(got[column].view(), ref.view()), OpenClTolerance::kFloatMatmul) << "column " << column;
        variants[column]->release_cached_weights();
      }
      EXPECT_EQ(std::memcmp(got[0].data(), got[1].data(), got[0].bytes()), 0);
    }
  }
}

TEST(OpenClBackend, CachesEachWeightOnceAndReleasesOnRequest) {
  AM_REQUIRE_OPENCL_DEVICES(devices);
  OpenClBackend& be = backend_for(devices.front());
  const ExecContext ctx = scalar_context();
  EXPECT_EQ(be.cached_weight_bytes(), 0u);
  const Linear layer = Linear::create(random_tensor(Shape{16, 64}, 800), random_tensor(Shape{16}, 801),
                                      WeightFormat::kQ8_0, ctx);
  const Tensor x = random_tensor(Shape{3, 64}, 802);
  Tensor y(Shape{3, 16});
  ASSERT_TRUE(be.linear(layer, x.view(), y.view()).ok());
  const std::size_t once = be.cached_weight_bytes();
  // q8_0 repacked: 16 rows x 2 blocks x (32 values + 4-byte scale) + 16 bias floats.
  EXPECT_EQ(once, 16u * 2u * (32u + 4u) + 16u * 4u);
  ASSERT_TRUE(be.linear(layer, x.view(), y.view()).ok());
  EXPECT_EQ(be.cached_weight_bytes(), once);
  be.release_cached_weights();
  EXPECT_EQ(be.cached_weight_bytes(), 0u);
}

}  // namespace
}  // namespace am::kernels
