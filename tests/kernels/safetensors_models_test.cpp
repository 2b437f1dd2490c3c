// Models built from safetensors checkpoints: a tiny BERT and a tiny LLaMA written from seeded
// synthetic models load into models whose outputs equal the synthetic ones bit for bit (f32 and
// q8_0), half-precision checkpoints convert exactly, alternative BERT spellings load, and
// missing tensors, wrong shapes, bad dtypes and unfit configs give their errors.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "tests/kernels/named_formats.h"
#include "kernels/formats/bf16.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/formats/fp16.h"
#include "kernels/models/decoder_only.h"
#include "kernels/models/encoder_only.h"
#include "kernels/models/decoder_only_checkpoint.h"
#include "kernels/models/encoder_only_checkpoint.h"
#include "kernels/weights/safetensors_writer.h"

namespace am::kernels {
namespace {

constexpr uint64_t kSeed = 20240611;

std::string temp_path(const std::string& name) { return ::testing::TempDir() + name; }

void expect_bitwise_equal(const Tensor& a, const Tensor& b) {
  ASSERT_EQ(a.shape(), b.shape());
  ASSERT_GT(a.numel(), 0);
  for (int64_t i = 0; i < a.numel(); ++i) {
    ASSERT_EQ(std::memcmp(&a.data()[i], &b.data()[i], sizeof(float)), 0)
        << "element " << i << ": " << a.data()[i] << " vs " << b.data()[i];
  }
}

EncoderConfig tiny_bert() {
  EncoderConfig c;
  c.layers = 2;
  c.hidden = 32;
  c.heads = 4;
  c.intermediate = 64;
  c.vocab = 50;
  c.max_positions = 16;
  return c;
}

DecoderLmConfig tiny_llama(nlohmann::json extra = nlohmann::json::object()) {
  nlohmann::json doc = {{"layers", 2}, {"hidden", 32}, {"heads", 4}, {"kv_heads", 2}, {"intermediate", 48},
                        {"vocab", 64}, {"max_positions", 64}, {"decode_steps", 3}};
  doc.update(extra);
  auto c = decoder_lm_config_from_json(doc, "decoder-only");
  EXPECT_TRUE(c.ok()) << c.status().to_string();
  return *c;
}

jobs::JobSpec llama_spec() {
  jobs::JobSpec s;
  s.architecture = "decoder-only";
  s.batch = 2;
  s.seq_len = 5;
  s.seed = kSeed;
  return s;
}

Result<Tensor> bert_output(const EncoderModel& m) {
  const EncoderInput in = make_synthetic_encoder_input(m.config(), 2, 12, kSeed);
  ExecContext ctx;
  return m.forward(in, ctx);
}

Result<Tensor> llama_logits(DecoderLm m) {
  ExecContext ctx;
  CpuBackend be(ctx);
  AM_ASSIGN_OR_RETURN(auto graph, make_decoder_lm_graph(std::move(m), llama_spec()));
  AM_ASSIGN_OR_RETURN(GraphOutput out, graph->run(be));
  return std::move(out.output);
}

// Rewrites a checkpoint with each tensor renamed by `rename` (empty result: dropped) and stored
// as `dtype` for the names `dtype_for` picks.
void rewrite(const std::string& from, const std::string& to, const std::function<std::string(const std::string&)>& rename) {
  auto f = SafetensorsFile::open(from);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  std::vector<Tensor> keep;
  std::vector<SafetensorsTensorOut> out;
  for (const SafetensorsEntry& e : f->entries()) {
    const std::string name = rename(e.name);
    if (name.empty()) continue;
    Shape s = e.shape.size() == 1 ? Shape{e.shape[0]} : Shape{e.shape[0], e.shape[1]};
    auto t = f->read_f32(e.name, s);
    ASSERT_TRUE(t.ok());
    keep.push_back(std::move(*t));
    out.push_back({name, SafetensorsDtype::kF32, e.shape, keep.back().data()});
  }
  ASSERT_TRUE(write_safetensors(to, out).ok());
}

TEST(SafetensorsBert, CheckpointOfSyntheticModelReproducesItBitForBit) {
  ExecContext ctx;
  auto synthetic = EncoderModel::create_synthetic(tiny_bert(), WeightFormat::kF32, kSeed, ctx);
  ASSERT_TRUE(synthetic.ok());
  const std::string path = temp_path("tiny_bert.safetensors");
  ASSERT_TRUE(save_bert_checkpoint(*synthetic, path).ok());
  for (WeightFormat fmt : {WeightFormat::kF32, WeightFormat::kQ8_0}) {
    auto loaded = load_bert_checkpoint(path, tiny_bert(), fmt, ctx);
    ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
    auto reference = EncoderModel::create_synthetic(tiny_bert(), fmt, kSeed, ctx);
    ASSERT_TRUE(reference.ok());
    EXPECT_EQ(loaded->weights_bytes(), reference->weights_bytes());
    auto a = bert_output(*loaded);
    auto b = bert_output(*reference);
    ASSERT_TRUE(a.ok() && b.ok());
    expect_bitwise_equal(*a, *b);
  }
  std::remove(path.c_str());
}

TEST(SafetensorsBert, AcceptsNamesWithoutPrefixAndGammaBeta) {
  ExecContext ctx;
  auto synthetic = EncoderModel::create_synthetic(tiny_bert(), WeightFormat::kF32, kSeed, ctx);
  ASSERT_TRUE(synthetic.ok());
  const std::string path = temp_path("tiny_bert_prefixed.safetensors"), bare = temp_path("tiny_bert_bare.safetensors");
  ASSERT_TRUE(save_bert_checkpoint(*synthetic, path).ok());
  rewrite(path, bare, [](const std::string& n) {
    std::string s = n.substr(5);  // drop "bert."
    if (s.find("LayerNorm.weight") != std::string::npos) s.replace(s.size() - 6, 6, "gamma");
    if (s.find("LayerNorm.bias") != std::string::npos) s.replace(s.size() - 4, 4, "beta");
    return s;
  });
  auto f = Checkpoint::open(bare);
  ASSERT_TRUE(f.ok());
  ASSERT_TRUE(f->contains("encoder.layer.1.output.LayerNorm.gamma"));
  auto loaded = load_bert_checkpoint(*f, tiny_bert(), WeightFormat::kF32, ctx);
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  auto a = bert_output(*loaded);
  auto b = bert_output(*synthetic);
  ASSERT_TRUE(a.ok() && b.ok());
  expect_bitwise_equal(*a, *b);
  std::remove(path.c_str());
  std::remove(bare.c_str());
}

TEST(SafetensorsBert, F16CheckpointHoldsEachWeightRoundedToHalf) {
  ExecContext ctx;
  auto synthetic = EncoderModel::create_synthetic(tiny_bert(), WeightFormat::kF32, kSeed, ctx);
  ASSERT_TRUE(synthetic.ok());
  const std::string path = temp_path("tiny_bert_f16.safetensors");
  ASSERT_TRUE(save_bert_checkpoint(*synthetic, path, SafetensorsDtype::kF16).ok());
  auto loaded = load_bert_checkpoint(path, tiny_bert(), WeightFormat::kF32, ctx);
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  auto want = synthetic->tensors();
  auto got = loaded->tensors();
  ASSERT_TRUE(want.ok() && got.ok());
  auto check = [](const Tensor& w, const Tensor& g) {
    ASSERT_EQ(w.shape(), g.shape());
    for (int64_t i = 0; i < w.numel(); ++i) ASSERT_EQ(g.data()[i], fp16_to_fp32(fp32_to_fp16(w.data()[i])));
  };
  check(want->word_embeddings, got->word_embeddings);
  check(want->layers[1].ffn_down_w, got->layers[1].ffn_down_w);
  check(want->layers[0].attention_norm_gamma, got->layers[0].attention_norm_gamma);
  std::remove(path.c_str());
}

TEST(SafetensorsBert, MissingTensorWrongShapeAndQuantizedExportAreErrors) {
  ExecContext ctx;
  auto synthetic = EncoderModel::create_synthetic(tiny_bert(), WeightFormat::kF32, kSeed, ctx);
  ASSERT_TRUE(synthetic.ok());
  const std::string path = temp_path("tiny_bert_err.safetensors"), cut = temp_path("tiny_bert_cut.safetensors");
  ASSERT_TRUE(save_bert_checkpoint(*synthetic, path).ok());
  rewrite(path, cut, [](const std::string& n) {
    return n == "bert.encoder.layer.1.attention.self.value.bias" ? std::string() : n;
  });
  Status s = load_bert_checkpoint(cut, tiny_bert(), WeightFormat::kF32, ctx).status();
  EXPECT_EQ(s.code(), StatusCode::kNotFound) << s.to_string();
  EXPECT_NE(s.message().find("bert.encoder.layer.1.attention.self.value.bias"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(cut), std::string::npos);

  EncoderConfig wider = tiny_bert();
  wider.intermediate = 96;
  s = load_bert_checkpoint(path, wider, WeightFormat::kF32, ctx).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("bert.encoder.layer.0.intermediate.dense.weight"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("[64, 32]"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("[96, 32]"), std::string::npos) << s.message();

  auto q8 = EncoderModel::create_synthetic(tiny_bert(), WeightFormat::kQ8_0, kSeed, ctx);
  ASSERT_TRUE(q8.ok());
  EXPECT_EQ(save_bert_checkpoint(*q8, path).code(), StatusCode::kFailedPrecondition);
  std::remove(path.c_str());
  std::remove(cut.c_str());
}

TEST(SafetensorsBert, EncoderGraphReadsWeightsPathFromModelConfig) {
  ExecContext ctx;
  auto synthetic = EncoderModel::create_synthetic(tiny_bert(), WeightFormat::kF32, kSeed + 1, ctx);
  ASSERT_TRUE(synthetic.ok());
  const std::string path = temp_path("tiny_bert_graph.safetensors");
  ASSERT_TRUE(save_bert_checkpoint(*synthetic, path).ok());
  jobs::JobSpec spec;
  spec.architecture = "encoder-only";
  spec.model_config = {{"layers", 2}, {"hidden", 32}, {"heads", 4}, {"intermediate", 64}, {"vocab", 50},
                       {"max_positions", 16}};
  spec.batch = 2;
  spec.seq_len = 12;
  spec.seed = kSeed + 1;  // the seeded graph draws the same weights the checkpoint holds
  auto seeded = build_graph(spec, Precision::kF32, ctx);
  spec.seed = kSeed + 1;
  spec.model_config["weights_path"] = path;
  auto from_file = build_graph(spec, Precision::kF32, ctx);
  ASSERT_TRUE(seeded.ok() && from_file.ok()) << from_file.status().to_string();
  CpuBackend be(ctx);
  auto a = (*seeded)->run(be);
  auto b = (*from_file)->run(be);
  ASSERT_TRUE(a.ok() && b.ok());
  expect_bitwise_equal(a->output, b->output);

  spec.model_config["weights_path"] = temp_path("no_such_checkpoint.safetensors");
  EXPECT_EQ(build_graph(spec, Precision::kF32, ctx).status().code(), StatusCode::kNotFound);
  spec.model_config["weights_path"] = 7;
  const Status bad = build_graph(spec, Precision::kF32, ctx).status();
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("weights_path"), std::string::npos);
  std::remove(path.c_str());
}

class SafetensorsLlama : public ::testing::TestWithParam<bool> {};  // param: tied head

TEST_P(SafetensorsLlama, CheckpointOfSyntheticModelReproducesItBitForBit) {
  const bool tied = GetParam();
  const DecoderLmConfig config = tiny_llama({{"tie_embeddings", tied}});
  ExecContext ctx;
  auto f32 = plan_named("f32");
  auto q8 = plan_named("q8_0");
  ASSERT_TRUE(f32.ok() && q8.ok());
  auto synthetic = DecoderLm::create_synthetic(config, *f32, kSeed, ctx);
  ASSERT_TRUE(synthetic.ok());
  const std::string path = temp_path(tied ? "tiny_llama_tied.safetensors" : "tiny_llama.safetensors");
  ASSERT_TRUE(save_llama_checkpoint(*synthetic, path).ok());
  auto file = Checkpoint::open(path);
  ASSERT_TRUE(file.ok());
  EXPECT_EQ(file->contains("lm_head.weight"), !tied);
  EXPECT_TRUE(file->contains("model.layers.1.mlp.gate_proj.weight"));
  for (const FormatPlan* plan : {&*f32, &*q8}) {
    auto loaded = load_llama_checkpoint(*file, config, *plan, ctx);
    ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
    auto reference = DecoderLm::create_synthetic(config, *plan, kSeed, ctx);
    ASSERT_TRUE(reference.ok());
    EXPECT_EQ(loaded->weights_bytes(), reference->weights_bytes());
    auto a = llama_logits(std::move(*loaded));
    auto b = llama_logits(std::move(*reference));
    ASSERT_TRUE(a.ok() && b.ok()) << a.status().to_string();
    expect_bitwise_equal(*a, *b);
  }
  std::remove(path.c_str());
}

INSTANTIATE_TEST_SUITE_P(HeadKinds, SafetensorsLlama, ::testing::Bool());

TEST(SafetensorsLlamaFile, QwenStyleBiasesRoundTripThroughTheDecoderGraph) {
  const nlohmann::json extra = {{"attention_bias", true}};
  const DecoderLmConfig config = tiny_llama(extra);
  ExecContext ctx;
  auto f32 = plan_named("f32");
  ASSERT_TRUE(f32.ok());
  auto synthetic = DecoderLm::create_synthetic(config, *f32, kSeed, ctx);
  ASSERT_TRUE(synthetic.ok());
  const std::string path = temp_path("tiny_qwen.safetensors");
  ASSERT_TRUE(save_llama_checkpoint(*synthetic, path).ok());
  jobs::JobSpec spec = llama_spec();
  spec.model_config = {{"layers", 2}, {"hidden", 32}, {"heads", 4}, {"kv_heads", 2}, {"intermediate", 48},
                       {"vocab", 64}, {"max_positions", 64}, {"decode_steps", 3}, {"attention_bias", true},
                       {"weights_path", path}};
  auto graph = build_graph(spec, Precision::kF32, ctx);
  ASSERT_TRUE(graph.ok()) << graph.status().to_string();
  CpuBackend be(ctx);
  auto out = (*graph)->run(be);
  ASSERT_TRUE(out.ok());
  auto want = llama_logits(std::move(*synthetic));
  ASSERT_TRUE(want.ok());
  expect_bitwise_equal(out->output, *want);
  std::remove(path.c_str());
}

TEST(SafetensorsLlamaFile, MixtralExpertsRoundTripThroughTheMixtureOfExpertsGraph) {
  nlohmann::json doc = {{"layers", 2}, {"hidden", 32}, {"heads", 4}, {"kv_heads", 2}, {"intermediate", 48},
                        {"vocab", 64}, {"max_positions", 64}, {"decode_steps", 3}, {"experts", 4},
                        {"experts_per_token", 2}};
  auto config = decoder_lm_config_from_json(doc, "mixture-of-experts");
  ASSERT_TRUE(config.ok()) << config.status().to_string();
  ExecContext ctx;
  auto f32 = plan_named("f32");
  auto q8 = plan_named("q8_0");
  ASSERT_TRUE(f32.ok() && q8.ok());
  auto synthetic = DecoderLm::create_synthetic(*config, *f32, kSeed, ctx);
  ASSERT_TRUE(synthetic.ok());
  const std::string path = temp_path("tiny_mixtral.safetensors");
  ASSERT_TRUE(save_llama_checkpoint(*synthetic, path).ok());
  auto file = SafetensorsFile::open(path);
  ASSERT_TRUE(file.ok());
  EXPECT_TRUE(file->contains("model.layers.1.block_sparse_moe.gate.weight"));
  EXPECT_TRUE(file->contains("model.layers.1.block_sparse_moe.experts.3.w2.weight"));
  EXPECT_FALSE(file->contains("model.layers.0.mlp.gate_proj.weight"));
  for (const Precision precision : {Precision::kF32, Precision::kQ8_0}) {
    jobs::JobSpec spec = llama_spec();
    spec.architecture = "mixture-of-experts";
    spec.model_config = doc;
    spec.model_config["weights_path"] = path;
    auto graph = build_graph(spec, precision, ctx);
    ASSERT_TRUE(graph.ok()) << graph.status().to_string();
    CpuBackend be(ctx);
    auto out = (*graph)->run(be);
    ASSERT_TRUE(out.ok());
    auto reference = DecoderLm::create_synthetic(*config, precision == Precision::kF32 ? *f32 : *q8, kSeed, ctx);
    ASSERT_TRUE(reference.ok());
    auto want = llama_logits(std::move(*reference));
    ASSERT_TRUE(want.ok());
    expect_bitwise_equal(out->output, *want);
  }
  // A missing expert is named.
  const std::string cut = temp_path("tiny_mixtral_cut.safetensors");
  rewrite(path, cut, [](const std::string& n) {
    return n == "model.layers.0.block_sparse_moe.experts.2.w3.weight" ? std::string() : n;
  });
  Status s = load_llama_checkpoint(cut, *config, *f32, ctx).status();
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find("experts.2.w3.weight"), std::string::npos) << s.message();
  std::remove(path.c_str());
  std::remove(cut.c_str());
}

// The loaders are held to PyTorch by tests/reference/ (check_t5.py, check_clip.py, ...); here:
// every family's graph reads weights_path (a missing file is NotFound, never a silent fallback to
// seeded weights), and refuses what it cannot honour.
TEST(SafetensorsGraphs, EveryFamilysGraphReadsWeightsPath) {
  ExecContext ctx;
  const std::string missing = temp_path("no_such_checkpoint.safetensors");
  struct Case {
    const char* architecture;
    nlohmann::json config;
    StatusCode want;
  };
  const std::vector<Case> cases = {
      {"encoder-decoder", {{"layers", 1}, {"hidden", 32}, {"heads", 4}, {"intermediate", 64}, {"vocab", 50}},
       StatusCode::kNotFound},
      {"encoder-decoder",
       {{"style", "bart"}, {"layers", 1}, {"hidden", 32}, {"heads", 4}, {"intermediate", 64}, {"vocab", 50},
        {"max_positions", 32}},
       StatusCode::kNotFound},
      {"vision",
       {{"image_size", 16}, {"patch", 8}, {"layers", 1}, {"hidden", 32}, {"heads", 4}, {"intermediate", 64},
        {"num_classes", 5}},
       StatusCode::kNotFound},
      {"vision",
       {{"image_size", 16}, {"patch", 8}, {"layers", 1}, {"hidden", 32}, {"heads", 4}, {"intermediate", 64},
        {"num_classes", 5}, {"distillation", true}},
       StatusCode::kNotFound},
      {"vision",
       {{"variant", "detr"}, {"image_size", 64}, {"backbone_width", 8}, {"backbone_depths", {1, 1}},
        {"backbone_expansion", 2}, {"hidden", 16}, {"encoder_layers", 1}, {"decoder_layers", 1}, {"heads", 2},
        {"intermediate", 32}, {"num_queries", 3}, {"num_classes", 4}},
       StatusCode::kNotFound},
      {"vision-encoder-text-decoder",
       {{"variant", "clip"}, {"vision_image_size", 16}, {"vision_patch", 8}, {"vision_layers", 1},
        {"vision_hidden", 32}, {"vision_heads", 4}, {"vision_intermediate", 64}, {"text_layers", 1},
        {"text_hidden", 32}, {"text_heads", 4}, {"text_intermediate", 64}, {"vocab", 50}, {"max_positions", 16},
        {"projection_dim", 16}},
       StatusCode::kNotFound},
      {"vision-encoder-text-decoder",
       {{"variant", "vit-gpt2"}, {"vision_image_size", 16}, {"vision_patch", 8}, {"vision_layers", 1},
        {"vision_hidden", 32}, {"vision_heads", 4}, {"vision_intermediate", 64}, {"layers", 1}, {"hidden", 32},
        {"heads", 4}, {"intermediate", 64}, {"vocab", 50}, {"max_positions", 32}},
       StatusCode::kUnsupported},
      {"multimodal",
       {{"variant", "llava"}, {"vision_image_size", 16}, {"vision_patch", 8}, {"vision_layers", 2},
        {"vision_hidden", 32}, {"vision_heads", 4}, {"vision_intermediate", 64}, {"layers", 1}, {"hidden", 32},
        {"heads", 4}, {"intermediate", 64}, {"vocab", 50}, {"max_positions", 32}},
       StatusCode::kNotFound},
      {"multimodal",
       {{"variant", "xclip"}, {"vision_image_size", 16}, {"vision_patch", 8}, {"vision_layers", 1},
        {"vision_hidden", 32}, {"vision_heads", 4}, {"vision_intermediate", 64}, {"text_layers", 1},
        {"text_hidden", 32}, {"text_heads", 4}, {"text_intermediate", 64}, {"vocab", 50}, {"max_positions", 16},
        {"projection_dim", 16}, {"frames", 2}, {"mit_layers", 1}, {"mit_heads", 2}, {"mit_intermediate", 32},
        {"prompt_heads", 2}},
       StatusCode::kNotFound},
      {"multimodal",
       {{"variant", "clap"}, {"audio_image_size", 16}, {"audio_patch", 4}, {"audio_hidden", 8},
        {"audio_depths", {1, 1}}, {"audio_heads", {2, 4}}, {"audio_window", 2}, {"audio_mel_bins", 8},
        {"audio_frames", 32}, {"text_layers", 1}, {"text_hidden", 32}, {"text_heads", 4},
        {"text_intermediate", 64}, {"vocab", 50}, {"max_positions", 16}, {"projection_dim", 16}},
       StatusCode::kNotFound},
      {"diffusion",
       {{"sample_size", 8}, {"in_channels", 4}, {"out_channels", 4}, {"block_channels", {16, 32}},
        {"layers_per_block", 1}, {"attention_levels", 1}, {"attention_heads", 2}, {"cross_attention_dim", 8},
        {"text_len", 3}, {"norm_groups", 4}, {"steps", 1}},
       StatusCode::kNotFound},
      {"rag",
       {{"question_layers", 1}, {"question_hidden", 32}, {"question_heads", 4}, {"question_intermediate", 64},
        {"question_vocab", 50}, {"question_max_positions", 16}, {"layers", 1}, {"hidden", 32}, {"heads", 4},
        {"intermediate", 64}, {"vocab", 50}, {"max_positions", 32}, {"n_docs", 2}, {"passages", 5},
        {"passage_len", 4}},
       StatusCode::kNotFound},
      {"mixture-of-experts",
       {{"layers", 1}, {"hidden", 32}, {"heads", 4}, {"intermediate", 64}, {"vocab", 50}, {"max_positions", 32},
        {"experts", 4}},
       StatusCode::kNotFound},
      {"mixture-of-experts",
       {{"layers", 1}, {"decoder_layers", 1}, {"hidden", 32}, {"heads", 4}, {"intermediate", 64}, {"vocab", 50},
        {"experts", 4}},
       StatusCode::kUnsupported},
      {"state-space",
       {{"layers", 1}, {"hidden", 32}, {"intermediate", 64}, {"state_size", 8}, {"conv_kernel", 4}, {"dt_rank", 4},
        {"vocab", 50}},
       StatusCode::kNotFound},
      {"state-space", {{"variant", "rwkv"}, {"layers", 1}, {"hidden", 32}, {"intermediate", 64}, {"vocab", 50}},
       StatusCode::kNotFound},
      {"speech", {{"layers", 1}, {"hidden", 32}, {"heads", 4}, {"intermediate", 64}, {"vocab", 50}, {"n_mels", 8}},
       StatusCode::kNotFound},
      {"speech",
       {{"style", "wav2vec2"}, {"layers", 1}, {"hidden", 32}, {"heads", 4}, {"intermediate", 64}, {"conv_dim", 16},
        {"pos_conv_kernel", 4}, {"pos_conv_groups", 4}},
       StatusCode::kNotFound},
  };
  for (const Case& c : cases) {
    jobs::JobSpec spec = llama_spec();
    spec.architecture = c.architecture;
    spec.model_config = c.config;
    ASSERT_TRUE(build_graph(spec, Precision::kF32, ctx).ok()) << c.architecture << " " << c.config.dump();
    spec.model_config["weights_path"] = missing;
    const Status s = build_graph(spec, Precision::kF32, ctx).status();
    EXPECT_EQ(s.code(), c.want) << c.architecture << " " << c.config.dump() << ": " << s.to_string();
  }
}

TEST(SafetensorsLlamaFile, Bf16CheckpointHoldsEachWeightRoundedToBf16) {
  const DecoderLmConfig config = tiny_llama();
  ExecContext ctx;
  auto f32 = plan_named("f32");
  auto synthetic = DecoderLm::create_synthetic(config, *f32, kSeed, ctx);
  ASSERT_TRUE(synthetic.ok());
  const std::string path = temp_path("tiny_llama_bf16.safetensors");
  ASSERT_TRUE(save_llama_checkpoint(*synthetic, path, SafetensorsDtype::kBF16).ok());
  auto loaded = load_llama_checkpoint(path, config, *f32, ctx);
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  auto want = synthetic->tensors();
  auto got = loaded->tensors();
  ASSERT_TRUE(want.ok() && got.ok());
  auto check = [](const Tensor& w, const Tensor& g) {
    ASSERT_EQ(w.shape(), g.shape());
    ASSERT_GT(w.numel(), 0);
    for (int64_t i = 0; i < w.numel(); ++i) ASSERT_EQ(g.data()[i], bf16_to_fp32(fp32_to_bf16(w.data()[i])));
  };
  check(want->tokens, got->tokens);
  check(want->head, got->head);
  check(want->stack.layers[1].k_w, got->stack.layers[1].k_w);
  check(want->stack.layers[0].norm_ffn_g, got->stack.layers[0].norm_ffn_g);
  check(want->stack.final_g, got->stack.final_g);
  std::remove(path.c_str());
}

TEST(SafetensorsLlamaFile, MissingWrongShapedOrIntegerTensorsAndGpt2ConfigsAreErrors) {
  const DecoderLmConfig config = tiny_llama();
  ExecContext ctx;
  auto f32 = plan_named("f32");
  auto synthetic = DecoderLm::create_synthetic(config, *f32, kSeed, ctx);
  ASSERT_TRUE(synthetic.ok());
  const std::string path = temp_path("tiny_llama_err.safetensors"), cut = temp_path("tiny_llama_cut.safetensors");
  ASSERT_TRUE(save_llama_checkpoint(*synthetic, path).ok());

  rewrite(path, cut, [](const std::string& n) { return n == "model.layers.1.mlp.down_proj.weight" ? std::string() : n; });
  Status s = load_llama_checkpoint(cut, config, *f32, ctx).status();
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find("model.layers.1.mlp.down_proj.weight"), std::string::npos) << s.message();

  const DecoderLmConfig more_kv = tiny_llama({{"kv_heads", 4}});
  s = load_llama_checkpoint(path, more_kv, *f32, ctx).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("model.layers.0.self_attn.k_proj.weight"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("[16, 32]"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("[32, 32]"), std::string::npos) << s.message();

  const DecoderLmConfig deeper = tiny_llama({{"layers", 3}});
  s = load_llama_checkpoint(path, deeper, *f32, ctx).status();
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find("model.layers.2.input_layernorm.weight"), std::string::npos) << s.message();

  // The final norm stored as I64 of the same byte size: an unsupported dtype, named.
  {
    std::string header = R"({"model.norm.weight":{"dtype":"I64","shape":[16],"data_offsets":[0,128]}})";
    auto f = SafetensorsFile::from_bytes("int.safetensors", [&] {
      std::vector<uint8_t> b(8 + header.size() + 128, 0);
      const uint64_t n = header.size();
      std::memcpy(b.data(), &n, 8);
      std::memcpy(b.data() + 8, header.data(), header.size());
      return b;
    }());
    ASSERT_TRUE(f.ok());
    EXPECT_EQ(f->read_f32("model.norm.weight", Shape{16}).status().code(), StatusCode::kInvalidArgument);
  }

  auto gpt2 = decoder_lm_config_from_json({{"style", "gpt2"}, {"layers", 2}, {"hidden", 32}, {"heads", 4},
                                           {"intermediate", 64}, {"vocab", 64}, {"max_positions", 64}},
                                          "decoder-only");
  ASSERT_TRUE(gpt2.ok());
  s = load_llama_checkpoint(path, *gpt2, *f32, ctx).status();
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_NE(s.message().find("llama-style"), std::string::npos);
  std::remove(path.c_str());
  std::remove(cut.c_str());
}

}  // namespace
}  // namespace am::kernels
