#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "family_test_util.h"
#include "tests/kernels/tiny_family_configs.h"
#include "kernels/models/multimodal.h"

namespace am::kernels {
namespace {

using testing::tiny_clap;
using testing::tiny_llava;
using testing::tiny_xclip;

TEST(MultimodalFamily, LlavaPrefillOverImageAndTextThenDecode) {
  const jobs::JobSpec spec = testing::family_spec("multimodal", tiny_llava(1), 2, 6);
  testing::expect_family_basics(spec, 2 * 4, 256, true, 1e-2);
  testing::FamilyRun r = testing::build_and_run(spec, "f32");
  // The prompt's image token is replaced by 16 image tokens (4x4 patches): 16 + 6 - 1 per sample.
  EXPECT_EQ(r.out.phases.prefill_tokens, 2 * (16 + 6 - 1));
  EXPECT_EQ(r.out.phases.decode_tokens, 6);
}

TEST(MultimodalFamily, LlavaAnyResCropsMultiplyImageTokens) {
  testing::FamilyRun r = testing::build_and_run(testing::family_spec("multimodal", tiny_llava(3), 1, 4), "f32");
  EXPECT_EQ(r.out.phases.prefill_tokens, 3 * 16 + 4 - 1);
}

// Hand-laid: 2x2 patches per crop (side 2), a 1x2 tile grid: base patches 0-3, then the grid
// rows of tiles 1 (rows 4-7) and 2 (rows 8-11) side by side, each followed by the newline (12).
TEST(MultimodalFamily, LlavaAnyResLayoutIsBaseThenTileGridRowsWithNewlines) {
  EXPECT_EQ(llava_image_token_layout(3, 2, 1, 2),
            (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 8, 9, 12, 6, 7, 10, 11, 12}));
  EXPECT_EQ(llava_image_token_layout(2, 2, 0, 0), (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST(MultimodalFamily, LlavaAnyResGridAddsOneNewlinePerGridRow) {
  nlohmann::json c = tiny_llava(5);
  c["image_grid"] = {2, 2};
  const jobs::JobSpec spec = testing::family_spec("multimodal", c, 1, 4);
  testing::expect_family_basics(spec, 4, 256, true, 1e-2);
  testing::FamilyRun r = testing::build_and_run(spec, "f32");
  // 16 base patches + an 8x8 tile grid with 8 newline tokens in place of the image token of the
  // 4 prompt tokens.
  EXPECT_EQ(r.out.phases.prefill_tokens, 16 + 8 * (8 + 1) + 4 - 1);
}

// Given prompts must hold exactly one image token (image_token_index) each: it says where the
// image's tokens go.
TEST(MultimodalFamily, LlavaPromptsNeedExactlyOneImageToken) {
  nlohmann::json c = tiny_llava(1);
  c["image_token_index"] = 250;
  const jobs::JobSpec spec = testing::family_spec("multimodal", c, 1, 4);
  ThreadPool pool(1);
  const ExecContext ctx{best_kernel_path(), &pool};
  LlavaInputs in;
  in.pixels.assign(32 * 32 * 3, 0.5f);
  in.forced.assign(3, 7);
  for (const std::vector<int32_t>& prompt : {std::vector<int32_t>{1, 2, 3, 4}, std::vector<int32_t>{1, 250, 3, 250}}) {
    in.prompt = prompt;
    const Status s = build_llava_graph_on(spec, Precision::kF32, ctx, &in).status();
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
    EXPECT_NE(s.message().find("image token"), std::string::npos) << s.message();
  }
  in.prompt = {1, 250, 3, 4};
  EXPECT_TRUE(build_llava_graph_on(spec, Precision::kF32, ctx, &in).ok());
}

TEST(MultimodalFamily, LlavaGridAndCropCountMustAgree) {
  nlohmann::json c = tiny_llava(3);
  c["image_grid"] = {2, 2};
  ThreadPool pool(1);
  Result<std::unique_ptr<ModelGraph>> g =
      build_graph(testing::family_spec("multimodal", c, 1, 4), Precision::kF32, ExecContext{best_kernel_path(), &pool});
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("image_grid"), std::string::npos);
}

TEST(MultimodalFamily, XclipVideoTextLogitsFiniteDeterministicCloseAtQ8) {
  testing::expect_family_basics(testing::family_spec("multimodal", tiny_xclip(), 2, 8), 2, 2, true, 1e-2);
}

double max_abs_diff(const Tensor& y, const Tensor& ref) {
  return compare_outputs(y.data(), ref.data(), ref.rows(), ref.cols()).max_abs_err;
}

// The prompt generator's output enters only through alpha: at alpha 0 its depth cannot matter,
// and a real alpha moves the logits.
TEST(MultimodalFamily, XclipPromptGeneratorEntersThroughAlpha) {
  nlohmann::json off = tiny_xclip();
  off["prompt_alpha"] = 0.0;
  nlohmann::json off_one_layer = off;
  off_one_layer["prompt_layers"] = 1;
  nlohmann::json on = tiny_xclip();
  on["prompt_alpha"] = 1.0;
  const testing::FamilyRun a = testing::build_and_run(testing::family_spec("multimodal", off, 2, 8), "f32");
  const testing::FamilyRun b = testing::build_and_run(testing::family_spec("multimodal", off_one_layer, 2, 8), "f32");
  const testing::FamilyRun c = testing::build_and_run(testing::family_spec("multimodal", on, 2, 8), "f32");
  ASSERT_EQ(a.out.output.numel(), 4);
  EXPECT_EQ(max_abs_diff(a.out.output, b.out.output), 0.0);
  EXPECT_GT(max_abs_diff(a.out.output, c.out.output), 1e-3);
}

// Prompts are video-specific: video 0's logit against text 0 depends only on video 0 and text 0
// (seeded as the first of each), so it is the same whether a second video is in the batch or
// not. Mixing videos in the visual tokens or the cross-attention would break this.
TEST(MultimodalFamily, XclipPromptsOfOneVideoIgnoreTheOtherVideos) {
  nlohmann::json on = tiny_xclip();
  on["prompt_alpha"] = 1.0;
  const testing::FamilyRun one = testing::build_and_run(testing::family_spec("multimodal", on, 1, 8), "f32");
  const testing::FamilyRun two = testing::build_and_run(testing::family_spec("multimodal", on, 2, 8), "f32");
  ASSERT_EQ(one.out.output.numel(), 1);
  ASSERT_EQ(two.out.output.numel(), 4);
  EXPECT_NEAR(one.out.output.data()[0], two.out.output.data()[0], 1e-4f * std::abs(one.out.output.data()[0]) + 1e-5f);
}

TEST(MultimodalFamily, ClapAudioTextLogitsFiniteDeterministicCloseAtQ8) {
  testing::expect_family_basics(testing::family_spec("multimodal", tiny_clap(), 2, 10), 2, 2, true, 1e-2);
}

TEST(MultimodalFamily, MissingOpIsUnsupportedNamingIt) {
  testing::expect_unsupported_on_empty_backend(testing::family_spec("multimodal", tiny_llava(1), 1, 4));
  testing::expect_unsupported_on_empty_backend(testing::family_spec("multimodal", tiny_clap(), 1, 4));
}

TEST(MultimodalFamily, LlavaRejectsPromptBeyondMaxPositions) {
  ThreadPool pool(1);
  Result<std::unique_ptr<ModelGraph>> g = build_graph(testing::family_spec("multimodal", tiny_llava(4), 1, 100), Precision::kF32,
                                                      ExecContext{best_kernel_path(), &pool});
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("max_positions"), std::string::npos);
}

}  // namespace
}  // namespace am::kernels
