#include <gtest/gtest.h>

#include "family_test_util.h"
#include "tests/kernels/tiny_family_configs.h"

namespace am::kernels {
namespace {

using testing::tiny_captioner;
using testing::tiny_clip;

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
