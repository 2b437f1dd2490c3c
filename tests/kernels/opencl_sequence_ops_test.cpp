// The OpenCL backend's ops beyond the BERT encoder's against the cpu scalar reference: rotary
// embeddings, attention with a score bias, routing (top-k, index/scatter rows), activation
// products and global pooling. Seeded inputs, odd sizes, outputs poisoned first.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/opencl/opencl_backend.h"
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

OpenClBackend& backend_for(const opencl::OpenClDevice& device) {
  static std::map<std::string, std::unique_ptr<OpenClBackend>> backends;
  auto it = backends.find(device.label());
  if (it == backends.end()) {
    Result<std::unique_ptr<OpenClBackend>> be = OpenClBackend::create(device);
    EXPECT_TRUE(be.ok()) << be.status().message();
    if (!be.ok()) std::abort();
    it = backends.emplace(device.label(), std::move(be).value()).first;
  }
  return *it->second;
}

TEST(OpenClMoreOps, RopeMatchesCpuInBothLayoutsWithPartialRotaryAndLongPositions) {
  AM_REQUIRE_OPENCL_DEVICES(devices);
  CpuBackend cpu(scalar_context());
  for (const opencl::OpenClDevice& device : devices) {
    OpenClBackend& be = backend_for(device);
    for (RopeLayout layout : {RopeLayout::kNeox, RopeLayout::kGptj}) {
      for (int64_t rotary : {int64_t{0}, int64_t{16}}) {
        SCOPED_TRACE(device.label() + " " + std::string(rope_layout_name(layout)) + " rotary " +
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
        EXPECT_LE(nmse(y.view(), ref.view()), OpenClTolerance::kElementwise);
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

TEST(OpenClMoreOps, AttentionBiasMatchesCpuWithMaskAndCausality) {
  AM_REQUIRE_OPENCL_DEVICES(devices);
  CpuBackend cpu(scalar_context());
  for (const opencl::OpenClDevice& device : devices) {
    OpenClBackend& be = backend_for(device);
    for (bool causal : {false, true}) {
      SCOPED_TRACE(device.label() + (causal ? " causal" : " bidirectional"));
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
      EXPECT_LE(nmse(out.view(), ref.view()), OpenClTolerance::kAttention);
    }
  }
}

TEST(OpenClMoreOps, RoutingOpsMatchCpuWithRepeatedIds) {
  AM_REQUIRE_OPENCL_DEVICES(devices);
  CpuBackend cpu(scalar_context());
  for (const opencl::OpenClDevice& device : devices) {
    OpenClBackend& be = backend_for(device);
    SCOPED_TRACE(device.label());
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
    EXPECT_LE(nmse(sy.view(), sref.view()), OpenClTolerance::kElementwise);
    std::vector<int32_t> bad = {11};  // x has 11 rows
    EXPECT_EQ(be.index_rows(x.view(), bad.data(), 1, Tensor(Shape{1, 37}).view()).code(),
              StatusCode::kInvalidArgument);
  }
}

TEST(OpenClMoreOps, MatmulNtAndGlobalAvgPoolMatchCpu) {
  AM_REQUIRE_OPENCL_DEVICES(devices);
  CpuBackend cpu(scalar_context());
  for (const opencl::OpenClDevice& device : devices) {
    OpenClBackend& be = backend_for(device);
    SCOPED_TRACE(device.label());
    const Tensor a = random_tensor(Shape{9, 45}, 930);
    const Tensor b = random_tensor(Shape{14, 45}, 931);
    Tensor ref(Shape{9, 14}), y(Shape{9, 14});
    poison(y.view());
    ASSERT_TRUE(cpu.matmul_nt(a.view(), b.view(), 0.125f, ref.view()).ok());
    ASSERT_TRUE(be.matmul_nt(a.view(), b.view(), 0.125f, y.view()).ok());
    ASSERT_TRUE(all_finite(y.view()));
    EXPECT_LE(nmse(y.view(), ref.view()), OpenClTolerance::kFloatMatmul);

    const Tensor x = random_tensor(Shape{3 * 49, 20}, 932);
    Tensor pref(Shape{3, 20}), py(Shape{3, 20});
    poison(py.view());
    ASSERT_TRUE(cpu.global_avg_pool(x.view(), 3, pref.view()).ok());
    ASSERT_TRUE(be.global_avg_pool(x.view(), 3, py.view()).ok());
    ASSERT_TRUE(all_finite(py.view()));
    EXPECT_LE(nmse(py.view(), pref.view()), OpenClTolerance::kNorm);
    Tensor wrong(Shape{2, 20});
    EXPECT_EQ(be.global_avg_pool(x.view(), 3, wrong.view()).code(), StatusCode::kInvalidArgument);
  }
}

}  // namespace
}  // namespace am::kernels
