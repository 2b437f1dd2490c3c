// Attention with an additive [q_len*kv_len, heads] score bias against a double-precision
// reference, with GQA, padding masks, causal offsets and T5's unit scale.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/thread_pool.h"
#include "tests/kernels/test_util.h"

namespace am::kernels {
namespace {

std::vector<float> naive(const AttentionArgs& a, const Tensor& bias) {
  const int64_t group = a.heads / a.kv_heads;
  const double scale = a.scale != 0.0f ? a.scale : 1.0 / std::sqrt(double(a.head_dim));
  std::vector<float> out(static_cast<std::size_t>(a.batch * a.q_len * a.heads * a.head_dim), 0.0f);
  for (int64_t b = 0; b < a.batch; ++b)
    for (int64_t h = 0; h < a.heads; ++h)
      for (int64_t i = 0; i < a.q_len; ++i) {
        std::vector<double> s;
        std::vector<int64_t> keys;
        for (int64_t j = 0; j < a.kv_len; ++j) {
          if (a.causal && j > a.q_offset + i) continue;
          if (a.key_mask && a.key_mask[b * a.kv_len + j] == 0) continue;
          double d = 0;
          for (int64_t c = 0; c < a.head_dim; ++c)
            d += double(a.q.row(b * a.q_len + i)[h * a.head_dim + c]) * a.k.row(b * a.kv_len + j)[(h / group) * a.head_dim + c];
          s.push_back(d * scale + bias.row(i * a.kv_len + j)[h]);
          keys.push_back(j);
        }
        if (s.empty()) continue;
        double mx = -1e300, sum = 0;
        for (double x : s) mx = std::max(mx, x);
        for (double& x : s) sum += (x = std::exp(x - mx));
        float* o = &out[static_cast<std::size_t>(((b * a.q_len + i) * a.heads + h) * a.head_dim)];
        for (std::size_t n = 0; n < s.size(); ++n)
          for (int64_t c = 0; c < a.head_dim; ++c)
            o[c] += float(s[n] / sum * a.v.row(b * a.kv_len + keys[n])[(h / group) * a.head_dim + c]);
      }
  return out;
}

TEST(CpuAttentionBias, MatchesTheReferenceAcrossShapes) {
  ThreadPool pool(2);
  CpuBackend cpu(ExecContext{best_kernel_path(), &pool});
  struct Case { int64_t batch, q_len, kv_len, heads, kv_heads, head_dim, q_offset; bool causal, masked; float scale; };
  for (const Case c : {Case{2, 5, 5, 4, 4, 8, 0, false, true, 1.0f}, Case{1, 3, 9, 4, 2, 16, 6, true, false, 0.0f},
                       Case{2, 1, 7, 2, 1, 8, 4, true, false, 1.0f}}) {
    Tensor q = testing::random_tensor(Shape{c.batch * c.q_len, c.heads * c.head_dim}, 1);
    Tensor k = testing::random_tensor(Shape{c.batch * c.kv_len, c.kv_heads * c.head_dim}, 2);
    Tensor v = testing::random_tensor(Shape{c.batch * c.kv_len, c.kv_heads * c.head_dim}, 3);
    Tensor bias = testing::random_tensor(Shape{c.q_len * c.kv_len, c.heads}, 4, 2.0f);
    Tensor out(Shape{c.batch * c.q_len, c.heads * c.head_dim});
    testing::poison(out.view());
    std::vector<int32_t> mask(static_cast<std::size_t>(c.batch * c.kv_len), 1);
    if (c.masked) mask[static_cast<std::size_t>(c.kv_len - 1)] = mask[static_cast<std::size_t>(c.kv_len + 1)] = 0;
    AttentionArgs a{.q = q.view(), .k = k.view(), .v = v.view(), .out = out.view(), .batch = c.batch, .q_len = c.q_len,
                    .kv_len = c.kv_len, .heads = c.heads, .kv_heads = c.kv_heads, .head_dim = c.head_dim,
                    .scale = c.scale, .key_mask = c.masked ? mask.data() : nullptr, .causal = c.causal,
                    .q_offset = c.q_offset};
    ASSERT_TRUE(cpu.attention_bias(a, bias.view()).ok());
    const std::vector<float> want = naive(a, bias);
    for (int64_t i = 0; i < out.numel(); ++i) ASSERT_NEAR(out.data()[i], want[static_cast<std::size_t>(i)], 1e-4f) << i;
  }
}

TEST(CpuAttentionBias, RejectsABiasOfTheWrongShape) {
  CpuBackend cpu(ExecContext{});
  Tensor q(Shape{4, 8}), k(Shape{4, 8}), v(Shape{4, 8}), out(Shape{4, 8}), bias(Shape{16, 1});
  AttentionArgs a{.q = q.view(), .k = k.view(), .v = v.view(), .out = out.view(), .batch = 1, .q_len = 4, .kv_len = 4,
                  .heads = 2, .kv_heads = 2, .head_dim = 4};
  Status s = cpu.attention_bias(a, bias.view());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("bias"), std::string::npos);
}

}  // namespace
}  // namespace am::kernels
