// Mixture-of-experts (Mixtral decoder, Switch encoder-decoder) and RAG graphs against the
// model.h contract.
#include <gtest/gtest.h>

#include "tests/kernels/model_family_util.h"
#include "tests/kernels/tiny_family_configs.h"

namespace am::kernels {
namespace {

TEST(MixtureOfExpertsGraph, MixtralMeetsTheGraphContract) {
  jobs::JobSpec s;
  s.architecture = "mixture-of-experts";
  s.model_config = testing::tiny_mixtral();
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
  s.model_config = testing::tiny_rag();
  s.batch = 2;
  s.seq_len = 5;
  s.seed = 2;
  // A quantized query may retrieve another passage: the generator then reads different text.
  testing::expect_family_contract(s, {.rows = 2 * 2 * 3, .cols = 110, .logits = true, .generative = true, .max_q8_nmse = 0.5});
}

}  // namespace
}  // namespace am::kernels
