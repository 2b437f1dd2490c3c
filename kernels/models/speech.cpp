#include "kernels/models/speech.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kernels/models/decoder_only_lm.h"
#include "kernels/models/transformer_stack.h"
#include "kernels/models/families.h"
#include "kernels/rng.h"
#include "kernels/weights/checkpoints.h"
#include "kernels/weights/checkpoint.h"
#include "kernels/weights/linear_tensors.h"

namespace am::kernels {
namespace {

constexpr uint64_t kWeightStream = 0x53504543ull;  // "SPEC"
constexpr uint64_t kAudioStream = 0x41554449ull;   // "AUDI"
constexpr uint64_t kPromptStream = 5;
constexpr uint64_t kForcedStream = 6;
constexpr int64_t kWhisperPromptTokens = 4;  // <|startoftranscript|> <|en|> <|transcribe|> <|notimestamps|>
constexpr float kInitStd = 0.02f;
constexpr float kMelStd = 0.5f;     // log-mel features after Whisper's normalisation lie in about [-1, 1.5]
constexpr float kAudioStd = 1.0f;   // Wav2Vec2's feature extractor normalises audio to unit variance
constexpr float kTorchNormEps = 1e-5f;  // nn.GroupNorm / nn.LayerNorm default

// A conv layer's weights: He (fan-in) initialisation for the GELU that follows.
struct ConvLayer {
  Tensor weight, bias;  // [out, in/groups, k], [out] or empty
  int64_t in = 0, out = 0, kernel = 1, stride = 1, pad_left = 0, pad_right = 0, groups = 1;
  Status run(Backend& be, ConstTensorView x, int64_t batch, int64_t in_len, Tensor& y) const {
    Conv1dArgs a{.x = x, .weight = weight.data(), .bias = bias.empty() ? nullptr : bias.data(), .batch = batch,
                 .in_len = in_len, .in_channels = in, .out_channels = out, .kernel = kernel, .stride = stride,
                 .pad_left = pad_left, .pad_right = pad_right, .groups = groups};
    const int64_t out_len = conv1d_out_len(a);
    if (out_len < 1) return invalid_argument("speech: input too short for a conv layer");
    y = be.tensor(Shape{batch * out_len, out});
    a.y = y.view();
    return be.conv1d(a);
  }
};

ConvLayer make_conv(SeededWeights& src, int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t pad_left,
                    int64_t pad_right, int64_t groups, bool bias) {
  ConvLayer c{.in = in, .out = out, .kernel = kernel, .stride = stride, .pad_left = pad_left, .pad_right = pad_right,
              .groups = groups};
  const float fan_in = static_cast<float>(in / groups * kernel);
  c.weight = src.normal(Shape{out, in / groups, kernel}, 0.0f, std::sqrt(2.0f / fan_in));
  Tensor b = src.normal(Shape{out}, 0.0f, 1.0f / std::sqrt(fan_in));
  if (bias) c.bias = std::move(b);
  return c;
}

std::size_t conv_bytes(int64_t in, int64_t out, int64_t kernel, int64_t groups) {
  return static_cast<std::size_t>(out * (in / groups) * kernel + out) * sizeof(float);
}

// ---- Whisper -----------------------------------------------------------------------------------

struct WhisperConfig {
  StackConfig encoder, decoder;
  int64_t vocab = 0, n_mels = 80, max_source = 1500, max_target = 448, steps = kDefaultDecodeSteps;
};

class WhisperGraph final : public ModelGraph {
 public:
  std::vector<std::pair<Op, WeightFormat>> required_ops() const override {
    std::vector<std::pair<Op, WeightFormat>> ops;
    add_op(ops, Op::kConv1d, WeightFormat::kF32);
    add_op(ops, Op::kActivation, WeightFormat::kF32);
    add_op(ops, Op::kGatherRows, WeightFormat::kF32);
    encoder.add_required_ops(ops);
    decoder.add_required_ops(ops);
    add_op(ops, Op::kLinear, head.format());
    add_op(ops, Op::kIndexRows, WeightFormat::kF32);
    return ops;
  }
  std::size_t weights_bytes() const override {
    return conv1.weight.bytes() + conv1.bias.bytes() + conv2.weight.bytes() + conv2.bias.bytes() +
           encoder.weights_bytes() + decoder.weights_bytes() + embedding.bytes() + head.weight_bytes();
  }
  int64_t samples_per_run() const override { return batch; }
  int64_t tokens_per_run() const override { return batch * (kWhisperPromptTokens + config.steps); }

  Result<GraphOutput> forward(Backend& be) const override {
    const auto started = std::chrono::steady_clock::now();
    Tensor a, b;
    AM_RETURN_IF_ERROR(conv1.run(be, mel.view(), batch, frames, a));
    AM_RETURN_IF_ERROR(be.activation(Activation::kGeluErf, a.view()));
    AM_RETURN_IF_ERROR(conv2.run(be, a.view(), batch, frames, b));
    AM_RETURN_IF_ERROR(be.activation(Activation::kGeluErf, b.view()));
    const int64_t src_len = b.rows() / batch;
    std::vector<int32_t> pos(static_cast<std::size_t>(b.rows()));
    for (int64_t r = 0; r < b.rows(); ++r) pos[static_cast<std::size_t>(r)] = static_cast<int32_t>(r % src_len);
    AM_RETURN_IF_ERROR(be.gather_rows(encoder_positions.view(), pos.data(), b.rows(), b.view(), true));
    AM_RETURN_IF_ERROR(encoder.forward(be, b.view(), batch, src_len, 0, nullptr, nullptr));
    StackCache cache = decoder.make_cache(be, batch, kWhisperPromptTokens + config.steps);
    AM_RETURN_IF_ERROR(decoder.precompute_cross(be, b.view(), batch, src_len, nullptr, cache));
    GraphOutput out;
    out.logits = true;
    out.output = Tensor(Shape{batch * (config.steps + 1), config.vocab});
    AM_RETURN_IF_ERROR(generate_teacher_forced(be, decoder, embedding, head, batch, prompt, kWhisperPromptTokens, forced,
                                               config.steps, cache, started, out.output, out.phases));
    out.phases.prefill_tokens = batch * (src_len + kWhisperPromptTokens);
    return out;
  }

  WhisperConfig config;
  ConvLayer conv1, conv2;
  Tensor encoder_positions;
  TransformerStack encoder, decoder;
  TextEmbedding embedding;
  Linear head;
  int64_t batch = 0, frames = 0;
  Tensor mel;
  std::vector<int32_t> prompt, forced;
};

// One Whisper stack from HF WhisperForConditionalGeneration names under `side` ("model.encoder" or
// "model.decoder"): layers.N.{self_attn.{q,k,v,out}_proj (k without bias), self_attn_layer_norm,
// encoder_attn.* and encoder_attn_layer_norm (decoder), fc1, fc2, final_layer_norm}, layer_norm.
Result<StackTensors> read_whisper_stack(const Checkpoint& file, const StackConfig& s, const std::string& side) {
  const int64_t h = s.hidden;
  StackTensors t;
  for (int64_t i = 0; i < s.layers; ++i) {
    const std::string b = side + ".layers." + std::to_string(i) + ".";
    StackLayerTensors l;
    auto read = [&](const std::string& name, const Shape& shape, Tensor& dst) -> Status {
      AM_ASSIGN_OR_RETURN(dst, file.read_f32(b + name, shape));
      return Status::Ok();
    };
    auto linear = [&](const std::string& name, int64_t in, int64_t out, bool bias, Tensor& w, Tensor& bt) -> Status {
      AM_RETURN_IF_ERROR(read(name + ".weight", Shape{out, in}, w));
      return bias ? read(name + ".bias", Shape{out}, bt) : Status::Ok();
    };
    auto norm = [&](const std::string& name, Tensor& g, Tensor& bt) -> Status {
      AM_RETURN_IF_ERROR(read(name + ".weight", Shape{h}, g));
      return read(name + ".bias", Shape{h}, bt);
    };
    AM_RETURN_IF_ERROR(norm("self_attn_layer_norm", l.norm_self_g, l.norm_self_b));
    AM_RETURN_IF_ERROR(linear("self_attn.q_proj", h, h, true, l.q_w, l.q_b));
    AM_RETURN_IF_ERROR(linear("self_attn.k_proj", h, h, false, l.k_w, l.k_b));
    AM_RETURN_IF_ERROR(linear("self_attn.v_proj", h, h, true, l.v_w, l.v_b));
    AM_RETURN_IF_ERROR(linear("self_attn.out_proj", h, h, true, l.o_w, l.o_b));
    if (s.cross) {
      AM_RETURN_IF_ERROR(norm("encoder_attn_layer_norm", l.norm_cross_g, l.norm_cross_b));
      AM_RETURN_IF_ERROR(linear("encoder_attn.q_proj", h, h, true, l.cross_q_w, l.cross_q_b));
      AM_RETURN_IF_ERROR(linear("encoder_attn.k_proj", h, h, false, l.cross_k_w, l.cross_k_b));
      AM_RETURN_IF_ERROR(linear("encoder_attn.v_proj", h, h, true, l.cross_v_w, l.cross_v_b));
      AM_RETURN_IF_ERROR(linear("encoder_attn.out_proj", h, h, true, l.cross_o_w, l.cross_o_b));
    }
    AM_RETURN_IF_ERROR(norm("final_layer_norm", l.norm_ffn_g, l.norm_ffn_b));
    AM_RETURN_IF_ERROR(linear("fc1", h, s.intermediate, true, l.up_w, l.up_b));
    AM_RETURN_IF_ERROR(linear("fc2", s.intermediate, h, true, l.down_w, l.down_b));
    t.layers.push_back(std::move(l));
  }
  AM_ASSIGN_OR_RETURN(t.final_g, file.read_f32(side + ".layer_norm.weight", Shape{h}));
  AM_ASSIGN_OR_RETURN(t.final_b, file.read_f32(side + ".layer_norm.bias", Shape{h}));
  return t;
}

// The weights of a Whisper graph from a checkpoint: conv stem model.encoder.conv{1,2}.{weight,
// bias}, model.encoder.embed_positions.weight (the sinusoids, as stored), the two stacks,
// model.decoder.embed_tokens.weight and embed_positions.weight; the head is tied (proj_out).
Status load_whisper(const std::string& path, const WhisperConfig& w, const FormatPlan& f, const ExecContext& ctx,
                    WhisperGraph& g) {
  AM_ASSIGN_OR_RETURN(Checkpoint file, Checkpoint::open(path));
  const int64_t h = w.encoder.hidden;
  auto conv = [&](const std::string& name, int64_t in, int64_t stride, ConvLayer& c) -> Status {
    c = ConvLayer{.in = in, .out = h, .kernel = 3, .stride = stride, .pad_left = 1, .pad_right = 1, .groups = 1};
    AM_ASSIGN_OR_RETURN(c.weight, file.read_f32(name + ".weight", Shape{h, in, 3}));
    AM_ASSIGN_OR_RETURN(c.bias, file.read_f32(name + ".bias", Shape{h}));
    return Status::Ok();
  };
  AM_RETURN_IF_ERROR(conv("model.encoder.conv1", w.n_mels, 1, g.conv1));
  AM_RETURN_IF_ERROR(conv("model.encoder.conv2", h, 2, g.conv2));
  AM_ASSIGN_OR_RETURN(g.encoder_positions, file.read_f32("model.encoder.embed_positions.weight", Shape{w.max_source, h}));
  AM_ASSIGN_OR_RETURN(StackTensors enc, read_whisper_stack(file, w.encoder, "model.encoder"));
  AM_ASSIGN_OR_RETURN(StackTensors dec, read_whisper_stack(file, w.decoder, "model.decoder"));
  AM_ASSIGN_OR_RETURN(g.encoder, TransformerStack::from_tensors(w.encoder, f, std::move(enc), ctx));
  AM_ASSIGN_OR_RETURN(g.decoder, TransformerStack::from_tensors(w.decoder, f, std::move(dec), ctx));
  AM_ASSIGN_OR_RETURN(g.embedding.tokens, file.read_f32("model.decoder.embed_tokens.weight", Shape{w.vocab, h}));
  AM_ASSIGN_OR_RETURN(g.embedding.positions, file.read_f32("model.decoder.embed_positions.weight", Shape{w.max_target, h}));
  g.head = tied_head(g.embedding.tokens, 1.0f, f.output, ctx);
  return Status::Ok();
}

Result<std::unique_ptr<ModelGraph>> build_whisper(const ConfigReader& cfg, const jobs::JobSpec& spec,
                                                  const FormatPlan& f, const ExecContext& ctx,
                                                  const SpeechInputs* given) {
  WhisperConfig w;
  StackConfig& e = w.encoder;
  e.family = "speech";
  AM_ASSIGN_OR_RETURN(e.layers, cfg.dim("layers"));
  AM_ASSIGN_OR_RETURN(e.hidden, cfg.dim("hidden"));
  AM_ASSIGN_OR_RETURN(e.heads, cfg.dim("heads"));
  AM_ASSIGN_OR_RETURN(e.intermediate, cfg.dim("intermediate"));
  AM_ASSIGN_OR_RETURN(w.vocab, cfg.dim("vocab"));
  AM_ASSIGN_OR_RETURN(int64_t decoder_layers, cfg.dim("decoder_layers", e.layers));
  AM_ASSIGN_OR_RETURN(w.n_mels, cfg.dim("n_mels", 80));
  AM_ASSIGN_OR_RETURN(w.max_source, cfg.dim("max_source_positions", 1500));
  AM_ASSIGN_OR_RETURN(w.max_target, cfg.dim("max_target_positions", 448));
  AM_ASSIGN_OR_RETURN(w.steps, decode_steps_from(cfg));
  if (e.hidden % e.heads != 0) return cfg.error("hidden is not a multiple of heads");
  if (w.vocab > std::numeric_limits<int32_t>::max()) return cfg.error("'vocab' does not fit 32-bit token ids");
  AM_ASSIGN_OR_RETURN(double eps, cfg.number("norm_eps", 1e-5, 1e-12, 1.0));
  AM_ASSIGN_OR_RETURN(std::string act, cfg.text("activation", "gelu"));
  AM_ASSIGN_OR_RETURN(e.activation, activation_from_name(act));
  e.eps = static_cast<float>(eps);
  e.head_dim = e.hidden / e.heads;
  e.kv_heads = e.heads;
  e.norm = NormKind::kLayer;
  e.ffn = FfnKind::kMlp;
  e.q_bias = e.v_bias = e.o_bias = e.ffn_bias = true;  // Whisper's key projection has no bias
  w.decoder = e;
  w.decoder.layers = decoder_layers;
  w.decoder.causal = true;
  w.decoder.cross = true;
  if (spec.seq_len > w.max_source) {
    return invalid_argument("speech: seq_len " + std::to_string(spec.seq_len) + " exceeds max_source_positions " +
                            std::to_string(w.max_source));
  }
  if (kWhisperPromptTokens + w.steps > w.max_target) return cfg.error("decode_steps exceed max_target_positions");
  const int64_t h = e.hidden;
  const std::size_t bytes = conv_bytes(w.n_mels, h, 3, 1) + conv_bytes(h, h, 3, 1) +
                            TransformerStack::estimate_bytes(w.encoder, f) + TransformerStack::estimate_bytes(w.decoder, f) +
                            static_cast<std::size_t>((w.vocab + w.max_target) * h) * sizeof(float) +
                            linear_bytes(h, w.vocab, f.output, false);
  AM_RETURN_IF_ERROR(check_weight_budget("speech", bytes));

  auto g = std::make_unique<WhisperGraph>();
  g->config = w;
  // model_config "weights_path" names a Whisper safetensors checkpoint; without it, seeded weights.
  AM_ASSIGN_OR_RETURN(std::optional<std::string> checkpoint, checkpoint_path_from(spec.model_config, "speech"));
  if (checkpoint) {
    AM_RETURN_IF_ERROR(load_whisper(*checkpoint, w, f, ctx, *g));
  } else {
    SeededWeights src(spec.seed, kWeightStream, ctx);
    g->conv1 = make_conv(src, w.n_mels, h, 3, 1, 1, 1, 1, true);
    g->conv2 = make_conv(src, h, h, 3, 2, 1, 1, 1, true);
    g->encoder_positions = sinusoid_table(w.max_source, h);
    AM_ASSIGN_OR_RETURN(g->encoder, TransformerStack::create(w.encoder, f, src));
    AM_ASSIGN_OR_RETURN(g->decoder, TransformerStack::create(w.decoder, f, src));
    g->embedding.tokens = src.normal(Shape{w.vocab, h}, 0.0f, kInitStd);
    g->embedding.positions = src.normal(Shape{w.max_target, h}, 0.0f, kInitStd);
    g->head = tied_head(g->embedding.tokens, 1.0f, f.output, ctx);
  }
  g->batch = spec.batch;
  g->frames = 2 * spec.seq_len;
  g->mel = Tensor(Shape{g->batch * g->frames, w.n_mels});
  g->prompt = seeded_token_ids(g->batch * kWhisperPromptTokens, w.vocab, spec.seed, kPromptStream);
  g->forced = seeded_token_ids(g->batch * w.steps, w.vocab, spec.seed, kForcedStream);
  if (given) {
    if (static_cast<int64_t>(given->features.size()) != g->mel.numel() ||
        given->prompt.size() != g->prompt.size() || given->forced.size() != g->forced.size()) {
      return invalid_argument("speech: given features must be batch*2*seq_len*n_mels, prompt batch*4, forced "
                              "batch*decode_steps");
    }
    std::copy(given->features.begin(), given->features.end(), g->mel.data());
    g->prompt = given->prompt;
    g->forced = given->forced;
  } else {
    fill_normal(g->mel.data(), g->mel.numel(), 0.0f, kMelStd, derive_seed(spec.seed, kAudioStream), ctx);
  }
  return std::unique_ptr<ModelGraph>(std::move(g));
}

// ---- Wav2Vec2 ----------------------------------------------------------------------------------

Result<std::vector<int64_t>> int_list(const ConfigReader& cfg, const nlohmann::json& doc, const char* key,
                                      std::vector<int64_t> fallback) {
  if (!cfg.has(key)) return fallback;
  const nlohmann::json& v = doc.at(key);
  if (!v.is_array() || v.empty()) return cfg.error(std::string("'") + key + "' must be a non-empty array of integers");
  std::vector<int64_t> out;
  for (const nlohmann::json& x : v) {
    if (!x.is_number_integer() || x.get<int64_t>() < 1) {
      return cfg.error(std::string("'") + key + "' must hold positive integers");
    }
    out.push_back(x.get<int64_t>());
  }
  return out;
}

class Wav2Vec2Graph final : public ModelGraph {
 public:
  std::vector<std::pair<Op, WeightFormat>> required_ops() const override {
    std::vector<std::pair<Op, WeightFormat>> ops;
    add_op(ops, Op::kConv1d, WeightFormat::kF32);
    add_op(ops, group_norm_first ? Op::kGroupNorm : Op::kLayerNorm, WeightFormat::kF32);
    add_op(ops, Op::kActivation, WeightFormat::kF32);
    add_op(ops, Op::kLayerNorm, WeightFormat::kF32);
    add_op(ops, Op::kLinear, projection.format());
    encoder.add_required_ops(ops);
    return ops;
  }
  std::size_t weights_bytes() const override {
    std::size_t total = projection.weight_bytes() + pos_conv.weight.bytes() + pos_conv.bias.bytes() +
                        encoder.weights_bytes() + proj_norm_g.bytes() + proj_norm_b.bytes() + enc_norm_g.bytes() +
                        enc_norm_b.bytes();
    for (std::size_t i = 0; i < convs.size(); ++i) total += convs[i].weight.bytes() + norm_g[i].bytes() + norm_b[i].bytes();
    return total;
  }
  int64_t samples_per_run() const override { return batch; }
  int64_t tokens_per_run() const override { return 0; }

  Result<GraphOutput> forward(Backend& be) const override {
    Tensor x, y;
    int64_t len = samples;
    ConstTensorView in = audio.view();
    for (std::size_t i = 0; i < convs.size(); ++i) {
      AM_RETURN_IF_ERROR(convs[i].run(be, in, batch, len, y));
      len = y.rows() / batch;
      // The feature encoder's norms are built with PyTorch's default eps, not layer_norm_eps.
      if (group_norm_first && i == 0) {
        // GroupNorm with one group per channel: each channel normalised over time per sample.
        AM_RETURN_IF_ERROR(be.group_norm(y.view(), batch, convs[i].out, norm_g[i].data(), norm_b[i].data(),
                                         kTorchNormEps, y.view()));
      } else if (!group_norm_first) {
        AM_RETURN_IF_ERROR(be.layer_norm(y.view(), norm_g[i].data(), norm_b[i].data(), kTorchNormEps, y.view()));
      }
      AM_RETURN_IF_ERROR(be.activation(Activation::kGeluErf, y.view()));
      x = std::move(y);
      in = x.view();
    }
    AM_RETURN_IF_ERROR(be.layer_norm(x.view(), proj_norm_g.data(), proj_norm_b.data(), eps, x.view()));
    Tensor h = be.tensor(Shape{x.rows(), hidden});
    AM_RETURN_IF_ERROR(be.linear(projection, x.view(), h.view()));
    Tensor pos;
    AM_RETURN_IF_ERROR(pos_conv.run(be, h.view(), batch, len, pos));
    AM_RETURN_IF_ERROR(be.activation(Activation::kGeluErf, pos.view()));
    AM_RETURN_IF_ERROR(be.add(h.view(), pos.view()));
    AM_RETURN_IF_ERROR(be.layer_norm(h.view(), enc_norm_g.data(), enc_norm_b.data(), eps, h.view()));
    AM_RETURN_IF_ERROR(encoder.forward(be, h.view(), batch, len, 0, nullptr, nullptr));
    GraphOutput out;
    out.output = std::move(h);
    return out;
  }

  std::vector<ConvLayer> convs;
  std::vector<Tensor> norm_g, norm_b;
  bool group_norm_first = true;
  float eps = 1e-5f;
  Tensor proj_norm_g, proj_norm_b, enc_norm_g, enc_norm_b;
  Linear projection;
  ConvLayer pos_conv;
  TransformerStack encoder;
  int64_t hidden = 0, batch = 0, samples = 0;
  Tensor audio;
};

// The weights of a Wav2Vec2 graph from a checkpoint (Wav2Vec2Model names, under "wav2vec2." in
// task checkpoints such as Wav2Vec2ForCTC / ForPreTraining): feature_extractor.conv_layers.N.conv
// (+ .layer_norm: the GroupNorm of layer 0, or every layer's LayerNorm), feature_projection.
// {layer_norm, projection}, encoder.pos_conv_embed.conv (weight-normed over the kernel axis:
// weight_g [1, 1, k] and weight_v, or parametrizations.weight.original0/1, and bias),
// encoder.layer_norm, encoder.layers.N.{attention.{q,k,v,out}_proj, layer_norm,
// feed_forward.{intermediate_dense, output_dense}, final_layer_norm}.
Status load_wav2vec2(const std::string& path, const StackConfig& e, const FormatPlan& f, const ExecContext& ctx,
                     Wav2Vec2Graph& g) {
  AM_ASSIGN_OR_RETURN(Checkpoint file, Checkpoint::open(path));
  const std::string p = file.contains("wav2vec2.feature_projection.projection.weight") ? "wav2vec2." : "";
  const int64_t h = e.hidden;
  auto read = [&](const std::string& name, const Shape& shape, Tensor& dst) -> Status {
    AM_ASSIGN_OR_RETURN(dst, file.read_f32(p + name, shape));
    return Status::Ok();
  };
  for (std::size_t i = 0; i < g.convs.size(); ++i) {
    ConvLayer& c = g.convs[i];
    const std::string b = "feature_extractor.conv_layers." + std::to_string(i) + ".";
    AM_RETURN_IF_ERROR(read(b + "conv.weight", Shape{c.out, c.in, c.kernel}, c.weight));
    if (!c.bias.empty()) AM_RETURN_IF_ERROR(read(b + "conv.bias", Shape{c.out}, c.bias));
    if (!g.norm_g[i].empty()) {
      AM_RETURN_IF_ERROR(read(b + "layer_norm.weight", Shape{c.out}, g.norm_g[i]));
      AM_RETURN_IF_ERROR(read(b + "layer_norm.bias", Shape{c.out}, g.norm_b[i]));
    }
  }
  const int64_t conv_dim = g.convs.back().out;
  AM_RETURN_IF_ERROR(read("feature_projection.layer_norm.weight", Shape{conv_dim}, g.proj_norm_g));
  AM_RETURN_IF_ERROR(read("feature_projection.layer_norm.bias", Shape{conv_dim}, g.proj_norm_b));
  Tensor pw, pb;
  AM_RETURN_IF_ERROR(read("feature_projection.projection.weight", Shape{h, conv_dim}, pw));
  AM_RETURN_IF_ERROR(read("feature_projection.projection.bias", Shape{h}, pb));
  AM_ASSIGN_OR_RETURN(g.projection, linear_from_tensors("speech weights", "feature_projection.projection",
                                                        std::move(pw), std::move(pb), conv_dim, h, true, f.other, ctx));
  // Weight normalisation (dim=2): weight[o, i, k] = g[k] * v[o, i, k] / |v[:, :, k]|.
  ConvLayer& pc = g.pos_conv;
  const std::string pos = "encoder.pos_conv_embed.conv.";
  const bool parametrized = file.contains(p + pos + "parametrizations.weight.original0");
  Tensor wg, wv;
  AM_RETURN_IF_ERROR(
      read(pos + (parametrized ? "parametrizations.weight.original0" : "weight_g"), Shape{1, 1, pc.kernel}, wg));
  AM_RETURN_IF_ERROR(read(pos + (parametrized ? "parametrizations.weight.original1" : "weight_v"),
                          Shape{pc.out, pc.in / pc.groups, pc.kernel}, wv));
  const int64_t fan = pc.out * (pc.in / pc.groups);
  for (int64_t k = 0; k < pc.kernel; ++k) {
    double sq = 0.0;
    for (int64_t j = 0; j < fan; ++j) sq += static_cast<double>(wv.data()[j * pc.kernel + k]) * wv.data()[j * pc.kernel + k];
    const double scale = wg.data()[k] / std::sqrt(sq);
    for (int64_t j = 0; j < fan; ++j) {
      float& x = wv.data()[j * pc.kernel + k];
      x = static_cast<float>(x * scale);
    }
  }
  pc.weight = std::move(wv);
  AM_RETURN_IF_ERROR(read(pos + "bias", Shape{h}, pc.bias));
  AM_RETURN_IF_ERROR(read("encoder.layer_norm.weight", Shape{h}, g.enc_norm_g));
  AM_RETURN_IF_ERROR(read("encoder.layer_norm.bias", Shape{h}, g.enc_norm_b));
  StackTensors t;
  for (int64_t i = 0; i < e.layers; ++i) {
    const std::string b = "encoder.layers." + std::to_string(i) + ".";
    StackLayerTensors l;
    auto linear = [&](const std::string& name, int64_t in, int64_t out, Tensor& w, Tensor& bias) -> Status {
      AM_RETURN_IF_ERROR(read(b + name + ".weight", Shape{out, in}, w));
      return read(b + name + ".bias", Shape{out}, bias);
    };
    AM_RETURN_IF_ERROR(linear("attention.q_proj", h, h, l.q_w, l.q_b));
    AM_RETURN_IF_ERROR(linear("attention.k_proj", h, h, l.k_w, l.k_b));
    AM_RETURN_IF_ERROR(linear("attention.v_proj", h, h, l.v_w, l.v_b));
    AM_RETURN_IF_ERROR(linear("attention.out_proj", h, h, l.o_w, l.o_b));
    AM_RETURN_IF_ERROR(read(b + "layer_norm.weight", Shape{h}, l.norm_self_g));
    AM_RETURN_IF_ERROR(read(b + "layer_norm.bias", Shape{h}, l.norm_self_b));
    AM_RETURN_IF_ERROR(linear("feed_forward.intermediate_dense", h, e.intermediate, l.up_w, l.up_b));
    AM_RETURN_IF_ERROR(linear("feed_forward.output_dense", e.intermediate, h, l.down_w, l.down_b));
    AM_RETURN_IF_ERROR(read(b + "final_layer_norm.weight", Shape{h}, l.norm_ffn_g));
    AM_RETURN_IF_ERROR(read(b + "final_layer_norm.bias", Shape{h}, l.norm_ffn_b));
    t.layers.push_back(std::move(l));
  }
  AM_ASSIGN_OR_RETURN(g.encoder, TransformerStack::from_tensors(e, f, std::move(t), ctx));
  return Status::Ok();
}

Result<std::unique_ptr<ModelGraph>> build_wav2vec2(const ConfigReader& cfg, const nlohmann::json& doc,
                                                   const jobs::JobSpec& spec, const FormatPlan& f,
                                                   const ExecContext& ctx, const SpeechInputs* given) {
  StackConfig e;
  e.family = "speech";
  AM_ASSIGN_OR_RETURN(e.layers, cfg.dim("layers"));
  AM_ASSIGN_OR_RETURN(e.hidden, cfg.dim("hidden"));
  AM_ASSIGN_OR_RETURN(e.heads, cfg.dim("heads"));
  AM_ASSIGN_OR_RETURN(e.intermediate, cfg.dim("intermediate"));
  if (e.hidden % e.heads != 0) return cfg.error("hidden is not a multiple of heads");
  AM_ASSIGN_OR_RETURN(int64_t conv_dim, cfg.dim("conv_dim", 512));
  AM_ASSIGN_OR_RETURN(std::vector<int64_t> kernels, int_list(cfg, doc, "conv_kernel", {10, 3, 3, 3, 3, 2, 2}));
  AM_ASSIGN_OR_RETURN(std::vector<int64_t> strides, int_list(cfg, doc, "conv_stride", {5, 2, 2, 2, 2, 2, 2}));
  if (kernels.size() != strides.size()) return cfg.error("'conv_kernel' and 'conv_stride' must have the same length");
  AM_ASSIGN_OR_RETURN(std::string norm, cfg.text("feat_extract_norm", "group"));
  if (norm != "group" && norm != "layer") return cfg.error("'feat_extract_norm' must be \"group\" or \"layer\"");
  AM_ASSIGN_OR_RETURN(int64_t pos_kernel, cfg.dim("pos_conv_kernel", 128));
  AM_ASSIGN_OR_RETURN(int64_t pos_groups, cfg.dim("pos_conv_groups", 16));
  if (e.hidden % pos_groups != 0) return cfg.error("hidden is not a multiple of 'pos_conv_groups'");
  AM_ASSIGN_OR_RETURN(double eps, cfg.number("norm_eps", 1e-5, 1e-12, 1.0));
  AM_ASSIGN_OR_RETURN(std::string act, cfg.text("activation", "gelu"));
  AM_ASSIGN_OR_RETURN(e.activation, activation_from_name(act));
  AM_ASSIGN_OR_RETURN(bool conv_bias, cfg.flag("conv_bias", false));
  e.eps = static_cast<float>(eps);
  e.head_dim = e.hidden / e.heads;
  e.kv_heads = e.heads;
  e.norm = NormKind::kLayer;
  e.pre_norm = false;  // wav2vec2-base: post-LN layers after the encoder LayerNorm
  e.final_norm = false;
  e.ffn = FfnKind::kMlp;
  e.q_bias = e.k_bias = e.v_bias = e.o_bias = e.ffn_bias = true;
  std::size_t bytes = TransformerStack::estimate_bytes(e, f) + linear_bytes(conv_dim, e.hidden, f.other, true) +
                      conv_bytes(e.hidden, e.hidden, pos_kernel, pos_groups);
  for (std::size_t i = 0; i < kernels.size(); ++i) bytes += conv_bytes(i == 0 ? 1 : conv_dim, conv_dim, kernels[i], 1);
  AM_RETURN_IF_ERROR(check_weight_budget("speech", bytes));

  auto g = std::make_unique<Wav2Vec2Graph>();
  g->group_norm_first = norm == "group";
  g->eps = e.eps;
  g->hidden = e.hidden;
  SeededWeights src(spec.seed, kWeightStream, ctx);
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    g->convs.push_back(make_conv(src, i == 0 ? 1 : conv_dim, conv_dim, kernels[i], strides[i], 0, 0, 1, conv_bias));
    const bool normed = g->group_norm_first ? i == 0 : true;
    g->norm_g.push_back(normed ? src.normal(Shape{conv_dim}, 1.0f, e.init.norm_noise) : Tensor());
    g->norm_b.push_back(normed ? src.normal(Shape{conv_dim}, 0.0f, e.init.norm_noise) : Tensor());
  }
  g->proj_norm_g = src.normal(Shape{conv_dim}, 1.0f, e.init.norm_noise);
  g->proj_norm_b = src.normal(Shape{conv_dim}, 0.0f, e.init.norm_noise);
  g->projection = src.linear(conv_dim, e.hidden, kInitStd, true, 0.0f, f.other);
  // Even kernel: pad (k/2, k/2 - 1) gives the same length as HF's pad k/2 then drop the last frame.
  g->pos_conv = make_conv(src, e.hidden, e.hidden, pos_kernel, 1, pos_kernel / 2, (pos_kernel - 1) / 2, pos_groups, true);
  g->enc_norm_g = src.normal(Shape{e.hidden}, 1.0f, e.init.norm_noise);
  g->enc_norm_b = src.normal(Shape{e.hidden}, 0.0f, e.init.norm_noise);
  AM_ASSIGN_OR_RETURN(g->encoder, TransformerStack::create(e, f, src));
  // model_config "weights_path" names a Wav2Vec2 checkpoint: its values replace the seeded ones
  // drawn above (which fixed every shape).
  AM_ASSIGN_OR_RETURN(std::optional<std::string> checkpoint, checkpoint_path_from(spec.model_config, "speech"));
  if (checkpoint) AM_RETURN_IF_ERROR(load_wav2vec2(*checkpoint, e, f, ctx, *g));
  // The samples that give exactly seq_len frames: invert each conv's length formula.
  int64_t len = spec.seq_len;
  for (std::size_t i = kernels.size(); i-- > 0;) len = (len - 1) * strides[i] + kernels[i];
  g->batch = spec.batch;
  g->samples = len;
  g->audio = Tensor(Shape{g->batch * len, 1});
  if (given) {
    if (static_cast<int64_t>(given->features.size()) != g->audio.numel()) {
      return invalid_argument("speech: given Wav2Vec2 audio must hold batch * " + std::to_string(len) +
                              " samples (the input of seq_len frames)");
    }
    std::copy(given->features.begin(), given->features.end(), g->audio.data());
  } else {
    fill_normal(g->audio.data(), g->audio.numel(), 0.0f, kAudioStd, derive_seed(spec.seed, kAudioStream), ctx);
  }
  return std::unique_ptr<ModelGraph>(std::move(g));
}

}  // namespace

Result<std::unique_ptr<ModelGraph>> build_speech_graph(const jobs::JobSpec& spec, Precision precision,
                                                       const ExecContext& ctx) {
  return build_speech_graph_on(spec, precision, ctx, nullptr);
}

Result<std::unique_ptr<ModelGraph>> build_speech_graph_on(const jobs::JobSpec& spec, Precision precision,
                                                          const ExecContext& ctx, const SpeechInputs* given) {
  if (!spec.model_config.is_object()) return invalid_argument("speech config must be a JSON object");
  ConfigReader cfg(spec.model_config, "speech");
  AM_ASSIGN_OR_RETURN(std::string style, cfg.text("style", "whisper"));
  const FormatPlan formats = format_plan_for(precision);
  if (spec.batch < 1 || spec.seq_len < 1) return invalid_argument("speech: batch and seq_len must be positive");
  if (style == "whisper") return build_whisper(cfg, spec, formats, ctx, given);
  if (style == "wav2vec2") return build_wav2vec2(cfg, spec.model_config, spec, formats, ctx, given);
  return cfg.error("'style' must be \"whisper\" or \"wav2vec2\", not \"" + style + "\"");
}

}  // namespace am::kernels
