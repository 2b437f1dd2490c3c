#include "tests/kernels/named_formats.h"
#include "kernels/models/encoder_only.h"

#include <gtest/gtest.h>

#include <cstring>

#include "kernels/accuracy.h"
#include "kernels/tolerances.h"
#include "test_util.h"

namespace am::kernels {
namespace {

// Odd block counts (hidden 96 = 3 q8_0 blocks, intermediate 160 = 5) reach the SIMD kernels'
// single-block tails.
constexpr int64_t kHidden = 96;
constexpr int64_t kIntermediate = 160;

nlohmann::json small_bert() {
  return {{"layers", 2},         {"hidden", kHidden},
          {"heads", 4},          {"intermediate", kIntermediate},
          {"vocab", 500},        {"max_positions", 40},
          {"type_vocab", 2},     {"norm_eps", 1e-12},
          {"activation", "gelu"}};
}

EncoderConfig config() {
  Result<EncoderConfig> c = encoder_config_from_json(small_bert());
  EXPECT_TRUE(c.ok()) << c.status().to_string();
  return *c;
}

Tensor run(const EncoderModel& m, const EncoderInput& in, const ExecContext& ctx) {
  Result<Tensor> out = m.forward(in, ctx);
  EXPECT_TRUE(out.ok()) << out.status().to_string();
  return std::move(out).value();
}

TEST(EncoderConfig, ReadsEveryKeyAndAppliesDefaults) {
  nlohmann::json doc = small_bert();
  doc.erase("type_vocab");
  doc.erase("norm_eps");
  doc.erase("activation");
  const Result<EncoderConfig> c = encoder_config_from_json(doc);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->layers, 2);
  EXPECT_EQ(c->hidden, kHidden);
  EXPECT_EQ(c->heads, 4);
  EXPECT_EQ(c->intermediate, kIntermediate);
  EXPECT_EQ(c->vocab, 500);
  EXPECT_EQ(c->max_positions, 40);
  EXPECT_EQ(c->type_vocab, 2);
  EXPECT_FLOAT_EQ(c->norm_eps, 1e-12f);
  EXPECT_EQ(c->activation, "gelu");
}

TEST(EncoderConfig, NamesTheOffendingKey) {
  nlohmann::json missing = small_bert();
  missing.erase("intermediate");
  Result<EncoderConfig> c = encoder_config_from_json(missing);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("'intermediate'"), std::string::npos);

  nlohmann::json bad = small_bert();
  bad["heads"] = 5;  // 96 is not a multiple of 5
  c = encoder_config_from_json(bad);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("heads"), std::string::npos);

  bad = small_bert();
  bad["layers"] = "two";
  c = encoder_config_from_json(bad);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("'layers'"), std::string::npos);

  bad = small_bert();
  bad["activation"] = "swiglu";
  c = encoder_config_from_json(bad);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kUnsupported);
}

TEST(EncoderInput, IsSeededAndPadsLaterSamples) {
  const EncoderConfig c = config();
  const EncoderInput a = make_synthetic_encoder_input(c, 4, 16, 7);
  const EncoderInput b = make_synthetic_encoder_input(c, 4, 16, 7);
  const EncoderInput other = make_synthetic_encoder_input(c, 4, 16, 8);
  EXPECT_EQ(a.token_ids, b.token_ids);
  EXPECT_NE(a.token_ids, other.token_ids);
  EXPECT_TRUE(validate_encoder_input(c, a).ok());
  for (int64_t s = 0; s < 16; ++s) EXPECT_EQ(a.attention_mask[s], 1);  // sample 0 is full
  for (int64_t b2 = 1; b2 < 4; ++b2) {
    int64_t len = 0;
    while (len < 16 && a.attention_mask[b2 * 16 + len]) ++len;
    EXPECT_GE(len, 8);
    for (int64_t s = len; s < 16; ++s) EXPECT_EQ(a.attention_mask[b2 * 16 + s], 0);
  }
}

TEST(EncoderModel, F32ForwardIsDeterministicAndSeedDependent) {
  const EncoderConfig c = config();
  ThreadPool pool(2);
  const ExecContext ctx{best_kernel_path(), &pool};
  const EncoderInput in = make_synthetic_encoder_input(c, 2, 12, 1);
  const EncoderModel m1 =
      std::move(EncoderModel::create_synthetic(c, WeightFormat::kF32, 42, ctx)).value();
  const EncoderModel m2 =
      std::move(EncoderModel::create_synthetic(c, WeightFormat::kF32, 42, ctx)).value();
  const EncoderModel m3 =
      std::move(EncoderModel::create_synthetic(c, WeightFormat::kF32, 43, ctx)).value();
  const Tensor a = run(m1, in, ctx), a_again = run(m1, in, ctx), b = run(m2, in, ctx),
               d = run(m3, in, ctx);
  EXPECT_EQ(a.shape(), (Shape{2, 12, kHidden}));
  EXPECT_TRUE(testing::all_finite(a.view()));
  EXPECT_EQ(std::memcmp(a.data(), a_again.data(), a.bytes()), 0);
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.bytes()), 0);
  const AccuracyMetrics diff = compare_outputs(d.data(), a.data(), 24, kHidden);
  EXPECT_GT(diff.nmse, 0.5) << "another seed must give another model";
}

TEST(EncoderModel, Q8_0ForwardIsCloseToF32OnEveryPath) {
  const EncoderConfig c = config();
  ThreadPool pool(2);
  const EncoderInput in = make_synthetic_encoder_input(c, 2, 16, 3);
  const ExecContext f32_ctx{best_kernel_path(), &pool};
  const EncoderModel ref =
      std::move(EncoderModel::create_synthetic(c, WeightFormat::kF32, 9, f32_ctx)).value();
  const Tensor want = run(ref, in, f32_ctx);
  const double pass_nmse = tolerance_named("q8_0")->pass_nmse;
  for (KernelPath path : available_kernel_paths()) {
    const ExecContext ctx{path, &pool};
    const EncoderModel q = ref.converted(WeightFormat::kQ8_0, ctx);
    const Tensor got = run(q, in, ctx);
    const AccuracyMetrics m = compare_outputs(got.data(), want.data(), 32, kHidden);
    EXPECT_EQ(m.nonfinite, 0) << kernel_path_name(path);
    EXPECT_GT(m.nmse, 0.0) << kernel_path_name(path);
    EXPECT_LE(m.nmse, pass_nmse) << kernel_path_name(path);
    EXPECT_GT(m.cosine, 0.999) << kernel_path_name(path);
    EXPECT_LT(q.weights_bytes(), ref.weights_bytes());
  }
}

TEST(EncoderModel, SyntheticQ8_0ModelEqualsConvertedF32Model) {
  const EncoderConfig c = config();
  const ExecContext ctx{best_kernel_path(), nullptr};
  const EncoderInput in = make_synthetic_encoder_input(c, 1, 10, 4);
  const EncoderModel ref =
      std::move(EncoderModel::create_synthetic(c, WeightFormat::kF32, 5, ctx)).value();
  const EncoderModel direct =
      std::move(EncoderModel::create_synthetic(c, WeightFormat::kQ8_0, 5, ctx)).value();
  const EncoderModel converted = ref.converted(WeightFormat::kQ8_0, ctx);
  const Tensor a = run(direct, in, ctx), b = run(converted, in, ctx);
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.bytes()), 0);
  EXPECT_EQ(direct.weights_bytes(), converted.weights_bytes());
}

TEST(EncoderModel, OutputDoesNotDependOnThreadCount) {
  const EncoderConfig c = config();
  const EncoderInput in = make_synthetic_encoder_input(c, 3, 9, 6);
  ThreadPool one(1), three(3);
  for (KernelPath path : available_kernel_paths()) {
    const EncoderModel q = std::move(EncoderModel::create_synthetic(c, WeightFormat::kQ8_0, 2,
                                                                    ExecContext{path, &one}))
                               .value();
    const Tensor a = run(q, in, ExecContext{path, &one});
    const Tensor b = run(q, in, ExecContext{path, &three});
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.bytes()), 0) << kernel_path_name(path);
  }
}

TEST(EncoderModel, PaddingTokensDoNotChangeRealTokenOutputs) {
  const EncoderConfig c = config();
  const ExecContext ctx{best_kernel_path(), nullptr};
  const EncoderModel m =
      std::move(EncoderModel::create_synthetic(c, WeightFormat::kF32, 11, ctx)).value();
  EncoderInput in = make_synthetic_encoder_input(c, 1, 8, 1);
  for (int s = 5; s < 8; ++s) in.attention_mask[s] = 0;
  const Tensor a = run(m, in, ctx);
  for (int s = 5; s < 8; ++s) in.token_ids[s] = (in.token_ids[s] + 123) % 500;
  const Tensor b = run(m, in, ctx);
  for (int64_t i = 0; i < 5 * kHidden; ++i) ASSERT_EQ(a.data()[i], b.data()[i]) << i;
  bool padded_changed = false;
  for (int64_t i = 5 * kHidden; i < 8 * kHidden; ++i) padded_changed |= a.data()[i] != b.data()[i];
  EXPECT_TRUE(padded_changed);
}

TEST(EncoderModel, RejectsSequenceLongerThanPositionTable) {
  const EncoderConfig c = config();
  const ExecContext ctx{KernelPath::kScalar, nullptr};
  const EncoderModel m =
      std::move(EncoderModel::create_synthetic(c, WeightFormat::kF32, 1, ctx)).value();
  const EncoderInput in = make_synthetic_encoder_input(c, 1, 41, 1);
  const Result<Tensor> out = m.forward(in, ctx);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(out.status().message().find("max_positions"), std::string::npos);
}

TEST(EncoderModel, WeightsBytesCountsEveryTensorAtItsFormat) {
  const EncoderConfig c = config();
  const ExecContext ctx{KernelPath::kScalar, nullptr};
  const EncoderModel f =
      std::move(EncoderModel::create_synthetic(c, WeightFormat::kF32, 1, ctx)).value();
  const EncoderModel q = f.converted(WeightFormat::kQ8_0, ctx);
  const std::size_t h = kHidden, inter = kIntermediate, layers = 2;
  const std::size_t embeddings = (500 + 40 + 2) * h * 4 + 2 * h * 4;
  const std::size_t norms_and_biases = layers * (4 * h * 4 + 2 * 2 * h * 4 + inter * 4 + h * 4);
  const std::size_t linear_params = layers * (4 * h * h + 2 * h * inter);
  EXPECT_EQ(f.weights_bytes(), embeddings + norms_and_biases + linear_params * 4);
  // K = 96 and 160 are whole blocks: 34 bytes per 32 weights.
  EXPECT_EQ(q.weights_bytes(), embeddings + norms_and_biases + linear_params / 32 * 34);
}

}  // namespace
}  // namespace am::kernels
