#include "kernels/models/encoder_decoder.h"

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <utility>

#include "kernels/models/encoder_decoder_checkpoint.h"
#include "kernels/models/families.h"

namespace am::kernels {
namespace {

constexpr uint64_t kWeightStream = 0x454E4445ull;  // "ENDE"
constexpr uint64_t kSourceStream = 3;
constexpr uint64_t kForcedStream = 4;
constexpr float kBartInitStd = 0.02f;
constexpr int32_t kBartDecoderStart = 2;
constexpr int64_t kT5DefaultMaxPositions = 512;

class EncDecGraph final : public ModelGraph {
 public:
  EncDecGraph(EncDecModel m, int64_t batch, int64_t src_len, std::vector<int32_t> src, std::vector<int32_t> forced)
      : m_(std::move(m)), batch_(batch), src_len_(src_len), src_(std::move(src)), forced_(std::move(forced)) {}
  std::vector<std::pair<Op, WeightFormat>> required_ops() const override { return m_.required_ops(); }
  std::size_t weights_bytes() const override { return m_.weights_bytes(); }
  int64_t samples_per_run() const override { return batch_; }
  int64_t tokens_per_run() const override { return batch_ * (src_len_ + 1 + m_.config.decode_steps); }
  Result<GraphOutput> forward(Backend& be) const override {
    const auto started = std::chrono::steady_clock::now();
    GraphOutput out;
    out.logits = true;
    out.output = Tensor(Shape{batch_ * (m_.config.decode_steps + 1), m_.config.vocab});
    AM_RETURN_IF_ERROR(m_.generate(be, batch_, src_, src_len_, nullptr, forced_, started, out.output, out.phases));
    return out;
  }

 private:
  EncDecModel m_;
  int64_t batch_, src_len_;
  std::vector<int32_t> src_, forced_;
};

}  // namespace

Result<EncDecConfig> enc_dec_config_from_json(const nlohmann::json& doc, const std::string& family) {
  if (!doc.is_object()) return invalid_argument(family + " config must be a JSON object");
  ConfigReader cfg(doc, family);
  EncDecConfig d;
  AM_ASSIGN_OR_RETURN(std::string style, cfg.text("style", "t5"));
  if (style != "t5" && style != "bart") return cfg.error("'style' must be \"t5\" or \"bart\", not \"" + style + "\"");
  d.bart = style == "bart";
  StackConfig& e = d.encoder;
  e.family = family;
  AM_ASSIGN_OR_RETURN(e.layers, cfg.dim("layers"));
  AM_ASSIGN_OR_RETURN(e.hidden, cfg.dim("hidden"));
  AM_ASSIGN_OR_RETURN(e.heads, cfg.dim("heads"));
  AM_ASSIGN_OR_RETURN(e.intermediate, cfg.dim("intermediate"));
  AM_ASSIGN_OR_RETURN(d.vocab, cfg.dim("vocab"));
  if (d.vocab > std::numeric_limits<int32_t>::max()) return cfg.error("'vocab' does not fit 32-bit token ids");
  if (!cfg.has("head_dim") && e.hidden % e.heads != 0) {
    return cfg.error("hidden " + std::to_string(e.hidden) + " is not a multiple of heads " + std::to_string(e.heads));
  }
  AM_ASSIGN_OR_RETURN(e.head_dim, cfg.dim("head_dim", e.hidden / e.heads));
  e.kv_heads = e.heads;
  AM_ASSIGN_OR_RETURN(int64_t decoder_layers, cfg.dim("decoder_layers", e.layers));
  if (d.bart) {
    AM_ASSIGN_OR_RETURN(d.max_positions, cfg.dim("max_positions"));
  } else {
    AM_ASSIGN_OR_RETURN(d.max_positions, cfg.dim("max_positions", kT5DefaultMaxPositions));
  }
  AM_ASSIGN_OR_RETURN(double eps, cfg.number("norm_eps", d.bart ? 1e-5 : 1e-6, 1e-12, 1.0));
  e.eps = static_cast<float>(eps);
  AM_ASSIGN_OR_RETURN(std::string act, cfg.text("activation", d.bart ? "gelu" : "relu"));
  AM_ASSIGN_OR_RETURN(e.activation, activation_from_name(act));
  AM_ASSIGN_OR_RETURN(bool gated, cfg.flag("gated_ffn", false));
  e.ffn = gated ? FfnKind::kGated : FfnKind::kMlp;
  AM_ASSIGN_OR_RETURN(d.tie_embeddings, cfg.flag("tie_embeddings", true));
  AM_ASSIGN_OR_RETURN(d.decode_steps, decode_steps_from(cfg));
  if (cfg.has("experts")) {
    AM_ASSIGN_OR_RETURN(e.experts, cfg.dim("experts"));
    AM_ASSIGN_OR_RETURN(e.experts_per_token, cfg.dim("experts_per_token", 1));
    AM_ASSIGN_OR_RETURN(e.moe_every, cfg.dim("moe_every", 2));
    if (e.experts_per_token > e.experts) return cfg.error("'experts_per_token' exceeds 'experts'");
    e.router_renormalize = false;  // Switch scales each token by its router probability
  }
  if (d.bart) {
    e.norm = NormKind::kLayer;
    e.pre_norm = false;
    e.final_norm = false;
    e.q_bias = e.k_bias = e.v_bias = e.o_bias = e.ffn_bias = true;
    e.positions = PositionKind::kNone;
    e.init = InitScales{};  // N(0, 0.02) everywhere, zero biases
    d.decoder_start = kBartDecoderStart;
  } else {
    e.norm = NormKind::kRms;
    e.pre_norm = true;
    e.final_norm = true;
    e.positions = PositionKind::kRelativeBias;
    AM_ASSIGN_OR_RETURN(e.rel_buckets, cfg.dim("rel_buckets", 32));
    AM_ASSIGN_OR_RETURN(e.rel_max_distance, cfg.dim("rel_max_distance", 128));
    e.attn_scale = 1.0f;  // T5 folds 1/sqrt(d_kv) into the query initialisation instead
    const float d_model = static_cast<float>(e.hidden), d_kv = static_cast<float>(e.head_dim);
    e.init.q = 1.0f / std::sqrt(d_model * d_kv);
    e.init.kv = 1.0f / std::sqrt(d_model);
    e.init.o = 1.0f / std::sqrt(static_cast<float>(e.heads) * d_kv);
    e.init.ffn_in = 1.0f / std::sqrt(d_model);
    e.init.ffn_out = 1.0f / std::sqrt(static_cast<float>(e.intermediate));
    e.init.router = 1.0f / std::sqrt(d_model);
    d.decoder_start = 0;
  }
  d.decoder = e;
  d.decoder.layers = decoder_layers;
  d.decoder.causal = true;
  d.decoder.cross = true;
  return d;
}

std::size_t EncDecModel::estimate_bytes(const EncDecConfig& c, const FormatPlan& f) {
  const int64_t h = c.encoder.hidden;
  std::size_t total = static_cast<std::size_t>(c.vocab * h) * sizeof(float);
  if (c.bart) total += static_cast<std::size_t>(2 * (c.max_positions + kBartPositionOffset) * h) * sizeof(float);
  total += linear_bytes(h, c.vocab, f.output, false);
  return total + TransformerStack::estimate_bytes(c.encoder, f) + TransformerStack::estimate_bytes(c.decoder, f);
}

Result<EncDecModel> EncDecModel::create_synthetic(const EncDecConfig& c, const FormatPlan& f, uint64_t seed,
                                                  const ExecContext& ctx) {
  AM_RETURN_IF_ERROR(check_weight_budget(c.encoder.family, estimate_bytes(c, f)));
  EncDecModel m;
  m.config = c;
  SeededWeights src(seed, kWeightStream, ctx);
  const int64_t h = c.encoder.hidden;
  const float embed_std = c.bart ? kBartInitStd : 1.0f;  // T5 draws its shared embedding from N(0, 1)
  m.encoder_embedding.tokens = src.normal(Shape{c.vocab, h}, 0.0f, embed_std);
  m.decoder_embedding.tokens = m.encoder_embedding.tokens.clone();
  if (c.bart) {
    for (TextEmbedding* e : {&m.encoder_embedding, &m.decoder_embedding}) {
      e->positions = src.normal(Shape{c.max_positions + kBartPositionOffset, h}, 0.0f, kBartInitStd);
      e->position_offset = kBartPositionOffset;
      e->norm_g = src.normal(Shape{h}, 1.0f, c.encoder.init.norm_noise);
      e->norm_b = src.normal(Shape{h}, 0.0f, c.encoder.init.norm_noise);
      e->eps = c.encoder.eps;
    }
  }
  AM_ASSIGN_OR_RETURN(m.encoder, TransformerStack::create(c.encoder, f, src));
  AM_ASSIGN_OR_RETURN(m.decoder, TransformerStack::create(c.decoder, f, src));
  if (c.tie_embeddings) {
    // T5 rescales the decoder output by d_model^-0.5 before a tied head; BART does not.
    const float scale = c.bart ? 1.0f : 1.0f / std::sqrt(static_cast<float>(h));
    m.head = tied_head(m.encoder_embedding.tokens, scale, f.output, ctx);
  } else {
    m.head = src.linear(h, c.vocab, c.bart ? kBartInitStd : 1.0f / std::sqrt(static_cast<float>(h)), false, 0.0f,
                        f.output);
  }
  return m;
}

std::size_t EncDecModel::weights_bytes() const {
  // The decoder's token table is the encoder's (shared in every checkpoint): count it once.
  return encoder_embedding.bytes() + decoder_embedding.bytes() - decoder_embedding.tokens.bytes() +
         encoder.weights_bytes() + decoder.weights_bytes() + head.weight_bytes();
}

std::vector<std::pair<Op, WeightFormat>> EncDecModel::required_ops() const {
  std::vector<std::pair<Op, WeightFormat>> ops;
  encoder_embedding.add_required_ops(ops);
  encoder.add_required_ops(ops);
  decoder.add_required_ops(ops);
  add_op(ops, Op::kLinear, head.format());
  add_op(ops, Op::kIndexRows, WeightFormat::kF32);
  return ops;
}

Status EncDecModel::generate(Backend& be, int64_t batch, const std::vector<int32_t>& src, int64_t src_len,
                             const int32_t* src_mask, const std::vector<int32_t>& forced,
                             std::chrono::steady_clock::time_point started, Tensor& logits, PhaseTimes& phases) const {
  if (static_cast<int64_t>(src.size()) != batch * src_len) return invalid_argument("encoder-decoder: source size");
  Tensor memory = be.tensor(Shape{batch * src_len, config.encoder.hidden});
  AM_RETURN_IF_ERROR(encoder_embedding.embed(be, src.data(), batch, src_len, 0, memory.view()));
  AM_RETURN_IF_ERROR(encoder.forward(be, memory.view(), batch, src_len, 0, nullptr, src_mask));
  const int64_t steps = config.decode_steps;
  StackCache cache = decoder.make_cache(be, batch, 1 + steps);
  AM_RETURN_IF_ERROR(decoder.precompute_cross(be, memory.view(), batch, src_len, src_mask, cache));
  const std::vector<int32_t> start(static_cast<std::size_t>(batch), config.decoder_start);
  AM_RETURN_IF_ERROR(generate_teacher_forced(be, decoder, decoder_embedding, head, batch, start, 1, forced, steps, cache,
                                             started, logits, phases));
  phases.prefill_tokens = batch * (src_len + 1);
  return Status::Ok();
}

Result<std::unique_ptr<ModelGraph>> make_enc_dec_graph(EncDecModel model, const jobs::JobSpec& spec) {
  const int64_t batch = spec.batch, src_len = spec.seq_len, steps = model.config.decode_steps;
  if (batch < 1 || src_len < 1) return invalid_argument("encoder-decoder: batch and seq_len must be positive");
  if (src_len > model.config.max_positions || 1 + steps > model.config.max_positions) {
    return invalid_argument(model.config.encoder.family + ": seq_len " + std::to_string(src_len) +
                            " or decode_steps exceed max_positions " + std::to_string(model.config.max_positions));
  }
  std::vector<int32_t> src = seeded_token_ids(batch * src_len, model.config.vocab, spec.seed, kSourceStream);
  std::vector<int32_t> forced = seeded_token_ids(batch * steps, model.config.vocab, spec.seed, kForcedStream);
  return std::unique_ptr<ModelGraph>(
      std::make_unique<EncDecGraph>(std::move(model), batch, src_len, std::move(src), std::move(forced)));
}

Result<std::unique_ptr<ModelGraph>> build_encoder_decoder_graph(const jobs::JobSpec& spec, Precision precision,
                                                                const ExecContext& ctx) {
  AM_ASSIGN_OR_RETURN(EncDecConfig config, enc_dec_config_from_json(spec.model_config, "encoder-decoder"));
  const FormatPlan formats = format_plan_for(precision);
  // model_config "weights_path" names a T5-family or BART checkpoint; without it, seeded weights.
  AM_ASSIGN_OR_RETURN(std::optional<std::string> checkpoint, checkpoint_path_from(spec.model_config, "encoder-decoder"));
  if (!checkpoint) {
    AM_ASSIGN_OR_RETURN(EncDecModel model, EncDecModel::create_synthetic(config, formats, spec.seed, ctx));
    return make_enc_dec_graph(std::move(model), spec);
  }
  if (!config.bart) {
    AM_ASSIGN_OR_RETURN(EncDecModel model, load_t5_checkpoint(*checkpoint, config, formats, ctx));
    return make_enc_dec_graph(std::move(model), spec);
  }
  AM_ASSIGN_OR_RETURN(Checkpoint file, Checkpoint::open(*checkpoint));
  AM_ASSIGN_OR_RETURN(EncDecModel model, load_bart_checkpoint(file, config, formats, ctx));
  return make_enc_dec_graph(std::move(model), spec);
}

}  // namespace am::kernels
