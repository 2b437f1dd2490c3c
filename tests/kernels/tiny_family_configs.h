// Tiny model configurations of the text and multimodal families, shared by the family tests
// (tests/kernels/model_*_test.cpp) and the device residency cases: small enough for a test, with
// every structural feature of the family (GQA, relative bias, image crops, frames, retrieval).
#pragma once

#include <nlohmann/json.hpp>

namespace am::kernels::testing {

inline nlohmann::json tiny_llava(int crops) {
  return {{"variant", "llava"},   {"vision_image_size", 32}, {"vision_patch", 8}, {"vision_layers", 3},
          {"vision_hidden", 48},  {"vision_heads", 4},       {"vision_intermediate", 96},
          {"vision_activation", "quick_gelu"}, {"image_crops", crops},
          {"layers", 2},          {"hidden", 64},            {"heads", 4},        {"kv_heads", 2},
          {"intermediate", 128},  {"vocab", 256},            {"max_positions", 128}, {"decode_steps", 3}};
}

inline nlohmann::json tiny_xclip() {
  return {{"variant", "xclip"},   {"vision_image_size", 32}, {"vision_patch", 16}, {"vision_layers", 2},
          {"vision_hidden", 32},  {"vision_heads", 2},       {"vision_intermediate", 64},
          {"text_layers", 1},     {"text_hidden", 32},       {"text_heads", 2},    {"text_intermediate", 64},
          {"vocab", 100},         {"max_positions", 16},     {"projection_dim", 16},
          {"frames", 4},          {"mit_layers", 1},         {"mit_heads", 2},     {"mit_intermediate", 32}};
}

inline nlohmann::json tiny_clap() {
  return {{"variant", "clap"},      {"audio_image_size", 32}, {"audio_patch", 4},  {"audio_hidden", 16},
          {"audio_depths", {1, 1, 2}}, {"audio_heads", {2, 4, 8}}, {"audio_window", 4},
          {"audio_mel_bins", 16},   {"audio_frames", 64},
          {"text_layers", 1},       {"text_hidden", 32},      {"text_heads", 2},   {"text_intermediate", 64},
          {"vocab", 120},           {"max_positions", 20},    {"projection_dim", 16}};
}

inline nlohmann::json tiny_clip() {
  return {{"variant", "clip"},      {"vision_image_size", 32}, {"vision_patch", 8},   {"vision_layers", 2},
          {"vision_hidden", 64},    {"vision_heads", 4},       {"vision_intermediate", 128},
          {"vision_activation", "quick_gelu"},
          {"text_layers", 2},       {"text_hidden", 32},       {"text_heads", 2},     {"text_intermediate", 64},
          {"vocab", 200},           {"max_positions", 16},     {"projection_dim", 24}};
}

inline nlohmann::json tiny_captioner() {
  return {{"variant", "vit-gpt2"}, {"vision_image_size", 32}, {"vision_patch", 8}, {"vision_layers", 2},
          {"vision_hidden", 64},   {"vision_heads", 4},       {"vision_intermediate", 128},
          {"layers", 2},           {"hidden", 64},            {"heads", 4},        {"intermediate", 128},
          {"vocab", 300},          {"max_positions", 32},     {"decode_steps", 3}};
}

inline nlohmann::json tiny_t5() {
  return {{"layers", 2},      {"decoder_layers", 2}, {"hidden", 48},  {"heads", 4},
          {"head_dim", 16},   {"intermediate", 96},  {"vocab", 200},  {"rel_buckets", 8},
          {"rel_max_distance", 20}, {"decode_steps", 3}};
}

inline nlohmann::json tiny_mixtral() {
  return {{"layers", 2}, {"hidden", 32}, {"heads", 4}, {"kv_heads", 2}, {"intermediate", 48},
          {"vocab", 100}, {"max_positions", 128}, {"experts", 4}, {"experts_per_token", 2},
          {"decode_steps", 3}};
}

inline nlohmann::json tiny_rag() {
  return {{"question_layers", 1}, {"question_hidden", 32}, {"question_heads", 2},
          {"question_intermediate", 64}, {"question_vocab", 120}, {"question_max_positions", 64},
          {"layers", 1}, {"hidden", 32}, {"heads", 2}, {"intermediate", 64}, {"vocab", 110},
          {"max_positions", 64}, {"n_docs", 2}, {"passages", 50}, {"passage_len", 6}, {"decode_steps", 2}};
}

}  // namespace am::kernels::testing
