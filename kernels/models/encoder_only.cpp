#include "kernels/models/encoder_only.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <string>
#include <utility>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/layer_norm.h"
#include "kernels/rng.h"

namespace am::kernels {
namespace {

// BERT's initializer_range and the scale of the small perturbations given to biases and norms.
constexpr float kWeightStd = 0.02f;
constexpr float kBiasStd = 0.02f;
constexpr float kNormNoiseStd = 0.02f;

// Streams for derive_seed(): weights and inputs never share random numbers.
constexpr uint64_t kWeightStream = 0x57454947ull;  // "WEIG"
constexpr uint64_t kInputStream = 0x494E5055ull;   // "INPU"

// Upper bound on any one dimension: keeps products of dimensions far from int64 overflow and
// rejects configs that are obviously typos long before an allocation is attempted.
constexpr int64_t kMaxDimension = int64_t{1} << 24;

Result<int64_t> read_dimension(const nlohmann::json& doc, const char* key,
                               std::optional<int64_t> fallback) {
  if (!doc.contains(key)) {
    if (fallback) return *fallback;
    return invalid_argument(std::string("encoder-only config: missing '") + key + "'");
  }
  const nlohmann::json& v = doc.at(key);
  if (!v.is_number_integer()) {
    return invalid_argument(std::string("encoder-only config: '") + key + "' must be an integer");
  }
  const int64_t n = v.get<int64_t>();
  if (n < 1 || n > kMaxDimension) {
    return invalid_argument(std::string("encoder-only config: '") + key +
                            "' = " + std::to_string(n) + " is outside [1, " +
                            std::to_string(kMaxDimension) + "]");
  }
  return n;
}

// Generates tensors in a fixed order, each from its own derived stream, so a model's values
// depend only on (config, seed).
class WeightSource {
 public:
  WeightSource(uint64_t seed, const ExecContext& ctx)
      : seed_(derive_seed(seed, kWeightStream)), ctx_(ctx) {}

  Tensor normal(Shape shape, float mean, float stddev) {
    Tensor t(shape);
    fill_normal(t.data(), t.numel(), mean, stddev, derive_seed(seed_, next_stream_++), ctx_);
    return t;
  }

  Linear linear(int64_t in, int64_t out, WeightFormat format) {
    Tensor w = normal(Shape{out, in}, 0.0f, kWeightStd);
    Tensor b = normal(Shape{out}, 0.0f, kBiasStd);
    return Linear::create(std::move(w), std::move(b), format, ctx_);
  }

 private:
  uint64_t seed_;
  const ExecContext& ctx_;
  uint64_t next_stream_ = 0;
};

}  // namespace

Result<EncoderConfig> encoder_config_from_json(const nlohmann::json& doc) {
  if (!doc.is_object()) return invalid_argument("encoder-only config must be a JSON object");
  EncoderConfig c;
  AM_ASSIGN_OR_RETURN(c.layers, read_dimension(doc, "layers", std::nullopt));
  AM_ASSIGN_OR_RETURN(c.hidden, read_dimension(doc, "hidden", std::nullopt));
  AM_ASSIGN_OR_RETURN(c.heads, read_dimension(doc, "heads", std::nullopt));
  AM_ASSIGN_OR_RETURN(c.intermediate, read_dimension(doc, "intermediate", std::nullopt));
  AM_ASSIGN_OR_RETURN(c.vocab, read_dimension(doc, "vocab", std::nullopt));
  AM_ASSIGN_OR_RETURN(c.max_positions, read_dimension(doc, "max_positions", std::nullopt));
  AM_ASSIGN_OR_RETURN(c.type_vocab, read_dimension(doc, "type_vocab", int64_t{2}));
  if (c.hidden % c.heads != 0) {
    return invalid_argument("encoder-only config: hidden " + std::to_string(c.hidden) +
                            " is not a multiple of heads " + std::to_string(c.heads));
  }
  if (c.vocab > std::numeric_limits<int32_t>::max()) {
    return invalid_argument("encoder-only config: 'vocab' does not fit 32-bit token ids");
  }
  if (doc.contains("norm_eps")) {
    const nlohmann::json& eps = doc.at("norm_eps");
    if (!eps.is_number() || !(eps.get<double>() > 0.0) || eps.get<double>() > 1.0) {
      return invalid_argument("encoder-only config: 'norm_eps' must be a number in (0, 1]");
    }
    c.norm_eps = static_cast<float>(eps.get<double>());
  }
  if (doc.contains("activation")) {
    if (!doc.at("activation").is_string()) {
      return invalid_argument("encoder-only config: 'activation' must be a string");
    }
    c.activation = doc.at("activation").get<std::string>();
  }
  AM_RETURN_IF_ERROR(activation_from_name(c.activation).status());
  if (doc.contains("position_offset")) {
    const nlohmann::json& v = doc.at("position_offset");
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= c.max_positions) {
      return invalid_argument("encoder-only config: 'position_offset' must be an integer in [0, max_positions)");
    }
    c.position_offset = v.get<int64_t>();
  }
  return c;
}

EncoderInput make_synthetic_encoder_input(const EncoderConfig& config, int64_t batch, int64_t seq,
                                          uint64_t seed) {
  EncoderInput in;
  in.batch = batch;
  in.seq = seq;
  const std::size_t n = static_cast<std::size_t>(batch * seq);
  in.token_ids.assign(n, 0);
  in.token_type_ids.assign(n, 0);
  in.attention_mask.assign(n, 0);
  Xoshiro256 rng(derive_seed(seed, kInputStream));
  const int64_t shortest = std::max<int64_t>(1, seq / 2);
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t length =
        b == 0 ? seq : shortest + rng.below(static_cast<uint32_t>(seq - shortest + 1));
    for (int64_t s = 0; s < length; ++s) {
      const std::size_t t = static_cast<std::size_t>(b * seq + s);
      in.token_ids[t] = static_cast<int32_t>(rng.below(static_cast<uint32_t>(config.vocab)));
      in.token_type_ids[t] = (config.type_vocab > 1 && s >= length / 2) ? 1 : 0;
      in.attention_mask[t] = 1;
    }
  }
  return in;
}

Status validate_encoder_input(const EncoderConfig& config, const EncoderInput& input) {
  if (input.batch < 1 || input.seq < 1) {
    return invalid_argument("encoder input: batch and seq_len must be positive");
  }
  if (input.seq + config.position_offset > config.max_positions) {
    return invalid_argument("encoder input: seq_len " + std::to_string(input.seq) + " + position_offset " +
                            std::to_string(config.position_offset) + " exceeds max_positions " +
                            std::to_string(config.max_positions));
  }
  const std::size_t n = static_cast<std::size_t>(input.batch * input.seq);
  if (input.token_ids.size() != n || input.token_type_ids.size() != n ||
      input.attention_mask.size() != n) {
    return invalid_argument("encoder input: ids, types and mask must hold batch*seq entries");
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (input.token_ids[i] < 0 || input.token_ids[i] >= config.vocab) {
      return invalid_argument("encoder input: token id " + std::to_string(input.token_ids[i]) +
                              " at " + std::to_string(i) + " is outside the vocabulary");
    }
    if (input.token_type_ids[i] < 0 || input.token_type_ids[i] >= config.type_vocab) {
      return invalid_argument("encoder input: token type " +
                              std::to_string(input.token_type_ids[i]) + " at " + std::to_string(i) +
                              " is outside [0, type_vocab)");
    }
  }
  return Status::Ok();
}

Result<EncoderModel> EncoderModel::create_synthetic(const EncoderConfig& config,
                                                    const FormatPlan& formats, uint64_t seed,
                                                    const ExecContext& ctx) {
  EncoderModel m;
  m.config_ = config;
  m.formats_ = formats;
  AM_ASSIGN_OR_RETURN(m.activation_, activation_from_name(config.activation));
  const int64_t h = config.hidden;
  WeightSource src(seed, ctx);
  m.word_embeddings_ = src.normal(Shape{config.vocab, h}, 0.0f, kWeightStd);
  m.position_embeddings_ = src.normal(Shape{config.max_positions, h}, 0.0f, kWeightStd);
  m.token_type_embeddings_ = src.normal(Shape{config.type_vocab, h}, 0.0f, kWeightStd);
  m.embedding_norm_gamma_ = src.normal(Shape{h}, 1.0f, kNormNoiseStd);
  m.embedding_norm_beta_ = src.normal(Shape{h}, 0.0f, kNormNoiseStd);
  m.layers_.reserve(static_cast<std::size_t>(config.layers));
  for (int64_t i = 0; i < config.layers; ++i) {
    Layer l;
    l.attention.query = src.linear(h, h, formats.attention);
    l.attention.key = src.linear(h, h, formats.attention);
    l.attention.value = src.linear(h, h, formats.attention);
    l.attention.output = src.linear(h, h, formats.attention);
    l.attention_norm_gamma = src.normal(Shape{h}, 1.0f, kNormNoiseStd);
    l.attention_norm_beta = src.normal(Shape{h}, 0.0f, kNormNoiseStd);
    l.ffn_up = src.linear(h, config.intermediate, formats.feed_forward);
    l.ffn_down = src.linear(config.intermediate, h, formats.feed_forward);
    l.ffn_norm_gamma = src.normal(Shape{h}, 1.0f, kNormNoiseStd);
    l.ffn_norm_beta = src.normal(Shape{h}, 0.0f, kNormNoiseStd);
    m.layers_.push_back(std::move(l));
  }
  return m;
}

EncoderModel EncoderModel::converted(const FormatPlan& formats, const ExecContext& ctx) const {
  EncoderModel m;
  m.config_ = config_;
  m.formats_ = formats;
  m.activation_ = activation_;
  m.word_embeddings_ = word_embeddings_.clone();
  m.position_embeddings_ = position_embeddings_.clone();
  m.token_type_embeddings_ = token_type_embeddings_.clone();
  m.embedding_norm_gamma_ = embedding_norm_gamma_.clone();
  m.embedding_norm_beta_ = embedding_norm_beta_.clone();
  m.layers_.reserve(layers_.size());
  for (const Layer& src : layers_) {
    Layer l;
    l.attention.query = src.attention.query.converted(formats.attention, ctx);
    l.attention.key = src.attention.key.converted(formats.attention, ctx);
    l.attention.value = src.attention.value.converted(formats.attention, ctx);
    l.attention.output = src.attention.output.converted(formats.attention, ctx);
    l.attention_norm_gamma = src.attention_norm_gamma.clone();
    l.attention_norm_beta = src.attention_norm_beta.clone();
    l.ffn_up = src.ffn_up.converted(formats.feed_forward, ctx);
    l.ffn_down = src.ffn_down.converted(formats.feed_forward, ctx);
    l.ffn_norm_gamma = src.ffn_norm_gamma.clone();
    l.ffn_norm_beta = src.ffn_norm_beta.clone();
    m.layers_.push_back(std::move(l));
  }
  return m;
}

std::size_t EncoderModel::weights_bytes() const {
  std::size_t total = word_embeddings_.bytes() + position_embeddings_.bytes() +
                      token_type_embeddings_.bytes() + embedding_norm_gamma_.bytes() +
                      embedding_norm_beta_.bytes();
  for (const Layer& l : layers_) {
    total += l.attention.query.weight_bytes() + l.attention.key.weight_bytes() +
             l.attention.value.weight_bytes() + l.attention.output.weight_bytes() +
             l.attention_norm_gamma.bytes() + l.attention_norm_beta.bytes() +
             l.ffn_up.weight_bytes() + l.ffn_down.weight_bytes() + l.ffn_norm_gamma.bytes() +
             l.ffn_norm_beta.bytes();
  }
  return total;
}

std::vector<std::pair<Op, WeightFormat>> EncoderModel::required_ops() const {
  return {{Op::kGatherRows, WeightFormat::kF32}, {Op::kLayerNorm, WeightFormat::kF32},
          {Op::kLinear, formats_.attention},     {Op::kLinear, formats_.feed_forward},
          {Op::kAttention, WeightFormat::kF32},
          {Op::kActivation, WeightFormat::kF32}, {Op::kAdd, WeightFormat::kF32}};
}

Result<Tensor> EncoderModel::forward(const EncoderInput& input, const ExecContext& ctx) const {
  CpuBackend cpu(ctx);
  return forward(input, cpu);
}

Result<Tensor> EncoderModel::forward(const EncoderInput& input, Backend& be) const {
  AM_ASSIGN_OR_RETURN(Tensor x, forward_resident(input, be));
  AM_RETURN_IF_ERROR(be.to_host(x.view()));
  return x;
}

Result<Tensor> EncoderModel::forward_resident(const EncoderInput& input, Backend& be) const {
  AM_RETURN_IF_ERROR(validate_encoder_input(config_, input));
  const int64_t tokens = input.batch * input.seq;
  const int64_t h = config_.hidden;
  const float eps = config_.norm_eps;

  // BERT numbers every position from 0; RoBERTa (offset > 0) numbers real tokens from the offset
  // and gives padding offset - 1 (its padding_idx).
  std::vector<int32_t> positions(static_cast<std::size_t>(tokens));
  const int64_t offset = config_.position_offset;
  for (int64_t b = 0; b < input.batch; ++b) {
    int64_t real = 0;
    for (int64_t s = 0; s < input.seq; ++s) {
      const std::size_t t = static_cast<std::size_t>(b * input.seq + s);
      if (offset == 0) {
        positions[t] = static_cast<int32_t>(s);
      } else {
        positions[t] = static_cast<int32_t>(input.attention_mask[t] != 0 ? offset + real++ : offset - 1);
      }
    }
  }

  Tensor x = be.tensor(Shape{tokens, h});
  AM_RETURN_IF_ERROR(be.gather_rows(word_embeddings_.view(), input.token_ids.data(), tokens, x.view(), false));
  AM_RETURN_IF_ERROR(be.gather_rows(position_embeddings_.view(), positions.data(), tokens, x.view(), true));
  AM_RETURN_IF_ERROR(
      be.gather_rows(token_type_embeddings_.view(), input.token_type_ids.data(), tokens, x.view(), true));
  AM_RETURN_IF_ERROR(be.layer_norm(x.view(), embedding_norm_gamma_.data(), embedding_norm_beta_.data(), eps, x.view()));

  Tensor q = be.tensor(Shape{tokens, h}), k = be.tensor(Shape{tokens, h}), v = be.tensor(Shape{tokens, h});
  Tensor context = be.tensor(Shape{tokens, h});
  Tensor branch = be.tensor(Shape{tokens, h});
  Tensor ffn_hidden = be.tensor(Shape{tokens, config_.intermediate});
  AttentionArgs attn;
  attn.q = q.view();
  attn.k = k.view();
  attn.v = v.view();
  attn.out = context.view();
  attn.batch = input.batch;
  attn.q_len = input.seq;
  attn.kv_len = input.seq;
  attn.heads = config_.heads;
  attn.kv_heads = config_.heads;
  attn.head_dim = h / config_.heads;
  attn.key_mask = input.attention_mask.data();
  for (const Layer& l : layers_) {
    AM_RETURN_IF_ERROR(be.linear(l.attention.query, x.view(), q.view()));
    AM_RETURN_IF_ERROR(be.linear(l.attention.key, x.view(), k.view()));
    AM_RETURN_IF_ERROR(be.linear(l.attention.value, x.view(), v.view()));
    AM_RETURN_IF_ERROR(be.attention(attn));
    AM_RETURN_IF_ERROR(be.linear(l.attention.output, context.view(), branch.view()));
    AM_RETURN_IF_ERROR(be.add(branch.view(), x.view()));
    AM_RETURN_IF_ERROR(be.layer_norm(branch.view(), l.attention_norm_gamma.data(), l.attention_norm_beta.data(), eps, x.view()));

    AM_RETURN_IF_ERROR(be.linear(l.ffn_up, x.view(), ffn_hidden.view()));
    AM_RETURN_IF_ERROR(be.activation(activation_, ffn_hidden.view()));
    AM_RETURN_IF_ERROR(be.linear(l.ffn_down, ffn_hidden.view(), branch.view()));
    AM_RETURN_IF_ERROR(be.add(branch.view(), x.view()));
    AM_RETURN_IF_ERROR(be.layer_norm(branch.view(), l.ffn_norm_gamma.data(), l.ffn_norm_beta.data(), eps, x.view()));
  }
  x.reshape(Shape{input.batch, input.seq, h});
  return x;
}

}  // namespace am::kernels
