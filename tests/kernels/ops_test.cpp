#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/activation.h"
#include "kernels/cpu/embedding.h"
#include "kernels/cpu/layer_norm.h"
#include "kernels/cpu/softmax.h"
#include "test_util.h"

namespace am::kernels {
namespace {

TEST(LayerNorm, MatchesHandComputedRow) {
  // x = 1 2 3 4: mean 2.5, biased variance 1.25.
  const std::vector<float> x = {1, 2, 3, 4};
  const std::vector<float> gamma = {1, 2, 0.5f, -1};
  const std::vector<float> beta = {0, 1, -1, 0.5f};
  const float eps = 1e-5f;
  std::vector<float> y(4);
  layer_norm_row(x.data(), gamma.data(), beta.data(), eps, 4, y.data());
  const double inv = 1.0 / std::sqrt(1.25 + eps);
  EXPECT_NEAR(y[0], -1.5 * inv * 1 + 0, 1e-6);
  EXPECT_NEAR(y[1], -0.5 * inv * 2 + 1, 1e-6);
  EXPECT_NEAR(y[2], 0.5 * inv * 0.5 - 1, 1e-6);
  EXPECT_NEAR(y[3], 1.5 * inv * -1 + 0.5, 1e-6);
}

TEST(LayerNorm, MatchesDoubleFormulaOnRandomRowsInPlace) {
  Tensor x = testing::random_tensor(Shape{13, 97}, 3, 4.0f);
  for (int64_t i = 0; i < x.numel(); ++i) x.data()[i] += 100.0f;  // large mean, modest spread
  const Tensor gamma = testing::random_tensor(Shape{97}, 4);
  const Tensor beta = testing::random_tensor(Shape{97}, 5);
  const Tensor original = x.clone();
  ThreadPool pool(2);
  layer_norm(x.view(), gamma.data(), beta.data(), 1e-12f, x.view(),
             ExecContext{KernelPath::kScalar, &pool});
  for (int64_t r = 0; r < 13; ++r) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < 97; ++i) mean += original.row(r)[i];
    mean /= 97;
    for (int64_t i = 0; i < 97; ++i) var += std::pow(original.row(r)[i] - mean, 2);
    var /= 97;
    for (int64_t i = 0; i < 97; ++i) {
      const double want =
          (original.row(r)[i] - mean) / std::sqrt(var + 1e-12) * gamma.data()[i] + beta.data()[i];
      ASSERT_NEAR(x.row(r)[i], want, 2e-4 * (1 + std::fabs(want))) << r << "," << i;
    }
  }
}

TEST(Softmax, MatchesHandFormula) {
  std::vector<float> x = {1, 2, 3};
  softmax_row(x.data(), 3);
  const double z = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  EXPECT_NEAR(x[0], std::exp(1.0) / z, 1e-7);
  EXPECT_NEAR(x[1], std::exp(2.0) / z, 1e-7);
  EXPECT_NEAR(x[2], std::exp(3.0) / z, 1e-7);
}

TEST(Softmax, IsStableForHugeLogits) {
  std::vector<float> x = {1000.0f, 1001.0f, -1e30f};
  softmax_row(x.data(), 3);
  const double e = std::exp(1.0);
  EXPECT_NEAR(x[0], 1.0 / (1.0 + e), 1e-7);
  EXPECT_NEAR(x[1], e / (1.0 + e), 1e-7);
  EXPECT_EQ(x[2], 0.0f);
}

TEST(Softmax, MaskedEntriesGetZeroAndFullyMaskedRowIsZero) {
  const float ninf = -std::numeric_limits<float>::infinity();
  std::vector<float> x = {0.5f, ninf, 0.5f};
  softmax_row(x.data(), 3);
  EXPECT_FLOAT_EQ(x[0], 0.5f);
  EXPECT_EQ(x[1], 0.0f);
  EXPECT_FLOAT_EQ(x[2], 0.5f);
  std::vector<float> all = {ninf, ninf};
  softmax_row(all.data(), 2);
  EXPECT_EQ(all[0], 0.0f);
  EXPECT_EQ(all[1], 0.0f);
}

TEST(Softmax, NanPoisonsTheRow) {
  std::vector<float> x = {1.0f, std::numeric_limits<float>::quiet_NaN(), 2.0f};
  softmax_row(x.data(), 3);
  for (float v : x) EXPECT_TRUE(std::isnan(v));
}

TEST(Softmax, RowsSumToOneOverPool) {
  Tensor x = testing::random_tensor(Shape{40, 33}, 8, 5.0f);
  ThreadPool pool(3);
  softmax_rows(x.view(), ExecContext{KernelPath::kScalar, &pool});
  for (int64_t r = 0; r < 40; ++r) {
    double s = 0;
    for (int64_t i = 0; i < 33; ++i) {
      ASSERT_GE(x.row(r)[i], 0.0f);
      s += x.row(r)[i];
    }
    ASSERT_NEAR(s, 1.0, 1e-6);
  }
}

TEST(Gelu, MatchesKnownValuesOfTheErfForm) {
  // x * Phi(x) with Phi the standard normal CDF: Phi(1) = 0.841344746068543,
  // Phi(2) = 0.977249868051821, Phi(-3) = 0.00134989803163009.
  EXPECT_EQ(gelu_erf(0.0f), 0.0f);
  EXPECT_NEAR(gelu_erf(1.0f), 0.841344746068543, 1e-6);
  EXPECT_NEAR(gelu_erf(-1.0f), -(1.0 - 0.841344746068543), 1e-6);
  EXPECT_NEAR(gelu_erf(2.0f), 2 * 0.977249868051821, 1e-6);
  EXPECT_NEAR(gelu_erf(-3.0f), -3 * 0.00134989803163009, 1e-7);
  // The tanh approximation stays within 1e-3 of the exact form.
  for (float x = -5.0f; x <= 5.0f; x += 0.25f) EXPECT_NEAR(gelu_tanh(x), gelu_erf(x), 1e-3) << x;
}

TEST(Gelu, AppliesElementwiseOverATensor) {
  Tensor x = testing::random_tensor(Shape{9, 31}, 12, 2.0f);
  const Tensor original = x.clone();
  ThreadPool pool(2);
  apply_activation(Activation::kGeluErf, x.view(), ExecContext{KernelPath::kScalar, &pool});
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double v = original.data()[i];
    ASSERT_NEAR(x.data()[i], 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))), 1e-6) << i;
  }
}

// The vector forms (avx2, avx512) of the activations with exp/erf against the scalar forms, in
// double, on fresh seeded inputs over the range a layer sees and far past it, plus the values
// where a vector exp or erf breaks first (0, -0, tiny, huge, infinities, NaN). The bound is the
// accuracy contract of activation_kernels.h.
TEST(Activation, VectorFormsFollowTheScalarFormsOnEveryPath) {
  std::mt19937 gen(20261207);
  std::vector<float> inputs;
  std::uniform_real_distribution<float> wide(-40.0f, 40.0f), near(-6.0f, 6.0f);
  for (int i = 0; i < 4003; ++i) inputs.push_back(i % 2 == 0 ? near(gen) : wide(gen));
  for (float v : {0.0f, -0.0f, 1e-30f, -1e-30f, 1e-5f, -1e-5f, 0.5f, -0.5f, 87.0f, -87.0f, 88.5f, -88.5f,
                  100.0f, -100.0f, 3e38f, -3e38f}) {
    inputs.push_back(v);
  }
  const int64_t n = static_cast<int64_t>(inputs.size());   // not a multiple of 8 or 16: a tail
  ASSERT_NE(n % 16, 0);
  struct Case {
    Activation act;
    double (*ref)(double);
  };
  const Case cases[] = {
      {Activation::kGeluErf, [](double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }},
      {Activation::kSilu, [](double x) { return x / (1.0 + std::exp(-x)); }},
      {Activation::kSigmoid, [](double x) { return 1.0 / (1.0 + std::exp(-x)); }},
  };
  ThreadPool pool(2);
  int paths = 0;
  for (KernelPath path : {KernelPath::kAvx2, KernelPath::kAvx512}) {
    if (!kernel_path_available(path)) continue;
    ++paths;
    for (const Case& c : cases) {
      Tensor x(Shape{1, n});
      std::copy(inputs.begin(), inputs.end(), x.data());
      apply_activation(c.act, x.view(), ExecContext{path, &pool});
      for (int64_t i = 0; i < n; ++i) {
        const double in = inputs[static_cast<std::size_t>(i)];
        const double want = c.ref(in);
        const double got = x.data()[i];
        const std::string where = std::string(activation_name(c.act)) + " path " +
                                  std::to_string(static_cast<int>(path)) + " x=" + std::to_string(in);
        if (std::isinf(want)) {
          EXPECT_EQ(got, want) << where;
          continue;
        }
        ASSERT_TRUE(std::isfinite(got)) << where << " got " << got;
        // GELU: erf's absolute error (1.5e-7) times |x| / 2, and float rounding of the result;
        // SiLU and sigmoid: relative error of exp and of the division; past x = -87 the vector
        // exp's argument is clamped, so those give ~1e-37 where the exact value is smaller still.
        const double tol = c.act == Activation::kGeluErf ? 2e-7 * (1.0 + std::fabs(in)) + 4e-7 * std::fabs(want)
                                                         : 1e-6 * std::fabs(want) + 1e-30;
        ASSERT_NEAR(got, want, tol) << where;
      }
      // NaN stays NaN.
      Tensor nan(Shape{1, 3});
      nan.data()[0] = nan.data()[1] = nan.data()[2] = std::numeric_limits<float>::quiet_NaN();
      apply_activation(c.act, nan.view(), ExecContext{path, &pool});
      for (int i = 0; i < 3; ++i) EXPECT_TRUE(std::isnan(nan.data()[i])) << activation_name(c.act);
    }
  }
  if (paths == 0) GTEST_SKIP() << "no vector path on this CPU";
}

TEST(Activation, NamesMapToFunctionsAndUnknownIsUnsupported) {
  EXPECT_EQ(*activation_from_name("gelu"), Activation::kGeluErf);
  EXPECT_EQ(*activation_from_name("gelu_new"), Activation::kGeluTanh);
  EXPECT_EQ(*activation_from_name("relu"), Activation::kRelu);
  EXPECT_EQ(*activation_from_name("silu"), Activation::kSilu);
  EXPECT_EQ(*activation_from_name("swish"), Activation::kSilu);
  const Result<Activation> bad = activation_from_name("mish");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(bad.status().message().find("mish"), std::string::npos);
}

TEST(Embedding, SumsWordPositionAndTypeRows) {
  const int64_t hidden = 6;
  const Tensor word = testing::random_tensor(Shape{10, hidden}, 1);
  const Tensor pos = testing::random_tensor(Shape{8, hidden}, 2);
  const Tensor type = testing::random_tensor(Shape{2, hidden}, 3);
  const std::vector<int32_t> ids = {3, 9, 0, 7, 7, 1};  // batch 2 x seq 3
  const std::vector<int32_t> types = {0, 1, 1, 0, 0, 1};
  Tensor out(Shape{6, hidden});
  testing::poison(out.view());
  ThreadPool pool(2);
  embed_tokens(ids.data(), types.data(), 2, 3, word.view(), pos.view(), type.view(), out.view(),
               ExecContext{KernelPath::kScalar, &pool});
  for (int64_t t = 0; t < 6; ++t) {
    for (int64_t i = 0; i < hidden; ++i) {
      const float want = word.row(ids[t])[i] + pos.row(t % 3)[i] + type.row(types[t])[i];
      ASSERT_FLOAT_EQ(out.row(t)[i], want) << t << "," << i;
    }
  }
}

}  // namespace
}  // namespace am::kernels
