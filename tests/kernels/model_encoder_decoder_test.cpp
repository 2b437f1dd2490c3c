// Encoder-decoder graphs (T5 with relative position bias, flan-style gated GELU, BART) against
// the model.h contract.
#include <gtest/gtest.h>

#include "tests/kernels/model_family_util.h"
#include "tests/kernels/tiny_family_configs.h"

namespace am::kernels {
namespace {

jobs::JobSpec t5_spec() {
  jobs::JobSpec s;
  s.model = "tiny-t5";
  s.architecture = "encoder-decoder";
  s.model_config = testing::tiny_t5();
  s.batch = 2;
  s.seq_len = 9;
  s.seed = 3;
  return s;
}

TEST(EncoderDecoderGraph, T5MeetsTheGraphContract) {
  testing::expect_family_contract(t5_spec(), {.rows = 2 * 4, .cols = 200, .logits = true, .generative = true});
}

TEST(EncoderDecoderGraph, FlanGatedGeluMeetsTheGraphContract) {
  jobs::JobSpec s = t5_spec();
  s.model_config["gated_ffn"] = true;
  s.model_config["activation"] = "gelu_new";
  s.model_config["tie_embeddings"] = false;
  testing::expect_family_contract(s, {.rows = 2 * 4, .cols = 200, .logits = true, .generative = true});
}

TEST(EncoderDecoderGraph, BartMeetsTheGraphContract) {
  jobs::JobSpec s = t5_spec();
  s.model_config = {{"style", "bart"}, {"layers", 2}, {"hidden", 32}, {"heads", 4}, {"intermediate", 64},
                    {"vocab", 150}, {"max_positions", 64}, {"decode_steps", 2}};
  testing::expect_family_contract(s, {.rows = 2 * 3, .cols = 150, .logits = true, .generative = true});
}

TEST(EncoderDecoderGraph, BartRejectsMissingMaxPositions) {
  jobs::JobSpec s = t5_spec();
  s.model_config["style"] = "bart";
  ExecContext ctx{};
  auto g = build_graph(s, Precision::kF32, ctx);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("max_positions"), std::string::npos);
}

}  // namespace
}  // namespace am::kernels
