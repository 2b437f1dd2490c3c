// The Backend seam: the cpu backend's general attention against a naive reference, RMSNorm and
// element-wise ops against their formulas, and the unsupported answers other backends inherit.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "kernels/backend.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/models/encoder_only.h"
#include "kernels/thread_pool.h"
#include "tests/kernels/test_util.h"

namespace am::kernels {
namespace {

using testing::poison;
using testing::random_tensor;

// Straight from the definition, in double.
std::vector<float> naive_attention(const AttentionArgs& a) {
  const int64_t group = a.heads / a.kv_heads;
  const double scale = 1.0 / std::sqrt(static_cast<double>(a.head_dim));
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
          for (int64_t c = 0; c < a.head_dim; ++c) {
            d += static_cast<double>(a.q.row(b * a.q_len + i)[h * a.head_dim + c]) *
                 a.k.row(b * a.kv_len + j)[(h / group) * a.head_dim + c];
          }
          s.push_back(d * scale);
          keys.push_back(j);
        }
        float* o = &out[static_cast<std::size_t>(((b * a.q_len + i) * a.heads + h) * a.head_dim)];
        if (s.empty()) continue;
        double mx = -1e300, sum = 0;
        for (double x : s) mx = std::max(mx, x);
        for (double& x : s) sum += (x = std::exp(x - mx));
        for (std::size_t n = 0; n < s.size(); ++n)
          for (int64_t c = 0; c < a.head_dim; ++c)
            o[c] += static_cast<float>(s[n] / sum * a.v.row(b * a.kv_len + keys[n])[(h / group) * a.head_dim + c]);
      }
  return out;
}

struct AttentionCase {
  int64_t batch, q_len, kv_len, heads, kv_heads, head_dim, q_offset;
  bool causal, masked;
};

class CpuAttention : public ::testing::TestWithParam<AttentionCase> {};

TEST_P(CpuAttention, MatchesTheDefinition) {
  const AttentionCase c = GetParam();
  ThreadPool pool(2);
  for (KernelPath path : available_kernel_paths()) {
    CpuBackend be(ExecContext{path, &pool});
    Tensor q = random_tensor(Shape{c.batch * c.q_len, c.heads * c.head_dim}, 11);
    Tensor k = random_tensor(Shape{c.batch * c.kv_len, c.kv_heads * c.head_dim}, 12);
    Tensor v = random_tensor(Shape{c.batch * c.kv_len, c.kv_heads * c.head_dim}, 13);
    Tensor out(Shape{c.batch * c.q_len, c.heads * c.head_dim});
    poison(out.view());
    std::vector<int32_t> mask(static_cast<std::size_t>(c.batch * c.kv_len), 1);
    if (c.masked) {
      for (int64_t j = c.kv_len / 2; j < c.kv_len; ++j) mask[static_cast<std::size_t>(j)] = 0;  // sample 0 padded
    }
    AttentionArgs a;
    a.q = q.view(); a.k = k.view(); a.v = v.view(); a.out = out.view();
    a.batch = c.batch; a.q_len = c.q_len; a.kv_len = c.kv_len; a.heads = c.heads;
    a.kv_heads = c.kv_heads; a.head_dim = c.head_dim; a.causal = c.causal; a.q_offset = c.q_offset;
    a.key_mask = c.masked ? mask.data() : nullptr;
    ASSERT_TRUE(be.attention(a).ok());
    const std::vector<float> ref = naive_attention(a);
    for (std::size_t i = 0; i < ref.size(); ++i) {
      ASSERT_NEAR(out.data()[i], ref[i], 2e-5f) << "path " << kernel_path_name(path) << " at " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, CpuAttention,
    ::testing::Values(AttentionCase{2, 7, 7, 2, 2, 16, 0, false, true},     // BERT-style, padding
                      AttentionCase{1, 9, 9, 4, 4, 8, 0, true, false},      // causal prompt
                      AttentionCase{2, 1, 13, 8, 2, 16, 12, true, false},   // decode step, GQA 4:1
                      AttentionCase{1, 3, 10, 6, 3, 5, 7, true, true},      // prefill chunk on a cache
                      AttentionCase{3, 5, 11, 2, 1, 24, 0, false, false})); // cross-attention, MQA

TEST(CpuAttention, RejectsInconsistentShapesWithAReason) {
  CpuBackend be(ExecContext{});
  Tensor q(Shape{4, 16}), kv(Shape{4, 16}), out(Shape{4, 16});
  AttentionArgs a;
  a.q = q.view(); a.k = kv.view(); a.v = kv.view(); a.out = out.view();
  a.batch = 1; a.q_len = 4; a.kv_len = 4; a.heads = 4; a.kv_heads = 3; a.head_dim = 4;
  Status s = be.attention(a);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("kv_heads 3 does not divide heads 4"), std::string::npos) << s.message();
}

TEST(CpuBackendOps, RmsNormMatchesTheFormulaAndWorksInPlace) {
  CpuBackend be(ExecContext{});
  Tensor x = random_tensor(Shape{5, 37}, 21);
  Tensor gamma = random_tensor(Shape{37}, 22);
  Tensor y(Shape{5, 37});
  ASSERT_TRUE(be.rms_norm(x.view(), gamma.data(), 1e-6f, y.view()).ok());
  for (int64_t r = 0; r < 5; ++r) {
    double ms = 0;
    for (int64_t c = 0; c < 37; ++c) ms += double(x.row(r)[c]) * x.row(r)[c];
    const double inv = 1.0 / std::sqrt(ms / 37 + 1e-6);
    for (int64_t c = 0; c < 37; ++c) EXPECT_NEAR(y.row(r)[c], x.row(r)[c] * inv * gamma.data()[c], 1e-5);
  }
  ASSERT_TRUE(be.rms_norm(x.view(), gamma.data(), 1e-6f, x.view()).ok());
  for (int64_t i = 0; i < x.numel(); ++i) EXPECT_FLOAT_EQ(x.data()[i], y.data()[i]);
}

TEST(CpuBackendOps, AddMulGatherAndSilu) {
  CpuBackend be(ExecContext{});
  Tensor a = random_tensor(Shape{3, 10}, 31), b = random_tensor(Shape{3, 10}, 32);
  Tensor sum = Tensor::from_view(a.view()), prod = Tensor::from_view(a.view());
  ASSERT_TRUE(be.add(sum.view(), b.view()).ok());
  ASSERT_TRUE(be.mul(prod.view(), b.view()).ok());
  for (int64_t i = 0; i < 30; ++i) {
    EXPECT_FLOAT_EQ(sum.data()[i], a.data()[i] + b.data()[i]);
    EXPECT_FLOAT_EQ(prod.data()[i], a.data()[i] * b.data()[i]);
  }
  EXPECT_EQ(be.add(sum.view(), Tensor(Shape{2, 10}).view()).code(), StatusCode::kInvalidArgument);

  Tensor table = random_tensor(Shape{6, 4}, 33);
  const std::vector<int32_t> ids = {5, 0, 5};
  Tensor g(Shape{3, 4});
  ASSERT_TRUE(be.gather_rows(table.view(), ids.data(), 3, g.view(), false).ok());
  ASSERT_TRUE(be.gather_rows(table.view(), ids.data(), 3, g.view(), true).ok());
  for (int64_t c = 0; c < 4; ++c) EXPECT_FLOAT_EQ(g.row(1)[c], 2 * table.row(0)[c]);
  const std::vector<int32_t> bad = {6};
  EXPECT_EQ(be.gather_rows(table.view(), bad.data(), 1, Tensor(Shape{1, 4}).view(), false).code(),
            StatusCode::kInvalidArgument);

  Tensor s = random_tensor(Shape{2, 8}, 34);
  Tensor expect = Tensor::from_view(s.view());
  ASSERT_TRUE(be.activation(Activation::kSilu, s.view()).ok());
  for (int64_t i = 0; i < 16; ++i) {
    const float x = expect.data()[i];
    EXPECT_NEAR(s.data()[i], x / (1.0f + std::exp(-x)), 1e-6f);
  }
}

// A backend that implements nothing: every op answers Unsupported naming the op and backend.
class EmptyBackend final : public Backend {
 public:
  std::string_view name() const override { return "nothing"; }
  std::string device_name() const override { return "none"; }
};

TEST(BackendSeam, UnimplementedOpsAreUnsupportedNamingOpAndBackend) {
  EmptyBackend be;
  Status s = be.supports(Op::kAttention);
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_EQ(s.message(), "op attention not implemented on backend nothing");
  Tensor t(Shape{2, 2});
  EXPECT_EQ(be.softmax(t.view()).message(), "op softmax not implemented on backend nothing");
  EXPECT_EQ(be.rms_norm(t.view(), t.data(), 1e-5f, t.view()).code(), StatusCode::kUnsupported);
}

TEST(BackendSeam, FactoryMakesCpuAndRefusesUnknownBackends) {
  auto cpu = make_backend("cpu", ExecContext{});
  ASSERT_TRUE(cpu.ok());
  EXPECT_EQ((*cpu)->name(), "cpu");
  auto none = make_backend("tpu9000", ExecContext{});
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(none.status().message().find("tpu9000"), std::string::npos);
}

TEST(BackendSeam, EncoderOnTheCpuBackendEqualsTheContextOverload) {
  EncoderConfig cfg;
  cfg.layers = 1; cfg.hidden = 32; cfg.heads = 2; cfg.intermediate = 64; cfg.vocab = 50;
  cfg.max_positions = 16;
  ThreadPool pool(2);
  const ExecContext ctx{best_kernel_path(), &pool};
  auto model = EncoderModel::create_synthetic(cfg, WeightFormat::kF32, 5, ctx);
  ASSERT_TRUE(model.ok());
  const EncoderInput in = make_synthetic_encoder_input(cfg, 2, 9, 5);
  CpuBackend be(ctx);
  for (const auto& [op, fmt] : model->required_ops()) EXPECT_TRUE(be.supports(op, fmt).ok());
  auto a = model->forward(in, be);
  auto b = model->forward(in, ctx);
  ASSERT_TRUE(a.ok() && b.ok());
  for (int64_t i = 0; i < a->numel(); ++i) ASSERT_EQ(a->data()[i], b->data()[i]);
  // The encoder on a backend without ops fails with the first missing op, not a crash.
  EmptyBackend none;
  auto c = model->forward(in, none);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kUnsupported);
}

}  // namespace
}  // namespace am::kernels
