// LLaMA-family checkpoints (HF LlamaForCausalLM names) to and from DecoderLm.
#include <string>
#include <utility>
#include <vector>

#include "kernels/weights/checkpoint_names.h"
#include "kernels/models/decoder_only_checkpoint.h"
#include "kernels/weights/safetensors_writer.h"

namespace am::kernels {
namespace {

constexpr const char* kHeadName = "lm_head.weight";
constexpr const char* kMoeBlock = "block_sparse_moe.";  // Mixtral's feed-forward, under model.layers.N.

std::string layer_base(int64_t i) { return "model.layers." + std::to_string(i) + "."; }

Status check_llama_style(const DecoderLmConfig& c) {
  const StackConfig& s = c.stack;
  if (s.norm != NormKind::kRms || s.ffn != FfnKind::kGated || c.learned_positions || s.cross ||
      s.positions != PositionKind::kRope || s.o_bias || s.ffn_bias || (s.experts > 0 && s.moe_every != 1)) {
    return unsupported(s.family +
                       ": LLaMA-family checkpoints need a llama-style config (RMSNorm, gated feed-forward, RoPE, no "
                       "learned positions, output or feed-forward biases; experts in every layer, as Mixtral)");
  }
  return Status::Ok();
}

}  // namespace

Result<DecoderLm> load_llama_checkpoint(const Checkpoint& file, const DecoderLmConfig& c, const FormatPlan& f,
                                        const ExecContext& ctx, const LlamaNames& names) {
  AM_RETURN_IF_ERROR(check_llama_style(c));
  // The same memory cap as seeded weights: a checkpoint too big for the plan is refused up front.
  AM_RETURN_IF_ERROR(check_weight_budget(c.stack.family, DecoderLm::estimate_bytes(c, f)));
  const StackConfig& s = c.stack;
  const int64_t h = s.hidden, q_cols = s.heads * s.head_dim, kv_cols = s.kv_heads * s.head_dim;
  DecoderLmTensors t;
  const std::string& body = names.body;
  AM_ASSIGN_OR_RETURN(t.tokens, file.read_f32(body + "embed_tokens.weight", Shape{c.vocab, h}));
  for (int64_t i = 0; i < s.layers; ++i) {
    const std::string b = body + "layers." + std::to_string(i) + ".";
    StackLayerTensors l;
    auto proj = [&](const std::string& name, int64_t in, int64_t out, bool bias, Tensor& w, Tensor& bt) -> Status {
      AM_ASSIGN_OR_RETURN(w, file.read_f32(b + name + ".weight", Shape{out, in}));
      if (bias) {
        AM_ASSIGN_OR_RETURN(bt, file.read_f32(b + name + ".bias", Shape{out}));
      }
      return Status::Ok();
    };
    AM_ASSIGN_OR_RETURN(l.norm_self_g, file.read_f32(b + "input_layernorm.weight", Shape{h}));
    AM_RETURN_IF_ERROR(proj("self_attn.q_proj", h, q_cols, s.q_bias, l.q_w, l.q_b));
    AM_RETURN_IF_ERROR(proj("self_attn.k_proj", h, kv_cols, s.k_bias, l.k_w, l.k_b));
    AM_RETURN_IF_ERROR(proj("self_attn.v_proj", h, kv_cols, s.v_bias, l.v_w, l.v_b));
    AM_RETURN_IF_ERROR(proj("self_attn.o_proj", q_cols, h, false, l.o_w, l.o_b));
    AM_ASSIGN_OR_RETURN(l.norm_ffn_g, file.read_f32(b + "post_attention_layernorm.weight", Shape{h}));
    if (s.experts > 0) {
      // Mixtral: w1 = gate, w3 = up, w2 = down (HF MixtralBlockSparseTop2MLP).
      Tensor no_bias;
      AM_RETURN_IF_ERROR(proj(kMoeBlock + std::string("gate"), h, s.experts, false, l.router_w, no_bias));
      l.experts.resize(static_cast<std::size_t>(s.experts));
      for (int64_t e = 0; e < s.experts; ++e) {
        const std::string x = kMoeBlock + std::string("experts.") + std::to_string(e) + ".";
        StackFfnTensors& ft = l.experts[static_cast<std::size_t>(e)];
        AM_RETURN_IF_ERROR(proj(x + "w1", h, s.intermediate, false, ft.gate_w, ft.gate_b));
        AM_RETURN_IF_ERROR(proj(x + "w3", h, s.intermediate, false, ft.up_w, ft.up_b));
        AM_RETURN_IF_ERROR(proj(x + "w2", s.intermediate, h, false, ft.down_w, ft.down_b));
      }
    } else {
      AM_RETURN_IF_ERROR(proj("mlp.gate_proj", h, s.intermediate, false, l.gate_w, l.gate_b));
      AM_RETURN_IF_ERROR(proj("mlp.up_proj", h, s.intermediate, false, l.up_w, l.up_b));
      AM_RETURN_IF_ERROR(proj("mlp.down_proj", s.intermediate, h, false, l.down_w, l.down_b));
    }
    t.stack.layers.push_back(std::move(l));
  }
  AM_ASSIGN_OR_RETURN(t.stack.final_g, file.read_f32(body + "norm.weight", Shape{h}));
  // The config decides the head, as transformers' tie_word_embeddings does: a tied model ignores
  // a stored lm_head.weight (tying replaces it on load), an untied one needs it.
  if (!c.tie_embeddings) {
    AM_ASSIGN_OR_RETURN(t.head, file.read_f32(names.head, Shape{c.vocab, h}));
  }
  return DecoderLm::from_tensors(c, f, std::move(t), ctx);
}

Result<DecoderLm> load_llama_checkpoint(const std::string& path, const DecoderLmConfig& config,
                                        const FormatPlan& formats, const ExecContext& ctx) {
  AM_ASSIGN_OR_RETURN(Checkpoint file, Checkpoint::open(path));
  return load_llama_checkpoint(file, config, formats, ctx, LlamaNames{});
}

Status save_llama_checkpoint(const DecoderLm& model, const std::string& path, SafetensorsDtype dtype) {
  AM_RETURN_IF_ERROR(check_llama_style(model.config));
  AM_ASSIGN_OR_RETURN(DecoderLmTensors t, model.tensors());
  std::vector<SafetensorsTensorOut> out;
  auto add = [&](const std::string& name, const Tensor& x) {
    if (x.empty()) return;  // absent biases, a tied head
    std::vector<int64_t> shape;
    for (int d = 0; d < x.shape().rank(); ++d) shape.push_back(x.shape()[d]);
    out.push_back({name, dtype, std::move(shape), x.data()});
  };
  add("model.embed_tokens.weight", t.tokens);
  for (std::size_t i = 0; i < t.stack.layers.size(); ++i) {
    const std::string b = layer_base(static_cast<int64_t>(i));
    const StackLayerTensors& l = t.stack.layers[i];
    add(b + "input_layernorm.weight", l.norm_self_g);
    add(b + "self_attn.q_proj.weight", l.q_w);
    add(b + "self_attn.q_proj.bias", l.q_b);
    add(b + "self_attn.k_proj.weight", l.k_w);
    add(b + "self_attn.k_proj.bias", l.k_b);
    add(b + "self_attn.v_proj.weight", l.v_w);
    add(b + "self_attn.v_proj.bias", l.v_b);
    add(b + "self_attn.o_proj.weight", l.o_w);
    add(b + "post_attention_layernorm.weight", l.norm_ffn_g);
    add(b + "mlp.gate_proj.weight", l.gate_w);
    add(b + "mlp.up_proj.weight", l.up_w);
    add(b + "mlp.down_proj.weight", l.down_w);
    add(b + kMoeBlock + "gate.weight", l.router_w);
    for (std::size_t e = 0; e < l.experts.size(); ++e) {
      const std::string x = b + kMoeBlock + "experts." + std::to_string(e) + ".";
      add(x + "w1.weight", l.experts[e].gate_w);
      add(x + "w3.weight", l.experts[e].up_w);
      add(x + "w2.weight", l.experts[e].down_w);
    }
  }
  add("model.norm.weight", t.stack.final_g);
  add(kHeadName, t.head);
  return write_safetensors(path, out, {{"format", "pt"}});
}

}  // namespace am::kernels
