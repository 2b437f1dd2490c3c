// BERT checkpoints (HF BertModel names) to and from EncoderModel.
#include <string>
#include <utility>
#include <vector>

#include "kernels/weights/checkpoint_names.h"
#include "kernels/models/encoder_only_checkpoint.h"
#include "kernels/weights/safetensors_writer.h"

namespace am::kernels {
namespace {

constexpr const char* kPrefix = "bert.";

// A BertModel name with and without the "bert." prefix (task checkpoints nest the encoder under
// it, bare BertModel exports do not), or under the caller's `body` prefix (DPR's
// "question_encoder.bert_model.", RAG's "rag.question_encoder.question_encoder.bert_model.").
std::vector<std::string> spellings(const std::string& name, const std::string& body) {
  if (!body.empty()) return {body + name};
  return {kPrefix + name, name};
}

// LayerNorm parameters: current names (weight/bias) and the TF-era ones (gamma/beta).
std::vector<std::string> norm_spellings(const std::string& base, bool gamma, const std::string& body) {
  std::vector<std::string> out = spellings(base + (gamma ? ".weight" : ".bias"), body);
  for (std::string& s : spellings(base + (gamma ? ".gamma" : ".beta"), body)) out.push_back(std::move(s));
  return out;
}

std::string layer_base(int64_t i) { return "encoder.layer." + std::to_string(i) + "."; }

}  // namespace

Result<EncoderModel> load_bert_checkpoint(const Checkpoint& file, const EncoderConfig& c, const FormatPlan& format,
                                          const ExecContext& ctx, const std::string& body) {
  auto spellings = [&](const std::string& name) { return am::kernels::spellings(name, body); };
  auto norm_spellings = [&](const std::string& base, bool gamma) {
    return am::kernels::norm_spellings(base, gamma, body);
  };
  const int64_t h = c.hidden, inter = c.intermediate;
  EncoderTensors t;
  AM_ASSIGN_OR_RETURN(t.word_embeddings,
                      read_first_of(file, spellings("embeddings.word_embeddings.weight"), Shape{c.vocab, h}));
  AM_ASSIGN_OR_RETURN(t.position_embeddings, read_first_of(file, spellings("embeddings.position_embeddings.weight"),
                                                           Shape{c.max_positions, h}));
  AM_ASSIGN_OR_RETURN(t.token_type_embeddings, read_first_of(file, spellings("embeddings.token_type_embeddings.weight"),
                                                             Shape{c.type_vocab, h}));
  AM_ASSIGN_OR_RETURN(t.embedding_norm_gamma, read_first_of(file, norm_spellings("embeddings.LayerNorm", true), Shape{h}));
  AM_ASSIGN_OR_RETURN(t.embedding_norm_beta, read_first_of(file, norm_spellings("embeddings.LayerNorm", false), Shape{h}));
  for (int64_t i = 0; i < c.layers; ++i) {
    const std::string b = layer_base(i);
    EncoderTensors::Layer l;
    auto linear = [&](const std::string& name, int64_t in, int64_t out, Tensor& w, Tensor& bias) -> Status {
      AM_ASSIGN_OR_RETURN(w, read_first_of(file, spellings(b + name + ".weight"), Shape{out, in}));
      AM_ASSIGN_OR_RETURN(bias, read_first_of(file, spellings(b + name + ".bias"), Shape{out}));
      return Status::Ok();
    };
    auto norm = [&](const std::string& name, Tensor& g, Tensor& beta) -> Status {
      AM_ASSIGN_OR_RETURN(g, read_first_of(file, norm_spellings(b + name, true), Shape{h}));
      AM_ASSIGN_OR_RETURN(beta, read_first_of(file, norm_spellings(b + name, false), Shape{h}));
      return Status::Ok();
    };
    AM_RETURN_IF_ERROR(linear("attention.self.query", h, h, l.query_w, l.query_b));
    AM_RETURN_IF_ERROR(linear("attention.self.key", h, h, l.key_w, l.key_b));
    AM_RETURN_IF_ERROR(linear("attention.self.value", h, h, l.value_w, l.value_b));
    AM_RETURN_IF_ERROR(linear("attention.output.dense", h, h, l.output_w, l.output_b));
    AM_RETURN_IF_ERROR(norm("attention.output.LayerNorm", l.attention_norm_gamma, l.attention_norm_beta));
    AM_RETURN_IF_ERROR(linear("intermediate.dense", h, inter, l.ffn_up_w, l.ffn_up_b));
    AM_RETURN_IF_ERROR(linear("output.dense", inter, h, l.ffn_down_w, l.ffn_down_b));
    AM_RETURN_IF_ERROR(norm("output.LayerNorm", l.ffn_norm_gamma, l.ffn_norm_beta));
    t.layers.push_back(std::move(l));
  }
  return EncoderModel::from_tensors(c, format, std::move(t), ctx);
}

Result<EncoderModel> load_bert_checkpoint(const std::string& path, const EncoderConfig& config, const FormatPlan& format,
                                          const ExecContext& ctx) {
  AM_ASSIGN_OR_RETURN(Checkpoint file, Checkpoint::open(path));
  return load_bert_checkpoint(file, config, format, ctx, "");
}

Status save_bert_checkpoint(const EncoderModel& model, const std::string& path, SafetensorsDtype dtype) {
  AM_ASSIGN_OR_RETURN(EncoderTensors t, model.tensors());
  std::vector<SafetensorsTensorOut> out;
  auto add = [&](const std::string& name, const Tensor& x) {
    std::vector<int64_t> shape;
    for (int d = 0; d < x.shape().rank(); ++d) shape.push_back(x.shape()[d]);
    out.push_back({kPrefix + name, dtype, std::move(shape), x.data()});
  };
  add("embeddings.word_embeddings.weight", t.word_embeddings);
  add("embeddings.position_embeddings.weight", t.position_embeddings);
  add("embeddings.token_type_embeddings.weight", t.token_type_embeddings);
  add("embeddings.LayerNorm.weight", t.embedding_norm_gamma);
  add("embeddings.LayerNorm.bias", t.embedding_norm_beta);
  for (std::size_t i = 0; i < t.layers.size(); ++i) {
    const std::string b = layer_base(static_cast<int64_t>(i));
    const EncoderTensors::Layer& l = t.layers[i];
    add(b + "attention.self.query.weight", l.query_w);
    add(b + "attention.self.query.bias", l.query_b);
    add(b + "attention.self.key.weight", l.key_w);
    add(b + "attention.self.key.bias", l.key_b);
    add(b + "attention.self.value.weight", l.value_w);
    add(b + "attention.self.value.bias", l.value_b);
    add(b + "attention.output.dense.weight", l.output_w);
    add(b + "attention.output.dense.bias", l.output_b);
    add(b + "attention.output.LayerNorm.weight", l.attention_norm_gamma);
    add(b + "attention.output.LayerNorm.bias", l.attention_norm_beta);
    add(b + "intermediate.dense.weight", l.ffn_up_w);
    add(b + "intermediate.dense.bias", l.ffn_up_b);
    add(b + "output.dense.weight", l.ffn_down_w);
    add(b + "output.dense.bias", l.ffn_down_b);
    add(b + "output.LayerNorm.weight", l.ffn_norm_gamma);
    add(b + "output.LayerNorm.bias", l.ffn_norm_beta);
  }
  return write_safetensors(path, out, {{"format", "pt"}});
}

}  // namespace am::kernels
