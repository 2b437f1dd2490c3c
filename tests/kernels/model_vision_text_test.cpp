#include <gtest/gtest.h>

#include "family_test_util.h"

namespace am::kernels {
namespace {

nlohmann::json tiny_clip() {
  return {{"variant", "clip"},      {"vision_image_size", 32}, {"vision_patch", 8},   {"vision_layers", 2},
          {"vision_hidden", 64},    {"vision_heads", 4},       {"vision_intermediate", 128},
          {"vision_activation", "quick_gelu"},
          {"text_layers", 2},       {"text_hidden", 32},       {"text_heads", 2},     {"text_intermediate", 64},
          {"vocab", 200},           {"max_positions", 16},     {"projection_dim", 24}};
}

nlohmann::json tiny_captioner() {
  return {{"variant", "vit-gpt2"}, {"vision_image_size", 32}, {"vision_patch", 8}, {"vision_layers", 2},
          {"vision_hidden", 64},   {"vision_heads", 4},       {"vision_intermediate", 128},
          {"layers", 2},           {"hidden", 64},            {"heads", 4},        {"intermediate", 128},
          {"vocab", 300},          {"max_positions", 32},     {"decode_steps", 3}};
}

TEST(VisionTextFamily, ClipSimilarityLogitsFiniteDeterministicCloseAtQ8) {
  testing::expect_family_basics(testing::family_spec("vision-encoder-text-decoder", tiny_clip(), 3, 8), 3, 3, true, 1e-2);
}

TEST(VisionTextFamily, ClipLogitsAreScaledCosinesWithinLogitScale) {
  testing::FamilyRun r = testing::build_and_run(testing::family_spec("vision-encoder-text-decoder", tiny_clip(), 2, 8), "f32");
  const double bound = std::exp(2.6593) + 1e-3;
  for (int64_t i = 0; i < r.out.output.numel(); ++i) EXPECT_LE(std::abs(r.out.output.data()[i]), bound);
}

TEST(VisionTextFamily, CaptionerTeacherForcedLogitsAndPhases) {
  const jobs::JobSpec spec = testing::family_spec("vision-encoder-text-decoder", tiny_captioner(), 2, 5);
  testing::expect_family_basics(spec, 2 * 4, 300, true, 1e-2);
  testing::FamilyRun r = testing::build_and_run(spec, "f32");
  EXPECT_EQ(r.out.phases.prefill_tokens, 10);
  EXPECT_EQ(r.out.phases.decode_tokens, 6);
  EXPECT_GT(r.out.phases.decode_ms, 0.0);
}

TEST(VisionTextFamily, MissingOpIsUnsupportedNamingIt) {
  testing::expect_unsupported_on_empty_backend(testing::family_spec("vision-encoder-text-decoder", tiny_clip(), 1, 8));
  testing::expect_unsupported_on_empty_backend(testing::family_spec("vision-encoder-text-decoder", tiny_captioner(), 1, 4));
}

TEST(VisionTextFamily, CaptionerRejectsEncoderWidthDifferentFromDecoder) {
  nlohmann::json c = tiny_captioner();
  c["vision_hidden"] = 32;
  c["vision_heads"] = 2;
  ThreadPool pool(1);
  Result<std::unique_ptr<ModelGraph>> g = build_graph(testing::family_spec("vision-encoder-text-decoder", c, 1, 4), Precision::kF32,
                                                      ExecContext{best_kernel_path(), &pool});
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("vision_hidden"), std::string::npos);
}

}  // namespace
}  // namespace am::kernels
