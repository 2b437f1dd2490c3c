// The Vulkan backend beyond the op harness (tests/kernels/backend_ops/, which holds every op and
// format to the cpu reference): device selection, supports() and its limits, host inputs,
// staging and integer-dot variants giving the same bits, bit-exact single-block dot products,
// weight packing and caching, on the selected Vulkan device (lavapipe in CI). Every test skips
// with its reason when no Vulkan device is present.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/linear.h"
#include "kernels/cpu/selective_scan.h"
#include "kernels/formats/weight_format.h"
#include "kernels/vulkan/vk_ops.h"
#include "kernels/vulkan/vk_weights.h"
#include "tests/kernels/named_formats.h"
#include "tests/kernels/test_util.h"
#include "tests/kernels/vulkan_test_util.h"

namespace am::kernels {
namespace {

using testing::all_finite;
using testing::poison;
using testing::random_tensor;
using testing::VulkanTolerance;
using testing::vulkan_backend_for;

ExecContext scalar_context() { return ExecContext{KernelPath::kScalar, nullptr}; }

// An op's host inputs (host_input()) keep their buffer and bytes through a submit made in the
// middle of the op (a staged upload), and a later host input never gets one of them, until
// recycle_host_inputs() between ops; then they are reused.
TEST(VulkanDevices, HostInputsStayValidAcrossASubmitUntilRecycled) {
  AM_REQUIRE_VULKAN_DEVICE(device);
  Result<std::unique_ptr<vulkan::VulkanDevice>> dev = vulkan::VulkanDevice::create(device);
  ASSERT_TRUE(dev.ok()) << dev.status().message();
  const std::vector<int32_t> first = {3, 1, 4, 1, 5, 9, 2, 6};
  const std::vector<int32_t> second = {2, 7, 1, 8, 2, 8, 1, 8};
  Result<const vulkan::Buffer*> a = (*dev)->host_input(first.data(), first.size() * sizeof(int32_t));
  ASSERT_TRUE(a.ok()) << a.status().message();
  const VkBuffer a_handle = (*a)->get();
  Result<vulkan::Buffer> other = (*dev)->create_buffer(64);
  ASSERT_TRUE(other.ok());
  ASSERT_TRUE((*dev)->upload(*other, second.data(), second.size() * sizeof(int32_t)).ok());  // submits
  Result<const vulkan::Buffer*> b = (*dev)->host_input(second.data(), second.size() * sizeof(int32_t));
  ASSERT_TRUE(b.ok());
  EXPECT_NE((*b)->get(), a_handle);
  EXPECT_EQ((*a)->get(), a_handle);
  ASSERT_NE((*a)->mapped, nullptr);
  EXPECT_EQ(std::memcmp((*a)->mapped, first.data(), first.size() * sizeof(int32_t)), 0);
  ASSERT_FALSE((*dev)->pending());
  const VkBuffer b_handle = (*b)->get();
  (*dev)->recycle_host_inputs();  // a and b are dangling from here
  Result<const vulkan::Buffer*> c = (*dev)->host_input(first.data(), first.size() * sizeof(int32_t));
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE((*c)->get() == a_handle || (*c)->get() == b_handle);
}

TEST(VulkanDevices, SelectsADeviceAndHonoursTheIndexVariable) {
  AM_REQUIRE_VULKAN_DEVICE(device);
  EXPECT_FALSE(device.name.empty());
  EXPECT_GT(device.max_storage_buffer_range, 0u);
  EXPECT_NE(device.label().find(device.name), std::string::npos);
  if (device.type == VK_PHYSICAL_DEVICE_TYPE_CPU) {
    EXPECT_TRUE(device.software);
  }
  // The variable as the user set it, put back afterwards (a GPU machine may pick its device so).
  const char* set_before = std::getenv(vulkan::kVulkanDeviceEnv);
  const std::string before = set_before != nullptr ? set_before : "";
  ASSERT_EQ(setenv(vulkan::kVulkanDeviceEnv, "gpu", 1), 0);
  Result<vulkan::VulkanDeviceInfo> bad = vulkan::select_vulkan_device();
  ASSERT_EQ(setenv(vulkan::kVulkanDeviceEnv, "97", 1), 0);
  Result<vulkan::VulkanDeviceInfo> missing = vulkan::select_vulkan_device();
  ASSERT_EQ(setenv(vulkan::kVulkanDeviceEnv, std::to_string(device.index).c_str(), 1), 0);
  Result<vulkan::VulkanDeviceInfo> same = vulkan::select_vulkan_device();
  if (set_before != nullptr) {
    setenv(vulkan::kVulkanDeviceEnv, before.c_str(), 1);
  } else {
    unsetenv(vulkan::kVulkanDeviceEnv);
  }
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find(vulkan::kVulkanDeviceEnv), std::string::npos);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("97"), std::string::npos);
  ASSERT_TRUE(same.ok()) << same.status().message();
  EXPECT_EQ(same->name, device.name);
}

TEST(VulkanBackend, MakeBackendNamesVulkanAndItsDevice) {
  AM_REQUIRE_VULKAN_DEVICE(device);
  Result<std::unique_ptr<Backend>> be = make_backend("vulkan", scalar_context());
  ASSERT_TRUE(be.ok()) << be.status().message();
  EXPECT_EQ((*be)->name(), "vulkan");
  EXPECT_NE((*be)->device_name().find(device.name), std::string::npos);
}

TEST(VulkanBackend, QuantizedLinearIsBitExactWithCpuOnOneBlockPerRow) {
  // One block per row: the cpu's float sum has a single term, so any difference would come from
  // the activation quants or scales, which must be the cpu's bits (div_rn in common.glsl).
  AM_REQUIRE_VULKAN_DEVICE(device);
  const ExecContext ctx = scalar_context();
  CpuBackend cpu(ctx);
  VulkanBackend& be = vulkan_backend_for(device);
  for (const char* name : {"q8_0", "q4_0"}) {
    be.release_cached_weights();
    const Linear layer = Linear::create(random_tensor(Shape{37, 32}, 5), Tensor(), format_named(name), ctx);
    const Tensor x = random_tensor(Shape{9, 32}, 6, 2.0f);
    Tensor ref(Shape{9, 37}), y(Shape{9, 37});
    ASSERT_TRUE(cpu.linear(layer, x.view(), ref.view()).ok());
    ASSERT_TRUE(be.linear(layer, x.view(), y.view()).ok());
    EXPECT_EQ(std::memcmp(y.data(), ref.data(), y.bytes()), 0) << name;
  }
}

TEST(VulkanBackend, SupportsEveryOpAndEveryWeightFormat) {
  AM_REQUIRE_VULKAN_DEVICE(device);
  VulkanBackend& be = vulkan_backend_for(device);
  for (WeightFormat f : all_weight_formats()) {
    const Status s = be.supports(Op::kLinear, f);
    EXPECT_TRUE(s.ok()) << weight_format_name(f) << ": " << s.message();
    // supports_on() is what the worker's probe advertises: the same answer without a device.
    EXPECT_EQ(VulkanBackend::supports_on({device.name}, Op::kLinear, f).message(), s.message());
  }
  for (Op op : {Op::kGatherRows, Op::kLayerNorm, Op::kRmsNorm, Op::kActivation, Op::kAdd, Op::kMul, Op::kSoftmax,
                Op::kAttention, Op::kAttentionBias, Op::kRope, Op::kIndexRows, Op::kScatterAddRows, Op::kTopK,
                Op::kMatmulNt, Op::kGlobalAvgPool, Op::kConv1d, Op::kConv2d, Op::kGroupNorm, Op::kPool2d,
                Op::kSelectiveScan, Op::kTimeMix}) {
    EXPECT_TRUE(be.supports(op).ok()) << op_name(op);
  }
  // The probe advertises every precision the backend runs, the k-quants included.
  const std::vector<Precision> advertised = supported_precisions(
      [&](Op op, WeightFormat f) { return VulkanBackend::supports_on({device.name}, op, f); });
  for (const char* p : {"q2_k", "q3_k", "q4_0", "mixed"}) {
    EXPECT_NE(std::find(advertised.begin(), advertised.end(), precision_named(p)), advertised.end()) << p;
  }
}

TEST(VulkanBackend, SelectiveScanBeyondTheWorkGroupIsUnsupportedNamingTheLimit) {
  AM_REQUIRE_VULKAN_DEVICE(device);
  VulkanBackend& be = vulkan_backend_for(device);
  const int64_t state = vulkan::kScanMaxState + 1;
  const Tensor u = random_tensor(Shape{2, 3}, 1);
  const Tensor bc = random_tensor(Shape{2, state}, 2);
  const Tensor a = random_tensor(Shape{3, state}, 3);
  Tensor y(Shape{2, 3});
  SelectiveScanArgs args;
  args.u = u.view();
  args.delta = u.view();
  args.B = bc.view();
  args.C = bc.view();
  args.y = y.view();
  args.A = a.data();
  args.len = 2;
  args.channels = 3;
  args.state_size = state;
  const Status s = be.selective_scan(args);
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_EQ(s.message(), "op selective_scan (state_size 257 above 256) not implemented on backend vulkan");
}

TEST(VulkanBackend, StagingTransfersGiveTheSameBitsAsMappedBuffers) {
  // A discrete GPU's buffers are not host-visible: every transfer goes through the staging
  // buffer and vkCmdCopyBuffer. Forcing that path on lavapipe checks it against the mapped one.
  AM_REQUIRE_VULKAN_DEVICE(device);
  const ExecContext ctx = scalar_context();
  vulkan::VulkanDeviceOptions staged;
  staged.staging_transfers = true;
  Result<std::unique_ptr<VulkanBackend>> be = VulkanBackend::create(device, staged);
  ASSERT_TRUE(be.ok()) << be.status().message();
  VulkanBackend& mapped = vulkan_backend_for(device);
  for (const char* name : {"f16", "q4_1"}) {
    for (int64_t m : {1, 40}) {
      SCOPED_TRACE(std::string(name) + " m=" + std::to_string(m));
      const Linear layer = Linear::create(random_tensor(Shape{70, 100}, 31), random_tensor(Shape{70}, 32),
                                          format_named(name), ctx);
      const Tensor x = random_tensor(Shape{m, 100}, 33);
      Tensor a(Shape{m, 70}), b(Shape{m, 70});
      poison(b.view());
      ASSERT_TRUE(mapped.linear(layer, x.view(), a.view()).ok());
      const Status s = (*be)->linear(layer, x.view(), b.view());
      ASSERT_TRUE(s.ok()) << s.message();
      EXPECT_EQ(std::memcmp(a.data(), b.data(), a.bytes()), 0);
      mapped.release_cached_weights();
      (*be)->release_cached_weights();
    }
  }
  Tensor x = random_tensor(Shape{5, 300}, 34);
  const Tensor gamma = random_tensor(Shape{300}, 35);
  Tensor a(x.shape()), b(x.shape());
  ASSERT_TRUE(mapped.rms_norm(x.view(), gamma.data(), 1e-6f, a.view()).ok());
  ASSERT_TRUE((*be)->rms_norm(x.view(), gamma.data(), 1e-6f, b.view()).ok());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.bytes()), 0);
}

TEST(VulkanBackend, IntegerDotShadersGiveThePortableShadersBits) {
  // q8_0/q4_0/q4_1 use OpSDot where the device enables integer dot products (lavapipe does).
  // The block sums are integers either way and the float arithmetic around them is the same, so
  // the two variants must agree to the bit; q4_0's offset is taken off through the activation sums.
  AM_REQUIRE_VULKAN_DEVICE(device);
  if (!device.int_dot || vulkan::portable_shaders_forced()) {
    GTEST_SKIP() << "no integer dot products on " << device.label();
  }
  const ExecContext ctx = scalar_context();
  vulkan::VulkanDeviceOptions portable_only;
  portable_only.portable_shaders = true;
  Result<std::unique_ptr<VulkanBackend>> portable = VulkanBackend::create(device, portable_only);
  ASSERT_TRUE(portable.ok()) << portable.status().message();
  VulkanBackend& dot = vulkan_backend_for(device);
  uint32_t seed = 700;
  for (const char* name : {"q8_0", "q4_0", "q4_1"}) {
    for (const auto& [m, k, n] : {std::array<int64_t, 3>{1, 32, 5}, {1, 1000, 77}, {3, 4096, 40}, {17, 200, 33}}) {
      SCOPED_TRACE(std::string(name) + " m=" + std::to_string(m) + " k=" + std::to_string(k) + " n=" + std::to_string(n));
      seed += 3;
      const Linear layer = Linear::create(random_tensor(Shape{n, k}, seed, 0.5f), random_tensor(Shape{n}, seed + 1),
                                          format_named(name), ctx);
      const Tensor x = random_tensor(Shape{m, k}, seed + 2, 2.0f);
      Tensor a(Shape{m, n}), b(Shape{m, n});
      poison(a.view());
      poison(b.view());
      ASSERT_TRUE(dot.linear(layer, x.view(), a.view()).ok());
      const Status st = (*portable)->linear(layer, x.view(), b.view());
      ASSERT_TRUE(st.ok()) << st.message();
      ASSERT_TRUE(all_finite(a.view()));
      EXPECT_EQ(std::memcmp(a.data(), b.data(), a.bytes()), 0);
      dot.release_cached_weights();
      (*portable)->release_cached_weights();
    }
  }
}

TEST(VulkanBackend, CachesEachWeightOnceAndReleasesOnRequest) {
  AM_REQUIRE_VULKAN_DEVICE(device);
  const ExecContext ctx = scalar_context();
  VulkanBackend& be = vulkan_backend_for(device);
  const Linear layer = Linear::create(random_tensor(Shape{40, 64}, 1), random_tensor(Shape{40}, 2),
                                      WeightFormat::kQ4_0, ctx);
  const Tensor x = random_tensor(Shape{3, 64}, 3);
  Tensor y(Shape{3, 40});
  ASSERT_TRUE(be.linear(layer, x.view(), y.view()).ok());
  const std::size_t once = be.cached_weight_bytes();
  // 40 rows x 2 blocks x 18 bytes, plus the f32 bias.
  EXPECT_EQ(once, 40u * 2u * 18u + 40u * sizeof(float));
  ASSERT_TRUE(be.linear(layer, x.view(), y.view()).ok());
  EXPECT_EQ(be.cached_weight_bytes(), once);
  be.release_cached_weights();
  EXPECT_EQ(be.cached_weight_bytes(), 0u);
}

TEST(VulkanWeights, MatrixVectorRowsSpreadOverMoreInvocationsWhenLong) {
  EXPECT_EQ(vulkan::matvec_lanes(1), 32u);
  EXPECT_EQ(vulkan::matvec_lanes(128), 32u);   // q4_0 at K = 4096: four blocks per invocation
  EXPECT_EQ(vulkan::matvec_lanes(129), 64u);
  EXPECT_EQ(vulkan::matvec_lanes(448), 128u);  // K = 14336
  EXPECT_EQ(vulkan::matvec_lanes(100000), vulkan::kMatvecGroup);
}

TEST(VulkanWeights, PackingKeepsGgufBytesAndRejectsWrongSizes) {
  // Pure host code: runs with or without a device.
  const ExecContext ctx = scalar_context();
  const Linear layer = Linear::create(random_tensor(Shape{3, 40}, 9), Tensor(), WeightFormat::kQ4_1, ctx);
  Result<vulkan::PackedWeight> p = vulkan::pack_weight(vulkan::WeightKind::kQ4_1, layer.weight_data(),
                                                       layer.weight_data_bytes(), 3, 40);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->padded, 2);
  EXPECT_EQ(p->values.size(), 3u * 2u * 16u);
  const auto* raw = static_cast<const uint8_t*>(layer.weight_data());
  uint16_t d = 0, m = 0;
  std::memcpy(&d, raw + 20, 2);  // block 1 of row 0
  std::memcpy(&m, raw + 22, 2);
  EXPECT_EQ(p->scales[1], d);
  EXPECT_EQ(p->mins[1], m);
  EXPECT_EQ(std::memcmp(p->values.data() + 16, raw + 24, 16), 0);
  Result<vulkan::PackedWeight> wrong = vulkan::pack_weight(vulkan::WeightKind::kQ4_1, layer.weight_data(),
                                                           layer.weight_data_bytes() - 1, 3, 40);
  EXPECT_EQ(wrong.status().code(), StatusCode::kInvalidArgument);
  const Linear f16 = Linear::create(random_tensor(Shape{2, 13}, 10), Tensor(), WeightFormat::kF16, ctx);
  Result<vulkan::PackedWeight> h = vulkan::pack_weight(vulkan::WeightKind::kF16, f16.weight_data(),
                                                       f16.weight_data_bytes(), 2, 13);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->padded, 16);  // 13 halves padded to two 16-byte chunks
  EXPECT_EQ(h->values.size(), 2u * 16u * 2u);
}

TEST(VulkanWeights, KQuantPackingKeepsGgufBytesWithTheHalvesSplitOut) {
  // Pure host code. q2_k (84-byte blocks: scales[16], qs[64], d, dmin) moves qs before scales;
  // q3_k (110 bytes: hmask[32], qs[64], scales[12], d) keeps its payload; the halves go to
  // scales (and q2_k's dmin to mins). Row 1, block 1 of a 2 x 300 weight (two super-blocks).
  const ExecContext ctx = scalar_context();
  for (WeightFormat format : {WeightFormat::kQ2_K, WeightFormat::kQ3_K}) {
    SCOPED_TRACE(std::string(weight_format_name(format)));
    const Linear layer = Linear::create(random_tensor(Shape{2, 300}, 11), Tensor(), format, ctx);
    const vulkan::WeightKind kind = *vulkan::weight_kind_for(format);
    Result<vulkan::PackedWeight> p =
        vulkan::pack_weight(kind, layer.weight_data(), layer.weight_data_bytes(), 2, 300);
    ASSERT_TRUE(p.ok()) << p.status().message();
    EXPECT_EQ(p->padded, 2);
    const bool q2 = format == WeightFormat::kQ2_K;
    const std::size_t block = q2 ? 84 : 110, payload = q2 ? 80 : 108;
    EXPECT_EQ(p->values.size(), 4 * payload);
    EXPECT_EQ(p->scales.size(), 4u);
    EXPECT_EQ(p->mins.size(), q2 ? 4u : 0u);
    const uint8_t* raw = static_cast<const uint8_t*>(layer.weight_data()) + 3 * block;
    const uint8_t* packed = p->values.data() + 3 * payload;
    if (q2) {
      EXPECT_EQ(std::memcmp(packed, raw + 16, 64), 0);
      EXPECT_EQ(std::memcmp(packed + 64, raw, 16), 0);
      EXPECT_EQ(std::memcmp(&p->mins[3], raw + 82, 2), 0);
    } else {
      EXPECT_EQ(std::memcmp(packed, raw, 108), 0);
    }
    EXPECT_EQ(std::memcmp(&p->scales[3], raw + payload, 2), 0);
    EXPECT_EQ(vulkan::pack_weight(kind, layer.weight_data(), layer.weight_data_bytes() - block, 2, 300).status().code(),
              StatusCode::kInvalidArgument);
  }
}

}  // namespace
}  // namespace am::kernels
