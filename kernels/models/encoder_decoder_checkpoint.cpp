// T5-family (HF T5ForConditionalGeneration names) and BART (BartForConditionalGeneration, as
// RAG's generator) checkpoints to EncDecModel.
#include "kernels/models/encoder_decoder_checkpoint.h"

#include <cmath>
#include <string>
#include <utility>

#include "kernels/weights/linear_tensors.h"

namespace am::kernels {
namespace {

// One T5 stack ("encoder" or "decoder"): attention in layer.0, cross-attention in layer.1 of the
// decoder, the feed-forward in the last layer.
Result<StackTensors> read_t5_stack(const Checkpoint& file, const StackConfig& s, const std::string& side) {
  const int64_t h = s.hidden, inner = s.heads * s.head_dim;
  StackTensors t;
  AM_ASSIGN_OR_RETURN(t.rel_table, file.read_f32(side + ".block.0.layer.0.SelfAttention.relative_attention_bias.weight",
                                                 Shape{s.rel_buckets, s.heads}));
  for (int64_t i = 0; i < s.layers; ++i) {
    const std::string b = side + ".block." + std::to_string(i) + ".layer.";
    StackLayerTensors l;
    auto w = [&](const std::string& name, int64_t in, int64_t out, Tensor& dst) -> Status {
      AM_ASSIGN_OR_RETURN(dst, file.read_f32(b + name + ".weight", Shape{out, in}));
      return Status::Ok();
    };
    auto norm = [&](const std::string& name, Tensor& dst) -> Status {
      AM_ASSIGN_OR_RETURN(dst, file.read_f32(b + name + ".layer_norm.weight", Shape{h}));
      return Status::Ok();
    };
    AM_RETURN_IF_ERROR(norm("0", l.norm_self_g));
    AM_RETURN_IF_ERROR(w("0.SelfAttention.q", h, inner, l.q_w));
    AM_RETURN_IF_ERROR(w("0.SelfAttention.k", h, inner, l.k_w));
    AM_RETURN_IF_ERROR(w("0.SelfAttention.v", h, inner, l.v_w));
    AM_RETURN_IF_ERROR(w("0.SelfAttention.o", inner, h, l.o_w));
    std::string ffn = "1";
    if (s.cross) {
      AM_RETURN_IF_ERROR(norm("1", l.norm_cross_g));
      AM_RETURN_IF_ERROR(w("1.EncDecAttention.q", h, inner, l.cross_q_w));
      AM_RETURN_IF_ERROR(w("1.EncDecAttention.k", h, inner, l.cross_k_w));
      AM_RETURN_IF_ERROR(w("1.EncDecAttention.v", h, inner, l.cross_v_w));
      AM_RETURN_IF_ERROR(w("1.EncDecAttention.o", inner, h, l.cross_o_w));
      ffn = "2";
    }
    AM_RETURN_IF_ERROR(norm(ffn, l.norm_ffn_g));
    if (s.ffn == FfnKind::kGated) {
      // T5 v1.1: wo(act(wi_0 x) * wi_1 x).
      AM_RETURN_IF_ERROR(w(ffn + ".DenseReluDense.wi_0", h, s.intermediate, l.gate_w));
      AM_RETURN_IF_ERROR(w(ffn + ".DenseReluDense.wi_1", h, s.intermediate, l.up_w));
    } else {
      AM_RETURN_IF_ERROR(w(ffn + ".DenseReluDense.wi", h, s.intermediate, l.up_w));
    }
    AM_RETURN_IF_ERROR(w(ffn + ".DenseReluDense.wo", s.intermediate, h, l.down_w));
    t.layers.push_back(std::move(l));
  }
  AM_ASSIGN_OR_RETURN(t.final_g, file.read_f32(side + ".final_layer_norm.weight", Shape{h}));
  return t;
}

Status check_t5_style(const EncDecConfig& c) {
  if (c.bart || c.encoder.experts > 0 || c.decoder.experts > 0) {
    return unsupported(c.encoder.family + ": only T5-style checkpoints are read (not BART or Switch Transformers)");
  }
  return Status::Ok();
}

// One BART stack under `side` ("model.encoder" / "model.decoder", after the model's prefix):
// layers.N.{self_attn.{q,k,v,out}_proj, self_attn_layer_norm, encoder_attn.* and
// encoder_attn_layer_norm (decoder), fc1, fc2, final_layer_norm}, all with biases.
Result<StackTensors> read_bart_stack(const Checkpoint& file, const StackConfig& s, const std::string& side) {
  const int64_t h = s.hidden;
  StackTensors t;
  for (int64_t i = 0; i < s.layers; ++i) {
    const std::string b = side + ".layers." + std::to_string(i) + ".";
    StackLayerTensors l;
    auto read = [&](const std::string& name, const Shape& shape, Tensor& dst) -> Status {
      AM_ASSIGN_OR_RETURN(dst, file.read_f32(b + name, shape));
      return Status::Ok();
    };
    auto linear = [&](const std::string& name, int64_t in, int64_t out, Tensor& w, Tensor& bias) -> Status {
      AM_RETURN_IF_ERROR(read(name + ".weight", Shape{out, in}, w));
      return read(name + ".bias", Shape{out}, bias);
    };
    auto norm = [&](const std::string& name, Tensor& g, Tensor& bias) -> Status {
      AM_RETURN_IF_ERROR(read(name + ".weight", Shape{h}, g));
      return read(name + ".bias", Shape{h}, bias);
    };
    AM_RETURN_IF_ERROR(linear("self_attn.q_proj", h, h, l.q_w, l.q_b));
    AM_RETURN_IF_ERROR(linear("self_attn.k_proj", h, h, l.k_w, l.k_b));
    AM_RETURN_IF_ERROR(linear("self_attn.v_proj", h, h, l.v_w, l.v_b));
    AM_RETURN_IF_ERROR(linear("self_attn.out_proj", h, h, l.o_w, l.o_b));
    AM_RETURN_IF_ERROR(norm("self_attn_layer_norm", l.norm_self_g, l.norm_self_b));
    if (s.cross) {
      AM_RETURN_IF_ERROR(linear("encoder_attn.q_proj", h, h, l.cross_q_w, l.cross_q_b));
      AM_RETURN_IF_ERROR(linear("encoder_attn.k_proj", h, h, l.cross_k_w, l.cross_k_b));
      AM_RETURN_IF_ERROR(linear("encoder_attn.v_proj", h, h, l.cross_v_w, l.cross_v_b));
      AM_RETURN_IF_ERROR(linear("encoder_attn.out_proj", h, h, l.cross_o_w, l.cross_o_b));
      AM_RETURN_IF_ERROR(norm("encoder_attn_layer_norm", l.norm_cross_g, l.norm_cross_b));
    }
    AM_RETURN_IF_ERROR(linear("fc1", h, s.intermediate, l.up_w, l.up_b));
    AM_RETURN_IF_ERROR(linear("fc2", s.intermediate, h, l.down_w, l.down_b));
    AM_RETURN_IF_ERROR(norm("final_layer_norm", l.norm_ffn_g, l.norm_ffn_b));
    t.layers.push_back(std::move(l));
  }
  return t;
}

}  // namespace

Result<EncDecModel> load_bart_checkpoint(const Checkpoint& file, const EncDecConfig& c, const FormatPlan& f,
                                         const ExecContext& ctx, const std::string& prefix) {
  const std::string& family = c.encoder.family;
  if (!c.bart || c.encoder.experts > 0) return unsupported(family + ": BART checkpoints need a bart-style config");
  AM_RETURN_IF_ERROR(check_weight_budget(family, EncDecModel::estimate_bytes(c, f)));
  const int64_t h = c.encoder.hidden, positions = c.max_positions + kBartPositionOffset;
  const std::string p = prefix + "model.";
  const std::string shared = file.contains(p + "shared.weight") ? p + "shared.weight" : p + "encoder.embed_tokens.weight";
  EncDecModel m;
  m.config = c;
  AM_ASSIGN_OR_RETURN(m.encoder_embedding.tokens, file.read_f32(shared, Shape{c.vocab, h}));
  m.decoder_embedding.tokens = m.encoder_embedding.tokens.clone();
  for (const auto& [side, e] : {std::pair<std::string, TextEmbedding*>{"encoder", &m.encoder_embedding},
                                std::pair<std::string, TextEmbedding*>{"decoder", &m.decoder_embedding}}) {
    AM_ASSIGN_OR_RETURN(e->positions, file.read_f32(p + side + ".embed_positions.weight", Shape{positions, h}));
    e->position_offset = kBartPositionOffset;
    AM_ASSIGN_OR_RETURN(e->norm_g, file.read_f32(p + side + ".layernorm_embedding.weight", Shape{h}));
    AM_ASSIGN_OR_RETURN(e->norm_b, file.read_f32(p + side + ".layernorm_embedding.bias", Shape{h}));
    e->eps = c.encoder.eps;
  }
  AM_ASSIGN_OR_RETURN(StackTensors enc, read_bart_stack(file, c.encoder, p + "encoder"));
  AM_ASSIGN_OR_RETURN(StackTensors dec, read_bart_stack(file, c.decoder, p + "decoder"));
  AM_ASSIGN_OR_RETURN(m.encoder, TransformerStack::from_tensors(c.encoder, f, std::move(enc), ctx));
  AM_ASSIGN_OR_RETURN(m.decoder, TransformerStack::from_tensors(c.decoder, f, std::move(dec), ctx));
  // BART's head is tied to the shared table (or its own lm_head.weight when untied), plus the
  // final_logits_bias buffer every checkpoint stores.
  Tensor head;
  if (c.tie_embeddings) {
    head = m.encoder_embedding.tokens.clone();
  } else {
    AM_ASSIGN_OR_RETURN(head, file.read_f32(prefix + "lm_head.weight", Shape{c.vocab, h}));
  }
  AM_ASSIGN_OR_RETURN(Tensor bias, file.read_f32(prefix + "final_logits_bias", Shape{1, c.vocab}));
  bias.reshape(Shape{c.vocab});
  AM_ASSIGN_OR_RETURN(m.head, linear_from_tensors(family + " weights", "output head", std::move(head), std::move(bias),
                                                  h, c.vocab, true, f.output, ctx));
  return m;
}

Result<EncDecModel> load_t5_checkpoint(const Checkpoint& file, const EncDecConfig& c, const FormatPlan& f,
                                       const ExecContext& ctx) {
  const std::string& family = c.encoder.family;
  AM_RETURN_IF_ERROR(check_t5_style(c));
  AM_RETURN_IF_ERROR(check_weight_budget(family, EncDecModel::estimate_bytes(c, f)));
  const int64_t h = c.encoder.hidden;
  const std::string shared = file.contains("shared.weight") ? "shared.weight" : "encoder.embed_tokens.weight";
  EncDecModel m;
  m.config = c;
  AM_ASSIGN_OR_RETURN(m.encoder_embedding.tokens, file.read_f32(shared, Shape{c.vocab, h}));
  m.decoder_embedding.tokens = m.encoder_embedding.tokens.clone();
  AM_ASSIGN_OR_RETURN(StackTensors enc, read_t5_stack(file, c.encoder, "encoder"));
  AM_ASSIGN_OR_RETURN(StackTensors dec, read_t5_stack(file, c.decoder, "decoder"));
  AM_ASSIGN_OR_RETURN(m.encoder, TransformerStack::from_tensors(c.encoder, f, std::move(enc), ctx));
  AM_ASSIGN_OR_RETURN(m.decoder, TransformerStack::from_tensors(c.decoder, f, std::move(dec), ctx));
  if (c.tie_embeddings) {
    // The same fold of T5's d_model^-0.5 rescale as create_synthetic().
    m.head = tied_head(m.encoder_embedding.tokens, 1.0f / std::sqrt(static_cast<float>(h)), f.output, ctx);
  } else {
    AM_ASSIGN_OR_RETURN(Tensor head, file.read_f32("lm_head.weight", Shape{c.vocab, h}));
    AM_ASSIGN_OR_RETURN(m.head, linear_from_tensors(family + " weights", "output head", std::move(head), Tensor(), h,
                                                    c.vocab, false, f.output, ctx));
  }
  return m;
}

Result<EncDecModel> load_t5_checkpoint(const std::string& path, const EncDecConfig& config, const FormatPlan& formats,
                                       const ExecContext& ctx) {
  AM_RETURN_IF_ERROR(check_t5_style(config));  // before the file: the refusal names the reason
  AM_ASSIGN_OR_RETURN(Checkpoint file, Checkpoint::open(path));
  return load_t5_checkpoint(file, config, formats, ctx);
}

}  // namespace am::kernels
