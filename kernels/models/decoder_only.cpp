#include "kernels/models/decoder_only.h"

#include <chrono>
#include <limits>
#include <optional>
#include <cmath>
#include <utility>

#include "kernels/models/families.h"
#include "kernels/models/decoder_only_checkpoint.h"

namespace am::kernels {
namespace {

constexpr uint64_t kWeightStream = 0x4445434Full;   // "DECO"
constexpr uint64_t kPromptStream = 1;
constexpr uint64_t kForcedStream = 2;
constexpr float kInitStd = 0.02f;

class DecoderLmGraph final : public ModelGraph {
 public:
  DecoderLmGraph(DecoderLm model, int64_t batch, int64_t prompt_len, std::vector<int32_t> prompt,
                 std::vector<int32_t> forced)
      : m_(std::move(model)), batch_(batch), prompt_len_(prompt_len), prompt_(std::move(prompt)),
        forced_(std::move(forced)) {}

  std::vector<std::pair<Op, WeightFormat>> required_ops() const override { return m_.required_ops(); }
  std::size_t weights_bytes() const override { return m_.weights_bytes(); }
  int64_t samples_per_run() const override { return batch_; }
  int64_t tokens_per_run() const override { return batch_ * (prompt_len_ + m_.config.decode_steps); }

  Result<GraphOutput> forward(Backend& be) const override {
    const auto started = std::chrono::steady_clock::now();
    const int64_t steps = m_.config.decode_steps;
    StackCache cache = m_.stack.make_cache(be, batch_, prompt_len_ + steps);
    GraphOutput out;
    out.logits = true;
    out.output = Tensor(Shape{batch_ * (steps + 1), m_.config.vocab});
    AM_RETURN_IF_ERROR(generate_teacher_forced(be, m_.stack, m_.embedding, m_.head, batch_, prompt_, prompt_len_,
                                               forced_, steps, cache, started, out.output, out.phases));
    return out;
  }

 private:
  DecoderLm m_;
  int64_t batch_, prompt_len_;
  std::vector<int32_t> prompt_, forced_;
};

}  // namespace

Result<DecoderLmConfig> decoder_lm_config_from_json(const nlohmann::json& doc, const std::string& family) {
  if (!doc.is_object()) return invalid_argument(family + " config must be a JSON object");
  ConfigReader cfg(doc, family);
  DecoderLmConfig d;
  StackConfig& s = d.stack;
  s.family = family;
  AM_ASSIGN_OR_RETURN(std::string style, cfg.text("style", "llama"));
  if (style != "llama" && style != "gpt2") return cfg.error("'style' must be \"llama\" or \"gpt2\", not \"" + style + "\"");
  const bool gpt2 = style == "gpt2";
  AM_ASSIGN_OR_RETURN(s.layers, cfg.dim("layers"));
  AM_ASSIGN_OR_RETURN(s.hidden, cfg.dim("hidden"));
  AM_ASSIGN_OR_RETURN(s.heads, cfg.dim("heads"));
  AM_ASSIGN_OR_RETURN(s.intermediate, cfg.dim("intermediate"));
  AM_ASSIGN_OR_RETURN(d.vocab, cfg.dim("vocab"));
  AM_ASSIGN_OR_RETURN(d.max_positions, cfg.dim("max_positions"));
  AM_ASSIGN_OR_RETURN(s.kv_heads, cfg.dim("kv_heads", s.heads));
  if (!cfg.has("head_dim") && s.hidden % s.heads != 0) {
    return cfg.error("hidden " + std::to_string(s.hidden) + " is not a multiple of heads " + std::to_string(s.heads));
  }
  AM_ASSIGN_OR_RETURN(s.head_dim, cfg.dim("head_dim", s.hidden / s.heads));
  if (s.heads % s.kv_heads != 0) {
    return cfg.error("kv_heads " + std::to_string(s.kv_heads) + " does not divide heads " + std::to_string(s.heads));
  }
  if (d.vocab > std::numeric_limits<int32_t>::max()) return cfg.error("'vocab' does not fit 32-bit token ids");
  AM_ASSIGN_OR_RETURN(double eps, cfg.number("norm_eps", gpt2 ? 1e-5 : 1e-6, 1e-12, 1.0));
  s.eps = static_cast<float>(eps);
  AM_ASSIGN_OR_RETURN(std::string act, cfg.text("activation", gpt2 ? "gelu_new" : "silu"));
  AM_ASSIGN_OR_RETURN(s.activation, activation_from_name(act));
  AM_ASSIGN_OR_RETURN(d.tie_embeddings, cfg.flag("tie_embeddings", gpt2));
  AM_ASSIGN_OR_RETURN(d.decode_steps, decode_steps_from(cfg));
  if (cfg.has("sliding_window")) {
    AM_ASSIGN_OR_RETURN(d.sliding_window, cfg.dim("sliding_window"));
  }
  s.causal = true;
  s.pre_norm = true;
  s.final_norm = true;
  if (gpt2) {
    s.norm = NormKind::kLayer;
    s.ffn = FfnKind::kMlp;
    s.q_bias = s.k_bias = s.v_bias = s.o_bias = s.ffn_bias = true;
    s.positions = PositionKind::kNone;
    d.learned_positions = true;
    // GPT-2 scales the projections that write into the residual stream by 1/sqrt(2 * layers).
    s.init.o = s.init.ffn_out = kInitStd / std::sqrt(2.0f * static_cast<float>(s.layers));
  } else {
    s.norm = NormKind::kRms;
    s.ffn = FfnKind::kGated;
    AM_ASSIGN_OR_RETURN(bool qkv_bias, cfg.flag("attention_bias", false));
    s.q_bias = s.k_bias = s.v_bias = qkv_bias;
    s.positions = PositionKind::kRope;
    AM_ASSIGN_OR_RETURN(double theta, cfg.number("rope_theta", 10000.0, 1.0 + 1e-6, 1e12));
    s.rope.theta = static_cast<float>(theta);
    AM_ASSIGN_OR_RETURN(std::string layout, cfg.text("rope_layout", "neox"));
    AM_ASSIGN_OR_RETURN(s.rope.layout, rope_layout_from_name(layout));
    AM_ASSIGN_OR_RETURN(s.rope.rotary_dim, cfg.dim("rotary_dim", s.head_dim));
    if (s.rope.rotary_dim > s.head_dim || s.rope.rotary_dim % 2 != 0) {
      return cfg.error("'rotary_dim' must be even and at most head_dim " + std::to_string(s.head_dim));
    }
  }
  if (cfg.has("experts")) {
    AM_ASSIGN_OR_RETURN(s.experts, cfg.dim("experts"));
    AM_ASSIGN_OR_RETURN(s.experts_per_token, cfg.dim("experts_per_token", 2));
    if (s.experts_per_token > s.experts) return cfg.error("'experts_per_token' exceeds 'experts'");
    s.moe_every = 1;
    s.router_renormalize = true;
  }
  return d;
}

std::size_t DecoderLm::estimate_bytes(const DecoderLmConfig& c, const FormatPlan& f) {
  const int64_t h = c.stack.hidden;
  std::size_t total = static_cast<std::size_t>(c.vocab * h) * sizeof(float);
  if (c.learned_positions) total += static_cast<std::size_t>(c.max_positions * h) * sizeof(float);
  total += linear_bytes(h, c.vocab, f.output, false);
  return total + TransformerStack::estimate_bytes(c.stack, f);
}

Result<DecoderLm> DecoderLm::create_synthetic(const DecoderLmConfig& c, const FormatPlan& f, uint64_t seed,
                                              const ExecContext& ctx) {
  AM_RETURN_IF_ERROR(check_weight_budget(c.stack.family, estimate_bytes(c, f)));
  DecoderLm m;
  m.config = c;
  SeededWeights src(seed, kWeightStream, ctx);
  const int64_t h = c.stack.hidden;
  m.embedding.tokens = src.normal(Shape{c.vocab, h}, 0.0f, c.embed_std);
  if (c.learned_positions) m.embedding.positions = src.normal(Shape{c.max_positions, h}, 0.0f, c.embed_std);
  AM_ASSIGN_OR_RETURN(m.stack, TransformerStack::create(c.stack, f, src));
  if (c.tie_embeddings) {
    m.head = tied_head(m.embedding.tokens, 1.0f, f.output, ctx);
  } else {
    m.head = src.linear(h, c.vocab, kInitStd, false, 0.0f, f.output);
  }
  return m;
}

std::vector<std::pair<Op, WeightFormat>> DecoderLm::required_ops() const {
  std::vector<std::pair<Op, WeightFormat>> ops;
  embedding.add_required_ops(ops);
  stack.add_required_ops(ops);
  add_op(ops, Op::kLinear, head.format());
  add_op(ops, Op::kIndexRows, WeightFormat::kF32);
  return ops;
}

Result<std::unique_ptr<ModelGraph>> make_decoder_lm_graph(DecoderLm model, const jobs::JobSpec& spec) {
  const int64_t batch = spec.batch, prompt_len = spec.seq_len, steps = model.config.decode_steps;
  if (batch < 1 || prompt_len < 1) return invalid_argument("decoder: batch and seq_len must be positive");
  if (model.config.learned_positions && prompt_len + steps > model.config.max_positions) {
    return invalid_argument(model.config.stack.family + ": seq_len " + std::to_string(prompt_len) + " + decode_steps " +
                            std::to_string(steps) + " exceeds max_positions " + std::to_string(model.config.max_positions));
  }
  if (model.config.sliding_window > 0 && prompt_len + steps > model.config.sliding_window) {
    return unsupported(model.config.stack.family + ": seq_len + decode_steps = " + std::to_string(prompt_len + steps) +
                       " exceeds 'sliding_window' " + std::to_string(model.config.sliding_window) +
                       " (sliding-window attention is not modelled)");
  }
  std::vector<int32_t> prompt = seeded_token_ids(batch * prompt_len, model.config.vocab, spec.seed, kPromptStream);
  std::vector<int32_t> forced = seeded_token_ids(batch * steps, model.config.vocab, spec.seed, kForcedStream);
  return std::unique_ptr<ModelGraph>(
      std::make_unique<DecoderLmGraph>(std::move(model), batch, prompt_len, std::move(prompt), std::move(forced)));
}

Result<std::unique_ptr<ModelGraph>> build_decoder_only_graph(const jobs::JobSpec& spec, Precision precision,
                                                             const ExecContext& ctx) {
  AM_ASSIGN_OR_RETURN(DecoderLmConfig config, decoder_lm_config_from_json(spec.model_config, "decoder-only"));
  const FormatPlan formats = format_plan_for(precision);
  // model_config "weights_path" names a LLaMA-family safetensors checkpoint; without it, seeded weights.
  AM_ASSIGN_OR_RETURN(std::optional<std::string> checkpoint, checkpoint_path_from(spec.model_config, "decoder-only"));
  AM_ASSIGN_OR_RETURN(DecoderLm model, checkpoint ? load_llama_checkpoint(*checkpoint, config, formats, ctx)
                                                  : DecoderLm::create_synthetic(config, formats, spec.seed, ctx));
  return make_decoder_lm_graph(std::move(model), spec);
}

}  // namespace am::kernels
