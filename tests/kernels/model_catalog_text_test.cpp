// Every text-family catalog entry's published [config] is read by its graph builder: each entry,
// scaled down to a few units wide and one layer deep (as plans do), builds and runs at f32.
#include <gtest/gtest.h>

#include <string>

#include "jobs/catalog.h"
#include "tests/kernels/model_family_util.h"

namespace am::kernels {
namespace {

nlohmann::json scaled(nlohmann::json c) {
  for (const char* k : {"layers", "decoder_layers", "question_layers"}) if (c.contains(k)) c[k] = 1;
  if (c.contains("heads")) c["hidden"] = c["heads"].get<int64_t>() * 8;
  if (c.contains("head_dim")) c["head_dim"] = 8;
  if (c.contains("question_heads")) c["question_hidden"] = c["question_heads"].get<int64_t>() * 4;
  for (const char* k : {"intermediate", "question_intermediate"}) if (c.contains(k)) c[k] = 32;
  for (const char* k : {"vocab", "question_vocab"}) if (c.contains(k)) c[k] = 97;
  if (c.contains("conv_dim")) c["conv_dim"] = 8;
  if (c.contains("pos_conv_kernel")) c["pos_conv_kernel"] = 4;
  if (c.contains("passages")) c["passages"] = 20;
  if (c.contains("passage_len")) c["passage_len"] = 4;
  if (c.contains("decode_steps")) c["decode_steps"] = 2;
  return c;
}

class TextCatalog : public ::testing::TestWithParam<std::string> {};

TEST_P(TextCatalog, ScaledEntryBuildsAndRuns) {
  auto entry = jobs::load_model(std::string(ACCELMATRIX_SOURCE_DIR) + "/jobs/models", GetParam());
  ASSERT_TRUE(entry.ok()) << entry.status().message();
  jobs::JobSpec spec;
  spec.model = entry->name;
  spec.architecture = entry->architecture;
  spec.model_config = scaled(entry->config);
  spec.batch = 1;
  spec.seq_len = 4;
  spec.seed = 1;
  ExecContext ctx{};
  auto g = build_graph(spec, Precision::kF32, ctx);
  ASSERT_TRUE(g.ok()) << g.status().message();
  CpuBackend cpu(ctx);
  auto out = (*g)->run(cpu);
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_TRUE(testing::all_finite(out->output.view()));
}

INSTANTIATE_TEST_SUITE_P(Entries, TextCatalog,
                         ::testing::Values("TinyLlama-1.1B-Chat", "Qwen2-0.5B-Instruct", "gpt2", "Mixtral-8x7B",
                                           "t5-efficient-tiny", "flan-t5-base", "switch-base-8", "Whisper-tiny",
                                           "Wav2Vec2-base", "wav2vec2-base-960h", "roberta-base", "rag-sequence-nq"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& ch : n) if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

}  // namespace
}  // namespace am::kernels
