// Speech graphs (Whisper log-mel encoder-decoder, Wav2Vec2 raw-audio encoder) against the
// model.h contract.
#include <gtest/gtest.h>

#include "tests/kernels/model_family_util.h"

namespace am::kernels {
namespace {

TEST(SpeechGraph, WhisperMeetsTheGraphContract) {
  jobs::JobSpec s;
  s.model = "tiny-whisper";
  s.architecture = "speech";
  s.model_config = {{"style", "whisper"}, {"layers", 2}, {"hidden", 48}, {"heads", 4}, {"intermediate", 96},
                    {"vocab", 120}, {"n_mels", 16}, {"max_source_positions", 64}, {"max_target_positions", 32},
                    {"decode_steps", 3}};
  s.batch = 2;
  s.seq_len = 10;
  s.seed = 8;
  testing::expect_family_contract(s, {.rows = 2 * 4, .cols = 120, .logits = true, .generative = true});
}

TEST(SpeechGraph, Wav2Vec2MeetsTheGraphContract) {
  jobs::JobSpec s;
  s.model = "tiny-wav2vec2";
  s.architecture = "speech";
  s.model_config = {{"style", "wav2vec2"}, {"layers", 2}, {"hidden", 32}, {"heads", 4}, {"intermediate", 64},
                    {"conv_dim", 24}, {"pos_conv_kernel", 16}, {"pos_conv_groups", 4}};
  s.batch = 2;
  s.seq_len = 12;
  s.seed = 8;
  testing::expect_family_contract(s, {.rows = 2 * 12, .cols = 32});
}

TEST(SpeechGraph, RejectsAnUnknownStyle) {
  jobs::JobSpec s;
  s.architecture = "speech";
  s.model_config = {{"style", "hubert"}};
  ExecContext ctx{};
  auto g = build_graph(s, Precision::kF32, ctx);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("style"), std::string::npos);
}

}  // namespace
}  // namespace am::kernels
