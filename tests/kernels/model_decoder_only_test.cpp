// Decoder-only graphs (LLaMA-style with RoPE/GQA/SwiGLU and GPT-2 style) against the model.h
// contract, plus KV-cache correctness: decoding token by token gives the same logits as a full
// causal pass over the whole sequence.
#include <gtest/gtest.h>

#include "tests/kernels/named_formats.h"
#include "kernels/models/decoder_only.h"
#include "tests/kernels/model_family_util.h"

namespace am::kernels {
namespace {

jobs::JobSpec tiny_llama_spec() {
  jobs::JobSpec s;
  s.model = "tiny-llama";
  s.architecture = "decoder-only";
  s.model_config = {{"layers", 3}, {"hidden", 64}, {"heads", 4}, {"kv_heads", 2}, {"intermediate", 160},
                    {"vocab", 300}, {"max_positions", 256}, {"rope_theta", 10000.0}, {"decode_steps", 4}};
  s.batch = 2;
  s.seq_len = 7;
  s.seed = 11;
  return s;
}

TEST(DecoderOnlyGraph, LlamaStyleMeetsTheGraphContract) {
  testing::expect_family_contract(tiny_llama_spec(), {.rows = 2 * 5, .cols = 300, .logits = true, .generative = true});
}

TEST(DecoderOnlyGraph, Gpt2StyleMeetsTheGraphContract) {
  jobs::JobSpec s = tiny_llama_spec();
  s.model_config = {{"style", "gpt2"}, {"layers", 2}, {"hidden", 48}, {"heads", 4}, {"intermediate", 192},
                    {"vocab", 257}, {"max_positions", 64}, {"decode_steps", 3}};
  testing::expect_family_contract(s, {.rows = 2 * 4, .cols = 257, .logits = true, .generative = true});
}

TEST(DecoderOnlyGraph, QwenStyleBiasesAndPartialRotaryBuild) {
  jobs::JobSpec s = tiny_llama_spec();
  s.model_config["attention_bias"] = true;
  s.model_config["rotary_dim"] = 8;
  s.model_config["rope_layout"] = "gptj";
  s.model_config["tie_embeddings"] = true;
  testing::expect_family_contract(s, {.rows = 2 * 5, .cols = 300, .logits = true, .generative = true});
}

// With a KV cache, step-by-step decoding must equal prefilling the whole sequence at once.
TEST(DecoderOnlyGraph, CachedDecodeMatchesOneFullPass) {
  ThreadPool pool(2);
  ExecContext ctx{best_kernel_path(), &pool};
  jobs::JobSpec spec = tiny_llama_spec();
  auto config = decoder_lm_config_from_json(spec.model_config, "decoder-only");
  ASSERT_TRUE(config.ok());
  auto formats = plan_named("f32");
  ASSERT_TRUE(formats.ok());
  auto model = DecoderLm::create_synthetic(*config, *formats, 5, ctx);
  ASSERT_TRUE(model.ok()) << model.status().message();
  CpuBackend cpu(ctx);
  const int64_t batch = 1, prompt = 3, steps = 4, total = prompt + steps, h = 64;
  std::vector<int32_t> ids = seeded_token_ids(total, 300, 9, 0);
  std::vector<int32_t> first(ids.begin(), ids.begin() + prompt), rest(ids.begin() + prompt, ids.end());
  StackCache cache = model->stack.make_cache(cpu, batch, total);
  Tensor logits(Shape{steps + 1, 300});
  PhaseTimes phases;
  ASSERT_TRUE(generate_teacher_forced(cpu, model->stack, model->embedding, model->head, batch, first, prompt, rest,
                                      steps, cache, std::chrono::steady_clock::now(), logits, phases)
                  .ok());
  // Full causal pass over prompt + forced tokens; logits at positions prompt-1 .. total-2 must match.
  StackCache full = model->stack.make_cache(cpu, batch, total);
  Tensor x(Shape{total, h});
  ASSERT_TRUE(model->embedding.embed(cpu, ids.data(), 1, total, 0, x.view()).ok());
  ASSERT_TRUE(model->stack.forward(cpu, x.view(), 1, total, 0, &full, nullptr).ok());
  Tensor ref(Shape{total, 300});
  ASSERT_TRUE(cpu.linear(model->head, x.view(), ref.view()).ok());
  for (int64_t t = 0; t <= steps; ++t) {
    for (int64_t v = 0; v < 300; ++v) {
      ASSERT_NEAR(logits.row(t)[v], ref.row(prompt - 1 + t)[v], 2e-4f) << "step " << t << " vocab " << v;
    }
  }
}

TEST(DecoderOnlyGraph, RejectsBadConfigNamingTheKey) {
  jobs::JobSpec s = tiny_llama_spec();
  s.model_config["kv_heads"] = 3;
  ThreadPool pool(1);
  ExecContext ctx{KernelPath::kScalar, &pool};
  auto g = build_graph(s, Precision::kF32, ctx);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("kv_heads"), std::string::npos);
  s = tiny_llama_spec();
  s.model_config["layers"] = 100000;
  s.model_config["hidden"] = 8192;
  s.model_config["intermediate"] = 28672;
  s.model_config["heads"] = 64;
  g = build_graph(s, Precision::kF32, ctx);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("cap"), std::string::npos) << g.status().message();
}

}  // namespace
}  // namespace am::kernels
