// Attention on the Vulkan backend against the cpu scalar reference: bidirectional with key mask,
// causal with q_offset, grouped-query, cross, more keys than one shared-memory chunk, head_dim
// above the work-group size, and the additive score bias (attention_bias.h). Skips without a
// Vulkan device.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "kernels/cpu/attention_bias.h"
#include "kernels/cpu/cpu_backend.h"
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

struct AttentionCase {
  const char* what;
  int64_t batch, q_len, kv_len, heads, kv_heads, head_dim, q_offset;
  bool causal, masked;
};

const AttentionCase kAttentionCases[] = {
    {"bidirectional, key mask", 3, 16, 16, 4, 4, 32, 0, false, true},
    {"bidirectional, odd head_dim", 2, 7, 7, 3, 3, 13, 0, false, false},
    {"causal prompt", 2, 19, 19, 2, 2, 24, 0, true, false},
    {"causal with cache offset", 2, 5, 21, 4, 4, 16, 16, true, false},
    {"causal, grouped-query", 1, 9, 9, 8, 2, 16, 0, true, true},
    {"cross, q_len != kv_len", 2, 6, 11, 2, 1, 20, 0, false, true},
    {"more keys than one chunk", 1, 3, 600, 2, 2, 64, 0, false, true},
    {"causal decode past one chunk", 1, 1, 300, 2, 1, 40, 299, true, false},
    {"head_dim above the group size", 1, 4, 4, 1, 1, 200, 0, false, false},
};

TEST(VulkanBackend, AttentionMatchesCpuOnEveryVariant) {
  AM_REQUIRE_VULKAN_DEVICE(device);
  CpuBackend cpu(scalar_context());
  {
    VulkanBackend& be = vulkan_backend_for(device);
    uint32_t seed = 600;
    for (const AttentionCase& c : kAttentionCases) {
      SCOPED_TRACE(c.what);
      const Tensor q = random_tensor(Shape{c.batch * c.q_len, c.heads * c.head_dim}, ++seed);
      const Tensor k = random_tensor(Shape{c.batch * c.kv_len, c.kv_heads * c.head_dim}, ++seed);
      const Tensor v = random_tensor(Shape{c.batch * c.kv_len, c.kv_heads * c.head_dim}, ++seed);
      std::vector<int32_t> mask(static_cast<std::size_t>(c.batch * c.kv_len), 1);
      if (c.masked) {
        for (int64_t b = 1; b < c.batch; ++b) {  // sample 0 full; later samples padded at the end
          for (int64_t j = c.kv_len - b * (c.kv_len / 4 + 1); j < c.kv_len; ++j) {
            mask[static_cast<std::size_t>(b * c.kv_len + j)] = 0;
          }
        }
        if (c.batch == 1) mask[1] = 0;
      }
      Tensor ref(q.shape()), out(q.shape());
      poison(out.view());
      AttentionArgs a;
      a.q = q.view();
      a.k = k.view();
      a.v = v.view();
      a.batch = c.batch;
      a.q_len = c.q_len;
      a.kv_len = c.kv_len;
      a.heads = c.heads;
      a.kv_heads = c.kv_heads;
      a.head_dim = c.head_dim;
      a.key_mask = c.masked ? mask.data() : nullptr;
      a.causal = c.causal;
      a.q_offset = c.q_offset;
      a.out = ref.view();
      ASSERT_TRUE(cpu.attention(a).ok());
      a.out = out.view();
      const Status s = be.attention(a);
      ASSERT_TRUE(s.ok()) << s.message();
      ASSERT_TRUE(all_finite(out.view()));
      EXPECT_LE(nmse(out.view(), ref.view()), VulkanTolerance::kAttention);
    }
  }
}

TEST(VulkanBackend, AttentionGivesZeroRowsWhereEveryKeyIsMaskedAndValidatesArgs) {
  AM_REQUIRE_VULKAN_DEVICE(device);
  VulkanBackend& be = vulkan_backend_for(device);
  const Tensor q = random_tensor(Shape{2 * 4, 8}, 700);
  const Tensor k = random_tensor(Shape{2 * 4, 8}, 701);
  const Tensor v = random_tensor(Shape{2 * 4, 8}, 702);
  std::vector<int32_t> mask = {1, 1, 0, 1, 0, 0, 0, 0};  // sample 1 has no key at all
  Tensor out(q.shape());
  poison(out.view());
  AttentionArgs a;
  a.q = q.view();
  a.k = k.view();
  a.v = v.view();
  a.out = out.view();
  a.batch = 2;
  a.q_len = 4;
  a.kv_len = 4;
  a.heads = 2;
  a.kv_heads = 2;
  a.head_dim = 4;
  a.key_mask = mask.data();
  ASSERT_TRUE(be.attention(a).ok());
  for (int64_t r = 0; r < 4; ++r) {
    for (int64_t c = 0; c < 8; ++c) EXPECT_TRUE(std::isfinite(out.row(r)[c]));
  }
  for (int64_t r = 4; r < 8; ++r) {
    for (int64_t c = 0; c < 8; ++c) EXPECT_EQ(out.row(r)[c], 0.0f);
  }
  a.kv_heads = 3;
  const Status bad = be.attention(a);
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("kv_heads"), std::string::npos);
}

TEST(VulkanBackend, AttentionBiasMatchesCpuWithMaskAndCausality) {
  AM_REQUIRE_VULKAN_DEVICE(device);
  CpuBackend cpu(scalar_context());
  {
    VulkanBackend& be = vulkan_backend_for(device);
    for (bool causal : {false, true}) {
      SCOPED_TRACE(causal ? "causal" : "bidirectional");
      const int64_t batch = 2, q_len = 9, kv_len = 9, heads = 4, head_dim = 16;
      const Tensor q = random_tensor(Shape{batch * q_len, heads * head_dim}, 910);
      const Tensor k = random_tensor(Shape{batch * kv_len, heads * head_dim}, 911);
      const Tensor v = random_tensor(Shape{batch * kv_len, heads * head_dim}, 912);
      const Tensor bias = random_tensor(Shape{q_len * kv_len, heads}, 913, 2.0f);
      std::vector<int32_t> mask(static_cast<std::size_t>(batch * kv_len), 1);
      mask[static_cast<std::size_t>(kv_len + 7)] = 0;
      mask[static_cast<std::size_t>(kv_len + 8)] = 0;
      Tensor ref(q.shape()), out(q.shape());
      poison(out.view());
      AttentionArgs a;
      a.q = q.view();
      a.k = k.view();
      a.v = v.view();
      a.batch = batch;
      a.q_len = q_len;
      a.kv_len = kv_len;
      a.heads = heads;
      a.kv_heads = heads;
      a.head_dim = head_dim;
      a.key_mask = mask.data();
      a.causal = causal;
      a.out = ref.view();
      ASSERT_TRUE(cpu.attention_bias(a, bias.view()).ok());
      a.out = out.view();
      ASSERT_TRUE(be.attention_bias(a, bias.view()).ok());
      ASSERT_TRUE(all_finite(out.view()));
      EXPECT_LE(nmse(out.view(), ref.view()), VulkanTolerance::kAttention);
    }
  }
}

}  // namespace
}  // namespace am::kernels
