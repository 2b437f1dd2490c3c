// T5-family checkpoints (HF T5ForConditionalGeneration names) to EncDecModel.
#include "kernels/models/encoder_decoder_checkpoint.h"

#include <cmath>
#include <string>
#include <utility>

#include "kernels/weights/linear_tensors.h"

namespace am::kernels {
namespace {

// One T5 stack ("encoder" or "decoder"): attention in layer.0, cross-attention in layer.1 of the
// decoder, the feed-forward in the last layer.
Result<StackTensors> read_t5_stack(const SafetensorsFile& file, const StackConfig& s, const std::string& side) {
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

}  // namespace

Result<EncDecModel> load_t5_checkpoint(const SafetensorsFile& file, const EncDecConfig& c, const FormatPlan& f,
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
  AM_ASSIGN_OR_RETURN(SafetensorsFile file, SafetensorsFile::open(path));
  return load_t5_checkpoint(file, config, formats, ctx);
}

}  // namespace am::kernels
