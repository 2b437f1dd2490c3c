// Hugging Face checkpoint directories: config.json read instead of the catalog (hf_config.h),
// sharded weights (model.safetensors.index.json) in F32/F16/BF16 (checkpoint.h), through
// build_graph() and run_job() — the path a job with weights_path takes — and the errors that name
// the key or tensor at fault. The loaders' arithmetic is held to PyTorch by tests/reference/.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cstdint>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "jobs/catalog.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/formats/bf16.h"
#include "kernels/job_runner.h"
#include "kernels/models/decoder_only.h"
#include "kernels/models/decoder_only_checkpoint.h"
#include "kernels/models/hf_config.h"
#include "kernels/weights/checkpoint.h"
#include "kernels/weights/safetensors_writer.h"
#include "tests/kernels/named_formats.h"

namespace am::kernels {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr uint64_t kSeed = 20261125;

// A fresh directory under the test's temp dir.
std::string fresh_dir(const std::string& name) {
  const fs::path p = fs::path(::testing::TempDir()) / ("am_ckpt_" + name);
  fs::remove_all(p);
  fs::create_directories(p);
  return p.string();
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  f << text;
  ASSERT_TRUE(f.good()) << path;
}

// The tiny LLaMA of these tests, as catalog keys and as LlamaConfig's config.json.
json tiny_catalog() {
  return {{"layers", 2}, {"hidden", 32}, {"heads", 4}, {"kv_heads", 2}, {"intermediate", 48}, {"vocab", 64},
          {"max_positions", 64}, {"norm_eps", 1e-5}, {"rope_theta", 500000.0}, {"decode_steps", 3}};
}
json tiny_config_json() {
  return {{"model_type", "llama"}, {"architectures", {"LlamaForCausalLM"}}, {"num_hidden_layers", 2},
          {"hidden_size", 32}, {"num_attention_heads", 4}, {"num_key_value_heads", 2}, {"intermediate_size", 48},
          {"vocab_size", 64}, {"max_position_embeddings", 64}, {"rms_norm_eps", 1e-5}, {"rope_theta", 500000.0},
          {"tie_word_embeddings", false}, {"hidden_act", "silu"}, {"rope_scaling", nullptr}};
}

jobs::JobSpec llama_job(json config) {
  jobs::JobSpec s;
  s.model = "tiny-llama";
  s.architecture = "decoder-only";
  s.model_config = std::move(config);
  s.backend = "cpu";
  s.precision = precision_named("f32");
  s.batch = 2;
  s.seq_len = 5;
  s.seed = kSeed;
  s.mode = jobs::kModeAccuracy;
  s.threads = 1;
  return s;
}

Result<Tensor> run_graph(const jobs::JobSpec& spec) {
  ExecContext ctx;
  AM_ASSIGN_OR_RETURN(std::unique_ptr<ModelGraph> g, build_graph(spec, Precision::kF32, ctx));
  CpuBackend be(ctx);
  AM_ASSIGN_OR_RETURN(GraphOutput out, g->run(be));
  return std::move(out.output);
}

// Splits a single-file checkpoint into `shards` shard files of `dtype` plus the index, beside a
// config.json, as save_pretrained() writes a large model.
void write_sharded(const std::string& single, const std::string& dir, int shards, SafetensorsDtype dtype,
                   const json& config) {
  auto f = SafetensorsFile::open(single);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  std::vector<std::vector<SafetensorsTensorOut>> parts(static_cast<std::size_t>(shards));
  std::vector<Tensor> keep;
  keep.reserve(f->entries().size());
  json map = json::object();
  int i = 0;
  for (const SafetensorsEntry& e : f->entries()) {
    Shape s = e.shape.size() == 1 ? Shape{e.shape[0]} : Shape{e.shape[0], e.shape[1]};
    auto t = f->read_f32(e.name, s);
    ASSERT_TRUE(t.ok());
    keep.push_back(std::move(*t));
    const int shard = i++ % shards;
    parts[static_cast<std::size_t>(shard)].push_back({e.name, dtype, e.shape, keep.back().data()});
    map[e.name] = "model-0000" + std::to_string(shard + 1) + "-of-0000" + std::to_string(shards) + ".safetensors";
  }
  for (int s = 0; s < shards; ++s) {
    const std::string name = "model-0000" + std::to_string(s + 1) + "-of-0000" + std::to_string(shards) + ".safetensors";
    ASSERT_TRUE(write_safetensors(dir + "/" + name, parts[static_cast<std::size_t>(s)]).ok());
  }
  write_text(dir + "/model.safetensors.index.json", json{{"metadata", {{"total_size", 0}}}, {"weight_map", map}}.dump());
  write_text(dir + "/config.json", config.dump());
}

// A tiny LLaMA (seeded, f32) saved as a single file; returns its path.
std::string save_tiny_llama(const std::string& dir) {
  ExecContext ctx;
  auto c = decoder_lm_config_from_json(tiny_catalog(), "decoder-only");
  EXPECT_TRUE(c.ok());
  auto f32 = plan_named("f32");
  auto m = DecoderLm::create_synthetic(*c, *f32, kSeed, ctx);
  EXPECT_TRUE(m.ok());
  const std::string path = dir + "/single.safetensors";
  EXPECT_TRUE(save_llama_checkpoint(*m, path).ok());
  return path;
}

TEST(CheckpointDirectory, ConfigJsonOverridesTheCatalogThroughBuildGraphAndShardedF32MatchesTheFileBitForBit) {
  const std::string dir = fresh_dir("llama_sharded");
  const std::string single = save_tiny_llama(dir);
  const std::string ckpt = dir + "/hf";
  fs::create_directories(ckpt);
  write_sharded(single, ckpt, 3, SafetensorsDtype::kF32, tiny_config_json());
  json file_config = tiny_catalog();
  file_config["weights_path"] = single;
  // A catalog config that is wrong in every architecture key config.json determines.
  json wrong = {{"layers", 1}, {"hidden", 32}, {"heads", 2}, {"kv_heads", 1}, {"intermediate", 16}, {"vocab", 64},
                {"max_positions", 64}, {"norm_eps", 1e-6}, {"rope_theta", 10000.0}, {"tie_embeddings", true},
                {"decode_steps", 3}, {"weights_path", ckpt}};
  auto want = run_graph(llama_job(file_config));
  auto got = run_graph(llama_job(wrong));
  ASSERT_TRUE(want.ok()) << want.status().to_string();
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  ASSERT_EQ(want->shape(), got->shape());
  EXPECT_EQ(std::memcmp(want->data(), got->data(), want->bytes()), 0);
  // Without config.json the (wrong) catalog config applies and its shapes do not fit the file.
  fs::remove(ckpt + "/config.json");
  const Status s = run_graph(llama_job(wrong)).status();
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("model.layers.0."), std::string::npos) << s.message();
}

TEST(CheckpointDirectory, Bf16ShardsLoadAsTheirRoundedValuesAndRunJobPasses) {
  const std::string dir = fresh_dir("llama_bf16");
  const std::string single = save_tiny_llama(dir);
  const std::string ckpt = dir + "/hf";
  fs::create_directories(ckpt);
  write_sharded(single, ckpt, 2, SafetensorsDtype::kBF16, tiny_config_json());
  auto full = Checkpoint::open(single);
  auto half = Checkpoint::open(ckpt);
  ASSERT_TRUE(full.ok() && half.ok()) << half.status().to_string();
  EXPECT_TRUE(half->is_directory());
  EXPECT_EQ(half->shard_count(), 2u);
  ASSERT_NE(half->config(), nullptr);
  EXPECT_EQ(half->names(), full->names());
  const Shape s{64, 32};
  auto a = full->read_f32("model.embed_tokens.weight", s);
  auto b = half->read_f32("model.embed_tokens.weight", s);
  ASSERT_TRUE(a.ok() && b.ok());
  for (int64_t i = 0; i < a->numel(); ++i) ASSERT_EQ(b->data()[i], bf16_to_fp32(fp32_to_bf16(a->data()[i])));
  // The job path: run_job() builds the graph from the directory (config.json, BF16 shards).
  jobs::JobSpec spec = llama_job({{"decode_steps", 3}, {"weights_path", ckpt}});
  const JobOutcome out = run_job(spec);
  EXPECT_EQ(out.status, ResultStatus::kPass) << out.reason;
}

TEST(CheckpointDirectory, IndexProblemsNameTheShardAndTensor) {
  const std::string dir = fresh_dir("llama_index");
  const std::string single = save_tiny_llama(dir);
  const std::string ckpt = dir + "/hf";
  fs::create_directories(ckpt);
  write_sharded(single, ckpt, 2, SafetensorsDtype::kF16, tiny_config_json());
  const std::string index = ckpt + "/model.safetensors.index.json";
  json doc;
  {
    std::ifstream in(index);
    doc = json::parse(in);
  }
  auto expect_error = [&](const json& edited, StatusCode code, const std::vector<std::string>& named) {
    write_text(index, edited.dump());
    const Status s = Checkpoint::open(ckpt).status();
    EXPECT_EQ(s.code(), code) << s.to_string();
    for (const std::string& n : named) EXPECT_NE(s.message().find(n), std::string::npos) << s.message();
  };
  json wrong_shard = doc;
  wrong_shard["weight_map"]["model.norm.weight"] =
      doc["weight_map"]["model.norm.weight"] == "model-00001-of-00002.safetensors" ? "model-00002-of-00002.safetensors"
                                                                                  : "model-00001-of-00002.safetensors";
  expect_error(wrong_shard, StatusCode::kInvalidArgument, {"model.norm.weight", "does not hold it"});
  json missing = doc;
  missing["weight_map"]["model.norm.weight"] = "model-00009-of-00009.safetensors";
  expect_error(missing, StatusCode::kNotFound, {"model-00009-of-00009.safetensors"});
  json escape = doc;
  escape["weight_map"]["model.norm.weight"] = "../single.safetensors";
  expect_error(escape, StatusCode::kInvalidArgument, {"../single.safetensors", "model.norm.weight"});
  expect_error(json{{"metadata", {}}}, StatusCode::kInvalidArgument, {"weight_map"});
  write_text(index, "{not json");
  EXPECT_EQ(Checkpoint::open(ckpt).status().code(), StatusCode::kInvalidArgument);
  // Parsed, a document takes tens of times its text: an index past the cap is refused unread
  // (an 80 MB one took 3 GB before its error).
  write_text(index, std::string(9u << 20, '['));
  const Status big = Checkpoint::open(ckpt).status();
  EXPECT_EQ(big.code(), StatusCode::kInvalidArgument) << big.to_string();
  EXPECT_NE(big.message().find("bytes; a checkpoint's JSON files are read up to"), std::string::npos) << big.message();
  // A FIFO with no writer is no file of a checkpoint: passed over, never opened (opening one
  // blocks until a writer comes).
  fs::remove(index);
  ASSERT_EQ(::mkfifo(index.c_str(), 0644), 0);
  EXPECT_EQ(Checkpoint::open(ckpt).status().code(), StatusCode::kNotFound);
  fs::remove(index);
  fs::remove(ckpt + "/config.json");
  ASSERT_EQ(::mkfifo((ckpt + "/config.json").c_str(), 0644), 0);
  auto config = read_checkpoint_config(ckpt);
  ASSERT_TRUE(config.ok()) << config.status().to_string();
  EXPECT_FALSE(config->has_value());
  fs::remove(ckpt + "/config.json");
  const Status none = Checkpoint::open(ckpt).status();
  EXPECT_EQ(none.code(), StatusCode::kNotFound);
  EXPECT_NE(none.message().find("model.safetensors"), std::string::npos) << none.message();
}

TEST(CheckpointDirectory, MissingTensorWrongShapeAndUnknownDtypeAreNamed) {
  const std::string dir = fresh_dir("llama_bad");
  const std::string ckpt = dir + "/hf";
  fs::create_directories(ckpt);
  write_text(ckpt + "/config.json", tiny_config_json().dump());
  const jobs::JobSpec spec = llama_job({{"decode_steps", 3}, {"weights_path", ckpt}});
  // A file holding only a wrong-shaped embedding, then a dtype no reader knows.
  std::vector<float> values(64 * 31, 0.5f);
  ASSERT_TRUE(write_safetensors(ckpt + "/model.safetensors",
                                {{"model.embed_tokens.weight", SafetensorsDtype::kF32, {64, 31}, values.data()}})
                  .ok());
  Status s = run_graph(spec).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
  EXPECT_NE(s.message().find("model.embed_tokens.weight"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("[64, 31]"), std::string::npos) << s.message();
  values.resize(64 * 32);
  ASSERT_TRUE(write_safetensors(ckpt + "/model.safetensors",
                                {{"model.embed_tokens.weight", SafetensorsDtype::kF32, {64, 32}, values.data()}})
                  .ok());
  s = run_graph(spec).status();
  EXPECT_EQ(s.code(), StatusCode::kNotFound) << s.to_string();
  EXPECT_NE(s.message().find("model.layers.0.input_layernorm.weight"), std::string::npos) << s.message();
  const std::string header = R"({"model.embed_tokens.weight":{"dtype":"Q4","shape":[4],"data_offsets":[0,4]}})";
  std::string raw(8, '\0');
  const uint64_t n = header.size();
  std::memcpy(raw.data(), &n, 8);
  write_text(ckpt + "/model.safetensors", raw + header + std::string(4, '\0'));
  s = run_graph(spec).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
  EXPECT_NE(s.message().find("unknown dtype 'Q4'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("model.embed_tokens.weight"), std::string::npos) << s.message();
}

TEST(HfConfig, BadValuesAndUnhonourableSettingsNameTheKey) {
  struct Case {
    const char* architecture;
    json config;
    StatusCode code;
    std::string key;
  };
  json wrong_type = tiny_config_json();
  wrong_type["num_hidden_layers"] = "two";
  json huge_layers = tiny_config_json();
  huge_layers["num_hidden_layers"] = UINT64_MAX;
  json scaled = tiny_config_json();
  scaled["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}};
  json bias = tiny_config_json();
  bias["attention_bias"] = true;
  json llava_scaled = {{"model_type", "llava"},
                       {"text_config", {{"model_type", "llama"}, {"rope_scaling", {{"type", "linear"}}}}}};
  const std::vector<Case> cases = {
      {"decoder-only", wrong_type, StatusCode::kInvalidArgument, "'num_hidden_layers'"},
      // 2^64 - 1 read as int64 was "-1": said as the value it is.
      {"decoder-only", huge_layers, StatusCode::kInvalidArgument, "'num_hidden_layers' is out of range"},
      {"decoder-only", scaled, StatusCode::kUnsupported, "'rope_scaling'"},
      {"decoder-only", bias, StatusCode::kUnsupported, "'attention_bias'"},
      {"multimodal", llava_scaled, StatusCode::kUnsupported, "'text_config.rope_scaling'"},
      {"speech", {{"model_type", "wav2vec2"}, {"do_stable_layer_norm", true}}, StatusCode::kUnsupported,
       "'do_stable_layer_norm'"},
      {"speech", {{"model_type", "wav2vec2"}, {"conv_dim", {512, 256}}}, StatusCode::kUnsupported, "'conv_dim'"},
      {"multimodal", {{"model_type", "clap"}, {"audio_config", {{"enable_fusion", true}}}}, StatusCode::kUnsupported,
       "'audio_config.enable_fusion'"},
      {"vision", {{"model_type", "detr"}, {"backbone", "resnet18"}}, StatusCode::kUnsupported, "'backbone'"},
      {"vision", {{"model_type", "detr"}, {"decoder_attention_heads", 4}}, StatusCode::kUnsupported,
       "'decoder_attention_heads'"},
      {"speech", {{"model_type", "whisper"}, {"encoder_ffn_dim", 1024}}, StatusCode::kUnsupported,
       "'decoder_ffn_dim'"},
      {"vision", {{"model_type", "vit"}, {"hidden_act", "mish"}}, StatusCode::kUnsupported, "'hidden_act'"},
      {"encoder-decoder", {{"model_type", "t5"}, {"feed_forward_proj", "gated-mish"}}, StatusCode::kUnsupported,
       "'feed_forward_proj'"},
      {"vision", tiny_config_json(), StatusCode::kInvalidArgument, "'model_type'"},  // a llama is no vision model
      {"decoder-only", {{"model_type", "gpt_neox"}}, StatusCode::kUnsupported, "'model_type' = \"gpt_neox\""},
      {"decoder-only", {{"hidden_size", 32}}, StatusCode::kInvalidArgument, "'model_type'"},
      {"diffusion", {{"_class_name", "UNet2DConditionModel"}, {"attention_head_dim", {5, 10, 20, 20}}},
       StatusCode::kUnsupported, "'attention_head_dim'"},
  };
  for (const Case& c : cases) {
    const Status s = hf_config_to_catalog(c.config, c.architecture, "ckpt/config.json").status();
    EXPECT_EQ(s.code(), c.code) << c.config.dump() << ": " << s.to_string();
    EXPECT_NE(s.message().find(c.key), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("ckpt/config.json"), std::string::npos) << s.message();
  }
}

// A config.json's strings are not quoted back: the path is the coordinator's to choose, and a
// worker must not hand what a file holds back in a job's reason.
TEST(HfConfig, AValueOfTheWrongTypeIsNamedByItsKindNotQuoted) {
  json config = tiny_config_json();
  config["hidden_size"] = "CANARY-IN-JSON-VALUE";
  const Status s = hf_config_to_catalog(config, "decoder-only", "ckpt/config.json").status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("'hidden_size' must be an integer, got a string"), std::string::npos) << s.message();
  EXPECT_EQ(s.message().find("CANARY"), std::string::npos) << s.message();
}

// The published config.json of each key model's source, translated, gives the catalog's
// architecture values: the translation and the catalog agree on what the model is.
struct Published {
  const char* catalog;  // jobs/models/<catalog>.toml
  json config;
};

json id2label(int n) {
  json m = json::object();
  for (int i = 0; i < n; ++i) m[std::to_string(i)] = "label " + std::to_string(i);
  return m;
}

std::vector<Published> published_configs() {
  const json clip_vision = {{"model_type", "clip_vision_model"}, {"hidden_size", 1024}, {"image_size", 336},
                            {"intermediate_size", 4096}, {"num_attention_heads", 16}, {"num_hidden_layers", 24},
                            {"patch_size", 14}, {"projection_dim", 768}, {"vocab_size", 32000}};
  return {
      {"bert-tiny", {{"model_type", "bert"}, {"hidden_size", 128}, {"hidden_act", "gelu"}, {"vocab_size", 30522},
                     {"num_attention_heads", 2}, {"type_vocab_size", 2}, {"max_position_embeddings", 512},
                     {"num_hidden_layers", 2}, {"intermediate_size", 512}}},
      {"t5-efficient-tiny", {{"model_type", "t5"}, {"d_ff", 1024}, {"d_kv", 32}, {"d_model", 256},
                             {"feed_forward_proj", "relu"}, {"layer_norm_epsilon", 1e-6}, {"num_decoder_layers", 4},
                             {"num_heads", 4}, {"num_layers", 4}, {"relative_attention_num_buckets", 32},
                             {"vocab_size", 32128}, {"n_positions", 512}, {"decoder_start_token_id", 0},
                             {"is_encoder_decoder", true}}},
      {"TinyLlama-1.1B-Chat", {{"model_type", "llama"}, {"hidden_act", "silu"}, {"hidden_size", 2048},
                               {"intermediate_size", 5632}, {"max_position_embeddings", 2048},
                               {"num_attention_heads", 32}, {"num_hidden_layers", 22}, {"num_key_value_heads", 4},
                               {"rms_norm_eps", 1e-5}, {"rope_scaling", nullptr}, {"rope_theta", 10000.0},
                               {"tie_word_embeddings", false}, {"vocab_size", 32000}, {"attention_bias", false}}},
      {"Qwen2-0.5B-Instruct", {{"model_type", "qwen2"}, {"hidden_act", "silu"}, {"hidden_size", 896},
                               {"intermediate_size", 4864}, {"max_position_embeddings", 32768},
                               {"max_window_layers", 24}, {"num_attention_heads", 14}, {"num_hidden_layers", 24},
                               {"num_key_value_heads", 2}, {"rms_norm_eps", 1e-6}, {"rope_theta", 1000000.0},
                               {"sliding_window", 32768}, {"tie_word_embeddings", true},
                               {"use_sliding_window", false}, {"vocab_size", 151936}}},
      {"clip-vit-base-patch32", {{"model_type", "clip"}, {"projection_dim", 512}, {"logit_scale_init_value", 2.6592},
                                 {"text_config", {{"hidden_size", 512}, {"intermediate_size", 2048},
                                                  {"num_attention_heads", 8}, {"num_hidden_layers", 12},
                                                  {"max_position_embeddings", 77}, {"vocab_size", 49408},
                                                  {"hidden_act", "quick_gelu"}, {"layer_norm_eps", 1e-5},
                                                  {"eos_token_id", 2}}},
                                 {"vision_config", {{"hidden_size", 768}, {"intermediate_size", 3072},
                                                    {"num_attention_heads", 12}, {"num_hidden_layers", 12},
                                                    {"image_size", 224}, {"patch_size", 32},
                                                    {"hidden_act", "quick_gelu"}, {"layer_norm_eps", 1e-5}}}}},
      {"deit-tiny-patch16-224", {{"model_type", "vit"}, {"hidden_size", 192}, {"num_hidden_layers", 12},
                                 {"num_attention_heads", 3}, {"intermediate_size", 768}, {"hidden_act", "gelu"},
                                 {"layer_norm_eps", 1e-12}, {"image_size", 224}, {"patch_size", 16},
                                 {"num_channels", 3}, {"qkv_bias", true}, {"id2label", id2label(1000)}}},
      {"CLAP-htsat-unfused", {{"model_type", "clap"}, {"projection_dim", 512},
                              {"logit_scale_init_value", 14.285714285714285},
                              {"audio_config", {{"spec_size", 256}, {"patch_size", 4}, {"patch_stride", {4, 4}},
                                                {"patch_embeds_hidden_size", 96}, {"depths", {2, 2, 6, 2}},
                                                {"num_attention_heads", {4, 8, 16, 32}}, {"window_size", 8},
                                                {"num_mel_bins", 64}, {"enable_fusion", false},
                                                {"hidden_act", "gelu"}, {"layer_norm_eps", 1e-5}}},
                              {"text_config", {{"vocab_size", 50265}, {"hidden_size", 768},
                                               {"num_hidden_layers", 12}, {"num_attention_heads", 12},
                                               {"intermediate_size", 3072}, {"max_position_embeddings", 514},
                                               {"type_vocab_size", 1}, {"pad_token_id", 1}}}}},
      {"Whisper-tiny", {{"model_type", "whisper"}, {"d_model", 384}, {"encoder_layers", 4}, {"decoder_layers", 4},
                        {"encoder_attention_heads", 6}, {"decoder_attention_heads", 6}, {"encoder_ffn_dim", 1536},
                        {"decoder_ffn_dim", 1536}, {"vocab_size", 51865}, {"num_mel_bins", 80},
                        {"max_source_positions", 1500}, {"max_target_positions", 448},
                        {"activation_function", "gelu"}, {"scale_embedding", false}}},
      {"Wav2Vec2-base", {{"model_type", "wav2vec2"}, {"hidden_size", 768}, {"num_hidden_layers", 12},
                         {"num_attention_heads", 12}, {"intermediate_size", 3072}, {"hidden_act", "gelu"},
                         {"layer_norm_eps", 1e-5}, {"conv_dim", {512, 512, 512, 512, 512, 512, 512}},
                         {"conv_kernel", {10, 3, 3, 3, 3, 2, 2}}, {"conv_stride", {5, 2, 2, 2, 2, 2, 2}},
                         {"conv_bias", false}, {"feat_extract_norm", "group"}, {"feat_extract_activation", "gelu"},
                         {"num_conv_pos_embeddings", 128}, {"num_conv_pos_embedding_groups", 16},
                         {"do_stable_layer_norm", false}}},
      // llava-hf's text_config states only what differs from LlamaConfig's defaults.
      {"LLaVA-1.5-7B", {{"model_type", "llava"}, {"image_token_index", 32000}, {"projector_hidden_act", "gelu"},
                        {"vision_feature_layer", -2}, {"vision_feature_select_strategy", "default"},
                        {"text_config", {{"model_type", "llama"}, {"max_position_embeddings", 4096},
                                         {"rms_norm_eps", 1e-5}, {"vocab_size", 32064}}},
                        {"vision_config", clip_vision}}},
      {"LLaVA-v1.6-Mistral-7B", {{"model_type", "llava_next"}, {"image_token_index", 32000},
                                 {"projector_hidden_act", "gelu"}, {"vision_feature_layer", -2},
                                 {"text_config", {{"model_type", "mistral"}, {"intermediate_size", 14336},
                                                  {"max_position_embeddings", 32768}, {"num_key_value_heads", 8},
                                                  {"rms_norm_eps", 1e-5}, {"rope_theta", 1000000.0},
                                                  {"sliding_window", nullptr}, {"vocab_size", 32064}}},
                                 {"vision_config", clip_vision}}},
      {"X-CLIP-base-patch32", {{"model_type", "xclip"}, {"projection_dim", 512}, {"prompt_layers", 2},
                               {"prompt_alpha", 0.1}, {"prompt_num_attention_heads", 8},
                               {"logit_scale_init_value", 2.6592},
                               {"text_config", {{"hidden_size", 512}, {"intermediate_size", 2048},
                                                {"num_attention_heads", 8}, {"num_hidden_layers", 12},
                                                {"max_position_embeddings", 77}, {"vocab_size", 49408}}},
                               {"vision_config", {{"hidden_size", 768}, {"intermediate_size", 3072},
                                                  {"num_attention_heads", 12}, {"num_hidden_layers", 12},
                                                  {"image_size", 224}, {"patch_size", 32}, {"num_frames", 8},
                                                  {"mit_hidden_size", 512}, {"mit_intermediate_size", 2048},
                                                  {"mit_num_hidden_layers", 1}, {"mit_num_attention_heads", 8}}}}},
      {"DETR-ResNet-50", {{"model_type", "detr"}, {"d_model", 256}, {"encoder_layers", 6}, {"decoder_layers", 6},
                          {"encoder_attention_heads", 8}, {"decoder_attention_heads", 8}, {"encoder_ffn_dim", 2048},
                          {"decoder_ffn_dim", 2048}, {"num_queries", 100}, {"activation_function", "relu"},
                          {"backbone", "resnet50"}, {"use_timm_backbone", true}, {"dilation", false},
                          {"position_embedding_type", "sine"}, {"num_channels", 3}, {"id2label", id2label(91)}}},
      // Not a key model; diffusers names its class instead of a model_type.
      {"stable-diffusion-v1-5-unet", {{"_class_name", "UNet2DConditionModel"}, {"act_fn", "silu"},
                                      {"attention_head_dim", 8}, {"block_out_channels", {320, 640, 1280, 1280}},
                                      {"center_input_sample", false}, {"cross_attention_dim", 768},
                                      {"down_block_types", {"CrossAttnDownBlock2D", "CrossAttnDownBlock2D",
                                                            "CrossAttnDownBlock2D", "DownBlock2D"}},
                                      {"downsample_padding", 1}, {"flip_sin_to_cos", true}, {"freq_shift", 0},
                                      {"in_channels", 4}, {"layers_per_block", 2}, {"mid_block_scale_factor", 1},
                                      {"norm_eps", 1e-5}, {"norm_num_groups", 32}, {"out_channels", 4},
                                      {"sample_size", 64}}},
  };
}

TEST(HfConfig, EveryKeyModelsPublishedConfigJsonTranslatesToItsCatalogEntry) {
  for (const Published& p : published_configs()) {
    const fs::path file = fs::path(ACCELMATRIX_SOURCE_DIR) / "jobs/models" / (std::string(p.catalog) + ".toml");
    auto entry = jobs::load_model_file(file);
    ASSERT_TRUE(entry.ok()) << entry.status().to_string();
    auto keys = hf_config_to_catalog(p.config, entry->architecture, p.catalog);
    ASSERT_TRUE(keys.ok()) << p.catalog << ": " << keys.status().to_string();
    int compared = 0;
    for (const auto& [key, want] : entry->config.items()) {
      if (!keys->contains(key)) continue;
      const json& got = keys->at(key);
      ++compared;
      if (want.is_number_float() || got.is_number_float()) {
        EXPECT_NEAR(got.get<double>(), want.get<double>(), 1e-3 * std::abs(want.get<double>()))
            << p.catalog << " key " << key;
      } else {
        EXPECT_EQ(got, want) << p.catalog << " key " << key;
      }
    }
    // Every architecture key of the catalog entry is one config.json determines.
    EXPECT_GE(compared, 8) << p.catalog << ": " << keys->dump();
    for (const char* size : {"layers", "hidden", "vision_layers", "text_layers", "audio_hidden"}) {
      if (entry->config.contains(size)) {
        EXPECT_TRUE(keys->contains(size)) << p.catalog << " lacks " << size;
      }
    }
  }
}

}  // namespace
}  // namespace am::kernels
