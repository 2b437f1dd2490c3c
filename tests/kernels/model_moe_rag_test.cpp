// Mixture-of-experts (Mixtral decoder, Switch encoder-decoder) and RAG graphs against the
// model.h contract.
#include <gtest/gtest.h>

#include "tests/kernels/model_family_util.h"

namespace am::kernels {
namespace {

TEST(MixtureOfExpertsGraph, MixtralMeetsTheGraphContract) {
  jobs::JobSpec s;
  s.architecture = "mixture-of-experts";
  s.model_config = {{"layers", 2}, {"hidden", 32}, {"heads", 4}, {"kv_heads", 2}, {"intermediate", 48},
                    {"vocab", 100}, {"max_positions", 128}, {"experts", 4}, {"experts_per_token", 2},
                    {"decode_steps", 3}};
  s.batch = 2;
  s.seq_len = 6;
  s.seed = 4;
  // Routing may flip under quantization, so q8_0 may differ more than for dense models.
  testing::expect_family_contract(s, {.rows = 2 * 4, .cols = 100, .logits = true, .generative = true, .max_q8_nmse = 5e-2});
}

TEST(MixtureOfExpertsGraph, SwitchMeetsTheGraphContract) {
  jobs::JobSpec s;
  s.architecture = "mixture-of-experts";
  s.model_config = {{"layers", 2}, {"decoder_layers", 2}, {"hidden", 32}, {"heads", 4}, {"intermediate", 64},
                    {"vocab", 90}, {"experts", 4}, {"rel_buckets", 8}, {"decode_steps", 2}};
  s.batch = 1;
  s.seq_len = 8;
  s.seed = 4;
  testing::expect_family_contract(s, {.rows = 3, .cols = 90, .logits = true, .generative = true, .max_q8_nmse = 5e-2});
}

TEST(MixtureOfExpertsGraph, RequiresExperts) {
  jobs::JobSpec s;
  s.architecture = "mixture-of-experts";
  s.model_config = {{"layers", 1}};
  ExecContext ctx{};
  auto g = build_graph(s, Precision::kF32, ctx);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("experts"), std::string::npos);
}

TEST(RagGraph, MeetsTheGraphContract) {
  jobs::JobSpec s;
  s.architecture = "rag";
  s.model_config = {{"question_layers", 1}, {"question_hidden", 32}, {"question_heads", 2},
                    {"question_intermediate", 64}, {"question_vocab", 120}, {"question_max_positions", 64},
                    {"layers", 1}, {"hidden", 32}, {"heads", 2}, {"intermediate", 64}, {"vocab", 110},
                    {"max_positions", 64}, {"n_docs", 2}, {"passages", 50}, {"passage_len", 6}, {"decode_steps", 2}};
  s.batch = 2;
  s.seq_len = 5;
  s.seed = 2;
  // A quantized query may retrieve another passage: the generator then reads different text.
  testing::expect_family_contract(s, {.rows = 2 * 2 * 3, .cols = 110, .logits = true, .generative = true, .max_q8_nmse = 0.5});
}

}  // namespace
}  // namespace am::kernels
