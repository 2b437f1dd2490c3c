// Test-only: runs one family's f32 graph on the cpu backend over a checkpoint and given inputs,
// and writes the output as raw little-endian float32, for the PyTorch reference checks
// (tests/reference/check_*.py).
//
//   am_reference_run <family> <config.json> <input.json> <output.f32>
//
// config.json is the catalog's [config] table as a job's model_config carries it, with
// "weights_path" naming the safetensors checkpoint; it goes through the same config reader and
// checkpoint loader as a real job (build_graph() of the family). Only the inputs differ: a job's
// graph draws them from its seed, here they come from input.json so that the reference sees the
// same ones:
//   encoder-only: {"batch", "seq", "token_ids", "token_type_ids", "attention_mask"} (batch*seq each)
//       output [batch*seq, hidden]: the final hidden states (EncoderOnlyGraph's output)
//   decoder-only, mixture-of-experts (Mixtral): {"batch", "prompt_len", "prompt" (batch*prompt_len), "forced" (batch*steps)}
//       steps = config decode_steps; output [batch*(steps+1), vocab]: the logits after the prompt
//       and after each cached decode step (DecoderLmGraph's output)
//   encoder-decoder (T5): {"batch", "src_len", "src", "src_mask" (batch*src_len; 1 = token),
//       "forced" (batch*steps)}; output [batch*(steps+1), vocab]: the decoder's logits after the
//       start token and after each cached step, cross-attending to the masked source
//       (EncDecGraph's output, which passes no mask)
//   state-space (Mamba): as decoder-only; the job's RecurrentGraph on the given tokens
//   speech (Whisper): {"batch", "seq_len" (encoder positions), "features" (batch*2*seq_len*n_mels,
//       channels-last), "prompt" (batch*4), "forced"}; the job's WhisperGraph on these inputs
//   vision (ViT): {"batch", "pixels" (batch*image*image*channels, channels-last: pixel-major,
//       the layout seeded_pixels() gives the job's graph)}; output [batch, num_classes] logits
// Exit 0 on success, 1 with the error on stderr otherwise.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/models/decoder_only.h"
#include "kernels/models/decoder_only_checkpoint.h"
#include "kernels/models/encoder_decoder.h"
#include "kernels/models/encoder_decoder_checkpoint.h"
#include "kernels/models/encoder_only.h"
#include "kernels/models/encoder_only_checkpoint.h"
#include "kernels/models/format_plan.h"
#include "kernels/models/speech.h"
#include "kernels/models/state_space.h"
#include "kernels/models/vision.h"
#include "kernels/thread_pool.h"
#include "kernels/weights/checkpoints.h"

namespace am::kernels {
namespace {

Result<nlohmann::json> read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) return not_found("cannot open " + path);
  try {
    return nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    return invalid_argument(path + ": " + e.what());
  }
}

Result<std::string> checkpoint_of(const nlohmann::json& config, const std::string& family) {
  AM_ASSIGN_OR_RETURN(std::optional<std::string> path, checkpoint_path_from(config, family));
  if (!path) return invalid_argument(std::string("config has no ") + kWeightsPathKey);
  return *path;
}

Result<Tensor> run_encoder_only(const nlohmann::json& config, const nlohmann::json& in, const ExecContext& ctx) {
  AM_ASSIGN_OR_RETURN(EncoderConfig c, encoder_config_from_json(config));
  AM_ASSIGN_OR_RETURN(std::string path, checkpoint_of(config, "encoder-only"));
  AM_ASSIGN_OR_RETURN(EncoderModel model, load_bert_checkpoint(path, c, format_plan_for(Precision::kF32), ctx));
  EncoderInput input;
  input.batch = in.at("batch").get<int64_t>();
  input.seq = in.at("seq").get<int64_t>();
  input.token_ids = in.at("token_ids").get<std::vector<int32_t>>();
  input.token_type_ids = in.at("token_type_ids").get<std::vector<int32_t>>();
  input.attention_mask = in.at("attention_mask").get<std::vector<int32_t>>();
  AM_RETURN_IF_ERROR(validate_encoder_input(c, input));
  CpuBackend be(ctx);
  return model.forward(input, be);
}

Result<Tensor> run_decoder_lm(const std::string& family, const nlohmann::json& config, const nlohmann::json& in,
                              const ExecContext& ctx) {
  AM_ASSIGN_OR_RETURN(DecoderLmConfig c, decoder_lm_config_from_json(config, family));
  AM_ASSIGN_OR_RETURN(std::string path, checkpoint_of(config, family));
  AM_ASSIGN_OR_RETURN(DecoderLm model, load_llama_checkpoint(path, c, format_plan_for(Precision::kF32), ctx));
  const int64_t batch = in.at("batch").get<int64_t>(), prompt_len = in.at("prompt_len").get<int64_t>();
  const int64_t steps = c.decode_steps;
  const auto prompt = in.at("prompt").get<std::vector<int32_t>>();
  const auto forced = in.at("forced").get<std::vector<int32_t>>();
  if (static_cast<int64_t>(prompt.size()) != batch * prompt_len || static_cast<int64_t>(forced.size()) != batch * steps) {
    return invalid_argument("prompt must hold batch*prompt_len ids and forced batch*decode_steps");
  }
  // What DecoderLmGraph::run() does, on these tokens.
  StackCache cache = model.stack.make_cache(batch, prompt_len + steps);
  Tensor logits(Shape{batch * (steps + 1), c.vocab});
  PhaseTimes phases;
  CpuBackend be(ctx);
  AM_RETURN_IF_ERROR(generate_teacher_forced(be, model.stack, model.embedding, model.head, batch, prompt, prompt_len,
                                             forced, steps, cache, std::chrono::steady_clock::now(), logits, phases));
  return logits;
}

Result<Tensor> run_encoder_decoder(const nlohmann::json& config, const nlohmann::json& in, const ExecContext& ctx) {
  AM_ASSIGN_OR_RETURN(EncDecConfig c, enc_dec_config_from_json(config, "encoder-decoder"));
  AM_ASSIGN_OR_RETURN(std::string path, checkpoint_of(config, "encoder-decoder"));
  AM_ASSIGN_OR_RETURN(EncDecModel model, load_t5_checkpoint(path, c, format_plan_for(Precision::kF32), ctx));
  const int64_t batch = in.at("batch").get<int64_t>(), src_len = in.at("src_len").get<int64_t>();
  const auto src = in.at("src").get<std::vector<int32_t>>();
  const auto src_mask = in.at("src_mask").get<std::vector<int32_t>>();
  const auto forced = in.at("forced").get<std::vector<int32_t>>();
  if (static_cast<int64_t>(src_mask.size()) != batch * src_len ||
      static_cast<int64_t>(forced.size()) != batch * c.decode_steps) {
    return invalid_argument("src_mask must hold batch*src_len values and forced batch*decode_steps");
  }
  // What EncDecGraph::run() does, with a source padding mask (the job's graph has none).
  Tensor logits(Shape{batch * (c.decode_steps + 1), c.vocab});
  PhaseTimes phases;
  CpuBackend be(ctx);
  AM_RETURN_IF_ERROR(model.generate(be, batch, src, src_len, src_mask.data(), forced, std::chrono::steady_clock::now(),
                                    logits, phases));
  return logits;
}

Result<Tensor> run_vision(const nlohmann::json& config, const nlohmann::json& in, const ExecContext& ctx) {
  AM_ASSIGN_OR_RETURN(VitClassifierConfig c, vit_classifier_config_from_json(config));
  AM_ASSIGN_OR_RETURN(std::string path, checkpoint_of(config, "vision"));
  AM_ASSIGN_OR_RETURN(VitClassifier model, load_vit_checkpoint(path, c, format_plan_for(Precision::kF32), ctx));
  const int64_t batch = in.at("batch").get<int64_t>();
  const auto pixels = in.at("pixels").get<std::vector<float>>();
  const int64_t image = c.tower.image_size, channels = c.tower.channels;
  if (static_cast<int64_t>(pixels.size()) != batch * image * image * channels) {
    return invalid_argument("pixels must hold batch*image_size*image_size*channels values");
  }
  Tensor x(Shape{batch * image * image, channels});
  std::copy(pixels.begin(), pixels.end(), x.data());
  CpuBackend be(ctx);
  return model.logits(be, x.view(), batch);  // what VitClassifierGraph::run() does
}

Result<Tensor> run_state_space(const nlohmann::json& config, const nlohmann::json& in, const ExecContext& ctx) {
  AM_RETURN_IF_ERROR(checkpoint_of(config, "state-space").status());
  jobs::JobSpec spec;
  spec.architecture = "state-space";
  spec.model_config = config;
  spec.batch = in.at("batch").get<int>();
  spec.seq_len = in.at("prompt_len").get<int>();
  const auto prompt = in.at("prompt").get<std::vector<int32_t>>();
  const auto forced = in.at("forced").get<std::vector<int32_t>>();
  // The job's own graph (config reader, checkpoint loader, prefill + decode loop) on these tokens.
  AM_ASSIGN_OR_RETURN(std::unique_ptr<ModelGraph> graph,
                      build_state_space_graph_on(spec, Precision::kF32, ctx, &prompt, &forced));
  CpuBackend be(ctx);
  AM_ASSIGN_OR_RETURN(GraphOutput out, graph->run(be));
  return std::move(out.output);
}

Result<Tensor> run_speech(const nlohmann::json& config, const nlohmann::json& in, const ExecContext& ctx) {
  AM_RETURN_IF_ERROR(checkpoint_of(config, "speech").status());
  jobs::JobSpec spec;
  spec.architecture = "speech";
  spec.model_config = config;
  spec.batch = in.at("batch").get<int>();
  spec.seq_len = in.at("seq_len").get<int>();
  SpeechInputs given;
  given.features = in.at("features").get<std::vector<float>>();
  given.prompt = in.at("prompt").get<std::vector<int32_t>>();
  given.forced = in.at("forced").get<std::vector<int32_t>>();
  AM_ASSIGN_OR_RETURN(std::unique_ptr<ModelGraph> graph, build_speech_graph_on(spec, Precision::kF32, ctx, &given));
  CpuBackend be(ctx);
  AM_ASSIGN_OR_RETURN(GraphOutput out, graph->run(be));
  return std::move(out.output);
}

Status run(const std::string& family, const std::string& config_path, const std::string& input_path,
           const std::string& output_path) {
  AM_ASSIGN_OR_RETURN(nlohmann::json config, read_json(config_path));
  AM_ASSIGN_OR_RETURN(nlohmann::json input, read_json(input_path));
  AM_ASSIGN_OR_RETURN(KernelPath kernel_path, select_kernel_path());
  // One thread: the models are small, and ctest runs two of these beside other work on two cores.
  ThreadPool pool(1);
  const ExecContext ctx{kernel_path, &pool};
  Result<Tensor> out = unsupported("no reference runner for family '" + family + "'");
  try {
    if (family == "encoder-only") out = run_encoder_only(config, input, ctx);
    if (family == "encoder-decoder") out = run_encoder_decoder(config, input, ctx);
    if (family == "vision") out = run_vision(config, input, ctx);
    if (family == "state-space") out = run_state_space(config, input, ctx);
    if (family == "speech") out = run_speech(config, input, ctx);
    // Mixtral is a decoder LM with experts (mixture_of_experts.cpp builds it the same way).
    if (family == "decoder-only" || family == "mixture-of-experts") out = run_decoder_lm(family, config, input, ctx);
  } catch (const nlohmann::json::exception& e) {
    return invalid_argument(input_path + ": " + e.what());
  }
  if (!out.ok()) return out.status();
  std::ofstream f(output_path, std::ios::binary);
  // Raw float32 in host order; the tests run on little-endian machines (x86-64, aarch64).
  f.write(reinterpret_cast<const char*>(out->data()), static_cast<std::streamsize>(out->numel() * sizeof(float)));
  if (!f) return internal_error("cannot write " + output_path);
  return Status::Ok();
}

}  // namespace
}  // namespace am::kernels

int main(int argc, char** argv) {
  if (argc != 5) {
    std::cerr << "usage: am_reference_run <encoder-only|decoder-only|encoder-decoder|mixture-of-experts|speech|state-space|vision> <config.json> <input.json> <output.f32>\n";
    return 2;
  }
  const am::Status s = am::kernels::run(argv[1], argv[2], argv[3], argv[4]);
  if (!s.ok()) {
    std::cerr << "am_reference_run: " << s.message() << "\n";
    return 1;
  }
  return 0;
}
