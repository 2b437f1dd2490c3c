// Test-only: runs one family's f32 graph on the cpu backend over a checkpoint and given inputs,
// and writes the output as raw little-endian float32, for the PyTorch reference checks
// (tests/reference/check_*.py).
//
//   am_reference_run <family> <config.json> <input.json> <output.f32>
//
// config.json is the catalog's [config] table as a job's model_config carries it, with
// "weights_path" naming the checkpoint (a .safetensors file, or a Hugging Face checkpoint
// directory whose config.json then replaces the architecture keys, as in a job); it goes through
// the same config reader and checkpoint loader as a real job (build_graph() of the family). Only
// the inputs differ: a job's graph draws them from its seed, here they come from input.json so
// that the reference sees the same ones:
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
//   speech (Wav2Vec2): {"batch", "seq_len" (frames), "audio" (batch*samples)}; output [batch*seq_len, hidden]
//   vision (ViT): {"batch", "pixels" (batch*image*image*channels, channels-last: pixel-major,
//       the layout seeded_pixels() gives the job's graph)}; output [batch, num_classes] logits
//   vision (DETR): {"batch", "pixels"}; output [batch*queries, classes+1+4] (DetrGraph's output)
//   vision-encoder-text-decoder (CLIP): {"batch", "pixels", "texts", "text_len", "ids"}; output
//       [1, batch*proj + texts*proj + batch*texts]: image embeddings, text embeddings, logits_per_image
//   multimodal: LLaVA {"batch", "prompt_len", "pixels" (batch*crops images), "prompt" (one image
//       token each), "forced"} -> LlavaGraph's logits; X-CLIP {"batch" (videos), "pixels"
//       (batch*frames images), "texts", "text_len", "ids"} -> logits_per_video; CLAP {"batch",
//       "text_len", "mel" (batch*frames*mels, time-major), "ids", "mask"} -> logits_per_audio
//   diffusion: {"batch", "latent" (channels-last), "text", "uncond_text"}; output the final latent
//       after the guided DDIM loop (UnetGraph's output)
//   rag: {"batch", "seq_len", "question", "index" (passages*hidden), "passage_tokens", "forced"};
//       output RagGraph's logits [batch*n_docs*(steps+1), vocab]
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
#include "kernels/models/diffusion.h"
#include "kernels/models/decoder_only_checkpoint.h"
#include "kernels/models/encoder_decoder.h"
#include "kernels/models/encoder_decoder_checkpoint.h"
#include "kernels/models/encoder_only.h"
#include "kernels/models/encoder_only_checkpoint.h"
#include "kernels/models/format_plan.h"
#include "kernels/models/hf_config.h"
#include "kernels/models/multimodal.h"
#include "kernels/models/rag.h"
#include "kernels/models/vision_text.h"
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
  CpuBackend be(ctx);
  StackCache cache = model.stack.make_cache(be, batch, prompt_len + steps);
  Tensor logits(Shape{batch * (steps + 1), c.vocab});
  PhaseTimes phases;
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
  if (config.value("variant", std::string("vit")) == "detr") {
    // The job's DetrGraph on these pixels.
    AM_RETURN_IF_ERROR(checkpoint_of(config, "vision").status());
    jobs::JobSpec spec;
    spec.architecture = "vision";
    spec.model_config = config;
    spec.batch = in.at("batch").get<int>();
    const auto pixels = in.at("pixels").get<std::vector<float>>();
    AM_ASSIGN_OR_RETURN(std::unique_ptr<ModelGraph> graph, build_detr_graph_on(spec, Precision::kF32, ctx, &pixels));
    CpuBackend be(ctx);
    AM_ASSIGN_OR_RETURN(GraphOutput out, graph->run(be));
    return std::move(out.output);
  }
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
  if (in.contains("audio")) {  // Wav2Vec2
    given.features = in.at("audio").get<std::vector<float>>();
  } else {
    given.features = in.at("features").get<std::vector<float>>();
    given.prompt = in.at("prompt").get<std::vector<int32_t>>();
    given.forced = in.at("forced").get<std::vector<int32_t>>();
  }
  AM_ASSIGN_OR_RETURN(std::unique_ptr<ModelGraph> graph, build_speech_graph_on(spec, Precision::kF32, ctx, &given));
  CpuBackend be(ctx);
  AM_ASSIGN_OR_RETURN(GraphOutput out, graph->run(be));
  return std::move(out.output);
}

// Concatenates tensors' values into one [1, total] output.
Tensor concat(const std::vector<const Tensor*>& parts) {
  int64_t total = 0;
  for (const Tensor* t : parts) total += t->numel();
  Tensor out(Shape{1, total});
  float* dst = out.data();
  for (const Tensor* t : parts) dst = std::copy(t->data(), t->data() + t->numel(), dst);
  return out;
}

Result<Tensor> pixels_of(const nlohmann::json& in, const char* key, int64_t images, int64_t image, int64_t channels) {
  const auto pixels = in.at(key).get<std::vector<float>>();
  if (static_cast<int64_t>(pixels.size()) != images * image * image * channels) {
    return invalid_argument(std::string(key) + " must hold images*image_size*image_size*channels values");
  }
  Tensor x(Shape{images * image * image, channels});
  std::copy(pixels.begin(), pixels.end(), x.data());
  return x;
}

// CLIP: what ClipGraph::run() does on given images and texts; output [image embeds; text
// embeds; logits_per_image].
Result<Tensor> run_clip(const nlohmann::json& config, const nlohmann::json& in, const ExecContext& ctx) {
  const std::string family = "vision-encoder-text-decoder";
  AM_RETURN_IF_ERROR(checkpoint_of(config, family).status());
  ConfigReader cfg(config, family);
  AM_ASSIGN_OR_RETURN(ClipConfig c, clip_config_from(cfg, family));
  jobs::JobSpec spec;
  spec.model_config = config;
  AM_ASSIGN_OR_RETURN(ClipModel model, load_or_seed_clip(spec, c, format_plan_for(Precision::kF32), ctx));
  const int64_t batch = in.at("batch").get<int64_t>();
  AM_ASSIGN_OR_RETURN(Tensor pixels, pixels_of(in, "pixels", batch, c.vision.image_size, c.vision.channels));
  AM_ASSIGN_OR_RETURN(ClipTexts texts, clip_texts(in.at("ids").get<std::vector<int32_t>>(), in.at("texts").get<int64_t>(),
                                                  in.at("text_len").get<int64_t>(), model.config()));
  CpuBackend be(ctx);
  AM_ASSIGN_OR_RETURN(Tensor img, model.encode_images(be, pixels.view(), batch));
  AM_ASSIGN_OR_RETURN(Tensor txt, model.encode_texts(be, texts));
  Tensor logits(Shape{batch, texts.batch});
  AM_RETURN_IF_ERROR(model.similarity(be, img.view(), txt.view(), logits.view()));
  return concat({&img, &txt, &logits});
}

// LLaVA: the job's LlavaGraph on given pixels, prompts (one image token each) and forced tokens.
Result<Tensor> run_llava(const nlohmann::json& config, const nlohmann::json& in, const ExecContext& ctx) {
  AM_RETURN_IF_ERROR(checkpoint_of(config, "multimodal").status());
  jobs::JobSpec spec;
  spec.architecture = "multimodal";
  spec.model_config = config;
  spec.batch = in.at("batch").get<int>();
  spec.seq_len = in.at("prompt_len").get<int>();
  LlavaInputs given;
  given.pixels = in.at("pixels").get<std::vector<float>>();
  given.prompt = in.at("prompt").get<std::vector<int32_t>>();
  given.forced = in.at("forced").get<std::vector<int32_t>>();
  AM_ASSIGN_OR_RETURN(std::unique_ptr<ModelGraph> graph, build_llava_graph_on(spec, Precision::kF32, ctx, &given));
  CpuBackend be(ctx);
  AM_ASSIGN_OR_RETURN(GraphOutput out, graph->run(be));
  return std::move(out.output);
}

// Diffusion: the job's UnetGraph (guided DDIM loop) from given latents and text states.
Result<Tensor> run_diffusion(const nlohmann::json& config, const nlohmann::json& in, const ExecContext& ctx) {
  AM_RETURN_IF_ERROR(checkpoint_of(config, "diffusion").status());
  jobs::JobSpec spec;
  spec.architecture = "diffusion";
  spec.model_config = config;
  spec.batch = in.at("batch").get<int>();
  spec.seq_len = 1;
  DiffusionInputs given;
  given.latent = in.at("latent").get<std::vector<float>>();
  given.text = in.at("text").get<std::vector<float>>();
  if (in.contains("uncond_text")) given.uncond_text = in.at("uncond_text").get<std::vector<float>>();
  AM_ASSIGN_OR_RETURN(std::unique_ptr<ModelGraph> graph, build_diffusion_graph_on(spec, Precision::kF32, ctx, &given));
  CpuBackend be(ctx);
  AM_ASSIGN_OR_RETURN(GraphOutput out, graph->run(be));
  return std::move(out.output);
}

// RAG: the job's RagGraph (question encoder, retrieval by inner product, generator) on given
// questions, passage index, passage tokens and forced tokens.
Result<Tensor> run_rag(const nlohmann::json& config, const nlohmann::json& in, const ExecContext& ctx) {
  AM_RETURN_IF_ERROR(checkpoint_of(config, "rag").status());
  jobs::JobSpec spec;
  spec.architecture = "rag";
  spec.model_config = config;
  spec.batch = in.at("batch").get<int>();
  spec.seq_len = in.at("seq_len").get<int>();
  RagInputs given;
  given.question = in.at("question").get<std::vector<int32_t>>();
  given.index = in.at("index").get<std::vector<float>>();
  given.passage_tokens = in.at("passage_tokens").get<std::vector<int32_t>>();
  given.forced = in.at("forced").get<std::vector<int32_t>>();
  AM_ASSIGN_OR_RETURN(std::unique_ptr<ModelGraph> graph, build_rag_graph_on(spec, Precision::kF32, ctx, &given));
  CpuBackend be(ctx);
  AM_ASSIGN_OR_RETURN(GraphOutput out, graph->run(be));
  return std::move(out.output);
}

Result<Tensor> run_multimodal(const nlohmann::json& config, const nlohmann::json& in, const ExecContext& ctx) {
  const std::string variant = config.value("variant", std::string("llava"));
  if (variant == "llava") return run_llava(config, in, ctx);
  jobs::JobSpec spec;
  spec.architecture = "multimodal";
  spec.model_config = config;
  spec.batch = in.at("batch").get<int>();
  spec.seq_len = in.at("text_len").get<int>();
  if (variant == "xclip") {
    // The job's XclipGraph on given video frames and texts: logits_per_video.
    AM_RETURN_IF_ERROR(checkpoint_of(config, "multimodal").status());
    ClipInputs given;
    given.pixels = in.at("pixels").get<std::vector<float>>();
    given.ids = in.at("ids").get<std::vector<int32_t>>();
    given.texts = in.at("texts").get<int64_t>();
    given.text_len = spec.seq_len;
    AM_ASSIGN_OR_RETURN(std::unique_ptr<ModelGraph> graph, build_xclip_graph_on(spec, Precision::kF32, ctx, &given));
    CpuBackend be(ctx);
    AM_ASSIGN_OR_RETURN(GraphOutput out, graph->run(be));
    return std::move(out.output);
  }
  if (variant == "clap") {
    // The job's ClapGraph on given log-mel frames and texts: logits_per_audio.
    AM_RETURN_IF_ERROR(checkpoint_of(config, "multimodal").status());
    ClapInputs given;
    given.mel = in.at("mel").get<std::vector<float>>();
    given.ids = in.at("ids").get<std::vector<int32_t>>();
    given.mask = in.at("mask").get<std::vector<int32_t>>();
    AM_ASSIGN_OR_RETURN(std::unique_ptr<ModelGraph> graph, build_clap_graph_on(spec, Precision::kF32, ctx, &given));
    CpuBackend be(ctx);
    AM_ASSIGN_OR_RETURN(GraphOutput out, graph->run(be));
    return std::move(out.output);
  }
  return unsupported("no reference runner for multimodal variant '" + variant + "'");
}

Status run(const std::string& family, const std::string& config_path, const std::string& input_path,
           const std::string& output_path) {
  AM_ASSIGN_OR_RETURN(nlohmann::json given, read_json(config_path));
  // A checkpoint directory's config.json replaces the architecture keys, as in a job (build_graph).
  AM_ASSIGN_OR_RETURN(nlohmann::json config, apply_checkpoint_config(given, family));
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
    if (family == "vision-encoder-text-decoder") out = run_clip(config, input, ctx);
    if (family == "multimodal") out = run_multimodal(config, input, ctx);
    if (family == "diffusion") out = run_diffusion(config, input, ctx);
    if (family == "rag") out = run_rag(config, input, ctx);
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
    std::cerr << "usage: am_reference_run <architecture> <config.json> <input.json> <output.f32>\n";
    return 2;
  }
  const am::Status s = am::kernels::run(argv[1], argv[2], argv[3], argv[4]);
  if (!s.ok()) {
    std::cerr << "am_reference_run: " << s.message() << "\n";
    return 1;
  }
  return 0;
}
