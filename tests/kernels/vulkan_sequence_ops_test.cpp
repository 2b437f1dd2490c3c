// Rope, routing (top_k, index_rows, scatter_add_rows), matmul_nt and global_avg_pool on the
// Vulkan backend against the cpu scalar reference. Skips without a Vulkan device.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/rope.h"
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

double nmse(ConstTensorView y, ConstTensorView ref) {
  return compare_outputs(y.data, ref.data, ref.rows(), ref.cols()).nmse;
}

TEST(VulkanBackend, RopeMatchesCpuInBothLayoutsWithPartialRotaryAndLongPositions) {
  AM_REQUIRE_VULKAN_DEVICE(device);
  CpuBackend cpu(scalar_context());
  {
    VulkanBackend& be = vulkan_backend_for(device);
    for (RopeLayout layout : {RopeLayout::kNeox, RopeLayout::kGptj}) {
      for (int64_t rotary : {int64_t{0}, int64_t{16}}) {
        SCOPED_TRACE(std::string(rope_layout_name(layout)) + " rotary " +
                     std::to_string(rotary));
        RopeParams p;
        p.heads = 3;
        p.head_dim = 24;
        p.rotary_dim = rotary;
        p.theta = 10000.0f;
        p.layout = layout;
        const Tensor x = random_tensor(Shape{7, 72}, 900);
        std::vector<int32_t> positions = {0, 1, 2, 17, 511, 4095, 100000};
        Tensor ref = x.clone(), y = x.clone();
        ASSERT_TRUE(cpu.rope(ref.view(), positions.data(), p).ok());
        ASSERT_TRUE(be.rope(y.view(), positions.data(), p).ok());
        ASSERT_TRUE(all_finite(y.view()));
        EXPECT_LE(nmse(y.view(), ref.view()), VulkanTolerance::kElementwise);
      }
    }
    RopeParams bad;
    bad.heads = 2;
    bad.head_dim = 8;
    bad.rotary_dim = 3;
    Tensor x(Shape{1, 16});
    std::vector<int32_t> pos = {0};
    EXPECT_EQ(be.rope(x.view(), pos.data(), bad).code(), StatusCode::kInvalidArgument);
  }
}

TEST(VulkanBackend, RoutingOpsMatchCpuWithRepeatedIds) {
  AM_REQUIRE_VULKAN_DEVICE(device);
  CpuBackend cpu(scalar_context());
  {
    VulkanBackend& be = vulkan_backend_for(device);
    const Tensor logits = random_tensor(Shape{13, 8}, 920, 2.0f);
    for (int64_t k : {int64_t{1}, int64_t{2}, int64_t{8}}) {
      for (bool renormalize : {false, true}) {
        std::vector<int32_t> ref_ids(static_cast<std::size_t>(13 * k)), ids(ref_ids.size(), -1);
        std::vector<float> ref_w(ref_ids.size()), w(ref_ids.size(), NAN);
        ASSERT_TRUE(cpu.top_k(logits.view(), k, renormalize, ref_ids.data(), ref_w.data()).ok());
        ASSERT_TRUE(be.top_k(logits.view(), k, renormalize, ids.data(), w.data()).ok());
        EXPECT_EQ(ids, ref_ids) << "k " << k;
        for (std::size_t i = 0; i < w.size(); ++i) EXPECT_NEAR(w[i], ref_w[i], 1e-6f) << i;
      }
    }
    EXPECT_EQ(be.top_k(logits.view(), 9, false, nullptr, nullptr).code(), StatusCode::kInvalidArgument);

    // A router that produced NaN (or a row of -inf, whose softmax is NaN) still routes each row to
    // k distinct experts, and the weights carry the NaN as on the cpu backend: never duplicate ids
    // with negative weights fed to scatter_add_rows.
    Tensor nan_logits = random_tensor(Shape{3, 8}, 924, 2.0f);
    for (int64_t e = 0; e < 8; ++e) nan_logits.data()[e] = NAN;
    for (int64_t e = 0; e < 8; ++e) nan_logits.data()[8 + e] = -INFINITY;
    nan_logits.data()[16 + 5] = NAN;
    std::vector<int32_t> bad_ids(3 * 4, -1);
    std::vector<float> bad_w(bad_ids.size(), 0.0f);
    ASSERT_TRUE(be.top_k(nan_logits.view(), 4, true, bad_ids.data(), bad_w.data()).ok());
    for (int64_t r = 0; r < 3; ++r) {
      std::set<int32_t> distinct;
      for (int64_t j = 0; j < 4; ++j) {
        const int32_t id = bad_ids[static_cast<std::size_t>(r * 4 + j)];
        EXPECT_TRUE(id >= 0 && id < 8) << "row " << r << " id " << id;
        distinct.insert(id);
        // Rows 0 and 1 are NaN throughout; row 2 has one NaN logit, which may or may not be chosen.
        if (r < 2) {
          EXPECT_TRUE(std::isnan(bad_w[static_cast<std::size_t>(r * 4 + j)])) << "row " << r << " slot " << j;
        }
      }
      EXPECT_EQ(distinct.size(), 4u) << "row " << r;
    }

    const Tensor x = random_tensor(Shape{11, 37}, 921);
    std::vector<int32_t> pick = {3, 3, 0, 10, 7};
    Tensor ref(Shape{5, 37}), y(Shape{5, 37});
    poison(y.view());
    ASSERT_TRUE(cpu.index_rows(x.view(), pick.data(), 5, ref.view()).ok());
    ASSERT_TRUE(be.index_rows(x.view(), pick.data(), 5, y.view()).ok());
    EXPECT_EQ(std::memcmp(y.data(), ref.data(), y.bytes()), 0);

    const Tensor rows = random_tensor(Shape{6, 37}, 922);
    std::vector<int32_t> to = {2, 0, 2, 4, 2, 0};  // repeated targets accumulate in order
    std::vector<float> scales = {0.5f, -1.0f, 2.0f, 0.25f, 1.0f, 3.0f};
    const Tensor base = random_tensor(Shape{5, 37}, 923);
    Tensor sref = base.clone(), sy = base.clone();
    ASSERT_TRUE(cpu.scatter_add_rows(rows.view(), to.data(), scales.data(), 6, sref.view()).ok());
    ASSERT_TRUE(be.scatter_add_rows(rows.view(), to.data(), scales.data(), 6, sy.view()).ok());
    EXPECT_LE(nmse(sy.view(), sref.view()), VulkanTolerance::kElementwise);
    std::vector<int32_t> bad = {11};  // x has 11 rows
    EXPECT_EQ(be.index_rows(x.view(), bad.data(), 1, Tensor(Shape{1, 37}).view()).code(),
              StatusCode::kInvalidArgument);
  }
}

TEST(VulkanBackend, MatmulNtAndGlobalAvgPoolMatchCpu) {
  AM_REQUIRE_VULKAN_DEVICE(device);
  CpuBackend cpu(scalar_context());
  {
    VulkanBackend& be = vulkan_backend_for(device);
    const Tensor a = random_tensor(Shape{9, 45}, 930);
    const Tensor b = random_tensor(Shape{14, 45}, 931);
    Tensor ref(Shape{9, 14}), y(Shape{9, 14});
    poison(y.view());
    ASSERT_TRUE(cpu.matmul_nt(a.view(), b.view(), 0.125f, ref.view()).ok());
    ASSERT_TRUE(be.matmul_nt(a.view(), b.view(), 0.125f, y.view()).ok());
    ASSERT_TRUE(all_finite(y.view()));
    EXPECT_LE(nmse(y.view(), ref.view()), VulkanTolerance::kFloatMatmul);

    const Tensor x = random_tensor(Shape{3 * 49, 20}, 932);
    Tensor pref(Shape{3, 20}), py(Shape{3, 20});
    poison(py.view());
    ASSERT_TRUE(cpu.global_avg_pool(x.view(), 3, pref.view()).ok());
    ASSERT_TRUE(be.global_avg_pool(x.view(), 3, py.view()).ok());
    ASSERT_TRUE(all_finite(py.view()));
    EXPECT_LE(nmse(py.view(), pref.view()), VulkanTolerance::kNorm);
    Tensor wrong(Shape{2, 20});
    EXPECT_EQ(be.global_avg_pool(x.view(), 3, wrong.view()).code(), StatusCode::kInvalidArgument);
  }
}

}  // namespace
}  // namespace am::kernels
