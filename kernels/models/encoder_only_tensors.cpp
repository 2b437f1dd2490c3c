// EncoderModel to and from f32 tensors (checkpoint import / export).
#include <string>
#include <utility>

#include "kernels/models/encoder_only.h"
#include "kernels/weights/linear_tensors.h"

namespace am::kernels {
namespace {

constexpr std::string_view kOwner = "encoder-only weights";

std::string layer_name(std::size_t i, const char* what) { return "layer " + std::to_string(i) + " " + what; }

}  // namespace

Result<EncoderModel> EncoderModel::from_tensors(const EncoderConfig& config, const FormatPlan& formats, EncoderTensors t,
                                                const ExecContext& ctx) {
  const int64_t h = config.hidden, inter = config.intermediate;
  AM_RETURN_IF_ERROR(check_tensor_shape(kOwner, "word embeddings", t.word_embeddings, Shape{config.vocab, h}));
  AM_RETURN_IF_ERROR(
      check_tensor_shape(kOwner, "position embeddings", t.position_embeddings, Shape{config.max_positions, h}));
  AM_RETURN_IF_ERROR(
      check_tensor_shape(kOwner, "token type embeddings", t.token_type_embeddings, Shape{config.type_vocab, h}));
  AM_RETURN_IF_ERROR(check_tensor_shape(kOwner, "embedding norm gamma", t.embedding_norm_gamma, Shape{h}));
  AM_RETURN_IF_ERROR(check_tensor_shape(kOwner, "embedding norm beta", t.embedding_norm_beta, Shape{h}));
  if (static_cast<int64_t>(t.layers.size()) != config.layers) {
    return invalid_argument(std::string(kOwner) + ": " + std::to_string(t.layers.size()) + " layers given, config has " +
                            std::to_string(config.layers));
  }
  EncoderModel m;
  m.config_ = config;
  m.formats_ = formats;
  AM_ASSIGN_OR_RETURN(m.activation_, activation_from_name(config.activation));
  m.word_embeddings_ = std::move(t.word_embeddings);
  m.position_embeddings_ = std::move(t.position_embeddings);
  m.token_type_embeddings_ = std::move(t.token_type_embeddings);
  m.embedding_norm_gamma_ = std::move(t.embedding_norm_gamma);
  m.embedding_norm_beta_ = std::move(t.embedding_norm_beta);
  m.layers_.reserve(t.layers.size());
  for (std::size_t i = 0; i < t.layers.size(); ++i) {
    EncoderTensors::Layer& s = t.layers[i];
    Layer l;
    AM_ASSIGN_OR_RETURN(l.attention.query, linear_from_tensors(kOwner, layer_name(i, "query"), std::move(s.query_w),
                                                               std::move(s.query_b), h, h, true, formats.attention, ctx));
    AM_ASSIGN_OR_RETURN(l.attention.key, linear_from_tensors(kOwner, layer_name(i, "key"), std::move(s.key_w),
                                                             std::move(s.key_b), h, h, true, formats.attention, ctx));
    AM_ASSIGN_OR_RETURN(l.attention.value, linear_from_tensors(kOwner, layer_name(i, "value"), std::move(s.value_w),
                                                               std::move(s.value_b), h, h, true, formats.attention, ctx));
    AM_ASSIGN_OR_RETURN(l.attention.output,
                        linear_from_tensors(kOwner, layer_name(i, "attention output"), std::move(s.output_w),
                                            std::move(s.output_b), h, h, true, formats.attention, ctx));
    AM_RETURN_IF_ERROR(
        check_tensor_shape(kOwner, layer_name(i, "attention norm gamma"), s.attention_norm_gamma, Shape{h}));
    AM_RETURN_IF_ERROR(check_tensor_shape(kOwner, layer_name(i, "attention norm beta"), s.attention_norm_beta, Shape{h}));
    l.attention_norm_gamma = std::move(s.attention_norm_gamma);
    l.attention_norm_beta = std::move(s.attention_norm_beta);
    AM_ASSIGN_OR_RETURN(l.ffn_up, linear_from_tensors(kOwner, layer_name(i, "ffn up"), std::move(s.ffn_up_w),
                                                      std::move(s.ffn_up_b), h, inter, true, formats.feed_forward, ctx));
    AM_ASSIGN_OR_RETURN(l.ffn_down, linear_from_tensors(kOwner, layer_name(i, "ffn down"), std::move(s.ffn_down_w),
                                                        std::move(s.ffn_down_b), inter, h, true, formats.feed_forward, ctx));
    AM_RETURN_IF_ERROR(check_tensor_shape(kOwner, layer_name(i, "ffn norm gamma"), s.ffn_norm_gamma, Shape{h}));
    AM_RETURN_IF_ERROR(check_tensor_shape(kOwner, layer_name(i, "ffn norm beta"), s.ffn_norm_beta, Shape{h}));
    l.ffn_norm_gamma = std::move(s.ffn_norm_gamma);
    l.ffn_norm_beta = std::move(s.ffn_norm_beta);
    m.layers_.push_back(std::move(l));
  }
  return m;
}

Result<EncoderTensors> EncoderModel::tensors() const {
  EncoderTensors t;
  t.word_embeddings = word_embeddings_.clone();
  t.position_embeddings = position_embeddings_.clone();
  t.token_type_embeddings = token_type_embeddings_.clone();
  t.embedding_norm_gamma = embedding_norm_gamma_.clone();
  t.embedding_norm_beta = embedding_norm_beta_.clone();
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    const Layer& l = layers_[i];
    EncoderTensors::Layer s;
    auto take = [&](const char* what, const Linear& lin, Tensor& w, Tensor& b) -> Status {
      AM_ASSIGN_OR_RETURN(auto wb, linear_to_tensors(kOwner, layer_name(i, what), lin));
      w = std::move(wb.first);
      b = std::move(wb.second);
      return Status::Ok();
    };
    AM_RETURN_IF_ERROR(take("query", l.attention.query, s.query_w, s.query_b));
    AM_RETURN_IF_ERROR(take("key", l.attention.key, s.key_w, s.key_b));
    AM_RETURN_IF_ERROR(take("value", l.attention.value, s.value_w, s.value_b));
    AM_RETURN_IF_ERROR(take("attention output", l.attention.output, s.output_w, s.output_b));
    s.attention_norm_gamma = l.attention_norm_gamma.clone();
    s.attention_norm_beta = l.attention_norm_beta.clone();
    AM_RETURN_IF_ERROR(take("ffn up", l.ffn_up, s.ffn_up_w, s.ffn_up_b));
    AM_RETURN_IF_ERROR(take("ffn down", l.ffn_down, s.ffn_down_w, s.ffn_down_b));
    s.ffn_norm_gamma = l.ffn_norm_gamma.clone();
    s.ffn_norm_beta = l.ffn_norm_beta.clone();
    t.layers.push_back(std::move(s));
  }
  return t;
}

}  // namespace am::kernels
