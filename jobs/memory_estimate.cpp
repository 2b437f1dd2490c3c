#include "jobs/memory_estimate.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace am::jobs {
namespace {

constexpr double kF32Bits = 32.0;
// Buffers alive at once in a layer (input, normed copy, q/k/v, context, branch, ...).
constexpr double kLiveBuffers = 8.0;
constexpr int64_t kDefaultDecodeSteps = 8;
// Largest value a size key of a model config may hold (2^40): far above any real dimension,
// layer or passage count, small enough that products of a few of them stay finite doubles.
constexpr int64_t kMaxConfigValue = int64_t{1} << 40;
// The estimate in bytes must fit an int64_t; anything near that is "does not fit anywhere".
constexpr double kMaxEstimateBytes = 9.0e18;

// Parameter counts by the role that decides their stored format.
struct Params {
  double attention = 0, feed_forward = 0, output = 0, f32 = 0;
  Params& operator+=(const Params& o) {
    attention += o.attention;
    feed_forward += o.feed_forward;
    output += o.output;
    f32 += o.f32;
    return *this;
  }
};

// `n` copies of `p` (n <= 0: none). Multiplies instead of looping: a config may claim 2^40
// layers, and the estimate must answer "too big" at once, not loop.
Params repeat(const Params& p, double n) {
  const double c = std::max(0.0, std::floor(n));
  return Params{p.attention * c, p.feed_forward * c, p.output * c, p.f32 * c};
}

class Keys {
 public:
  explicit Keys(const nlohmann::json& c) : c_(c) {}
  // Positive integer key up to kMaxConfigValue, or the fallback (nullopt fallback: missing is a
  // failure). A present key out of range is a failure whatever the fallback.
  int64_t get(const char* key, std::optional<int64_t> fallback = std::nullopt) {
    if (c_.is_object() && c_.contains(key) && c_.at(key).is_number_integer()) {
      const int64_t v = c_.at(key).get<int64_t>();
      if (v > 0 && v <= kMaxConfigValue) return v;
      ok_ = false;
      return fallback.value_or(1);
    }
    if (!fallback) ok_ = false;
    return fallback.value_or(1);
  }
  std::string text(const char* key, const std::string& fallback) {
    return c_.is_object() && c_.contains(key) && c_.at(key).is_string() ? c_.at(key).get<std::string>() : fallback;
  }
  bool flag(const char* key, bool fallback) {
    return c_.is_object() && c_.contains(key) && c_.at(key).is_boolean() ? c_.at(key).get<bool>() : fallback;
  }
  std::vector<int64_t> array(const char* key) {
    std::vector<int64_t> v;
    if (c_.is_object() && c_.contains(key) && c_.at(key).is_array()) {
      for (const auto& e : c_.at(key)) {
        if (e.is_number_integer() && e.get<int64_t>() > 0 && e.get<int64_t>() <= kMaxConfigValue) {
          v.push_back(e.get<int64_t>());
        } else {
          ok_ = false;
        }
      }
    }
    if (v.empty()) ok_ = false;
    return v;
  }
  bool has(const char* key) const { return c_.is_object() && c_.contains(key); }
  bool ok() const { return ok_; }

 private:
  const nlohmann::json& c_;
  bool ok_ = true;
};

// One transformer layer: attention (self + optional cross) and a dense or gated FFN (x experts).
Params transformer_layer(double h, double attn_width, double kv_width, double inter, bool gated, bool cross,
                         double experts = 1) {
  Params p;
  p.attention = 2 * h * attn_width + 2 * h * kv_width;
  if (cross) p.attention += 2 * h * attn_width + 2 * h * kv_width;
  p.feed_forward = experts * (gated ? 3 : 2) * h * inter;
  if (experts > 1) p.output += h * experts;  // router
  p.f32 = 6 * h + attn_width + 2 * kv_width + inter;  // norms and biases
  return p;
}

struct Estimate {
  Params params;
  double activations = 0;  // bytes
  double cache = 0;        // bytes
};

// Activation bytes of `rows` tokens of width h with feed-forward `inter` and attention over
// `keys` keys per query with `heads` heads.
double activation_bytes(double rows, double h, double inter, double heads, double keys) {
  return 4.0 * (kLiveBuffers * rows * h + 2 * rows * inter + rows * heads * keys);
}

double kv_bytes(double layers, double batch, double positions, double kv_width) {
  return 4.0 * 2 * layers * batch * positions * kv_width;
}

std::optional<Estimate> text_decoder(Keys& k, const JobSpec& s, double prefix_tokens = 0) {
  const bool gpt2 = k.text("style", "llama") == "gpt2";
  const double layers = k.get("layers"), h = k.get("hidden"), heads = k.get("heads");
  const double kv = k.get("kv_heads", static_cast<int64_t>(heads));
  const double hd = k.get("head_dim", static_cast<int64_t>(h / heads));
  const double inter = k.get("intermediate"), vocab = k.get("vocab");
  const double experts = k.get("experts", 1), steps = k.get("decode_steps", kDefaultDecodeSteps);
  Estimate e;
  Params layer = transformer_layer(h, heads * hd, kv * hd, inter, !gpt2, false, experts);
  e.params += repeat(layer, layers);
  e.params.f32 += vocab * h + (gpt2 ? k.get("max_positions") * h : 0);
  e.params.output += vocab * h;
  const double tokens = prefix_tokens + s.seq_len + steps;
  e.activations = activation_bytes(s.batch * tokens, h, inter * std::min(experts, 2.0), heads, tokens) +
                  4.0 * s.batch * (steps + 1) * vocab;
  e.cache = kv_bytes(layers, s.batch, tokens, kv * hd);
  return k.ok() ? std::optional<Estimate>(e) : std::nullopt;
}

std::optional<Estimate> encoder_decoder(Keys& k, const JobSpec& s, double src_tokens) {
  const double enc = k.get("layers"), dec = k.get("decoder_layers", k.get("layers"));
  const double h = k.get("hidden"), heads = k.get("heads"), hd = k.get("head_dim", static_cast<int64_t>(h / heads));
  const double inter = k.get("intermediate"), vocab = k.get("vocab");
  const double experts = k.get("experts", 1), steps = k.get("decode_steps", kDefaultDecodeSteps);
  const bool gated = k.flag("gated_ffn", false);
  Estimate e;
  e.params += repeat(transformer_layer(h, heads * hd, heads * hd, inter, gated, false, experts), enc);
  e.params += repeat(transformer_layer(h, heads * hd, heads * hd, inter, gated, true, experts), dec);
  e.params.f32 += vocab * h;
  e.params.output += vocab * h;
  const double tgt = s.seq_len + steps;
  e.activations = activation_bytes(s.batch * std::max(src_tokens, tgt), h, inter, heads, std::max(src_tokens, tgt)) +
                  4.0 * s.batch * (steps + 1) * vocab;
  e.cache = kv_bytes(dec, s.batch, tgt + src_tokens, heads * hd);
  return k.ok() ? std::optional<Estimate>(e) : std::nullopt;
}

// A ViT tower with `prefix` key names; tokens per image returned through `tokens`.
Params vit_tower(Keys& k, const std::string& p, double& tokens, double& h_out, double& inter_out, double& heads_out,
                 double drop_layers = 0) {
  const double image = k.get((p + "image_size").c_str()), patch = k.get((p + "patch").c_str());
  const double ch = k.get((p + "channels").c_str(), 3), layers = k.get((p + "layers").c_str()) - drop_layers;
  const double h = k.get((p + "hidden").c_str()), heads = k.get((p + "heads").c_str());
  const double inter = k.get((p + "intermediate").c_str());
  const double grid = std::floor(image / patch);
  tokens = grid * grid + 1;
  h_out = h;
  inter_out = inter;
  heads_out = heads;
  Params t;
  t += repeat(transformer_layer(h, h, h, inter, false, false), layers);
  t.f32 += h * ch * patch * patch + (tokens + 2) * h;
  return t;
}

std::optional<Estimate> vision(Keys& k, const JobSpec& s) {
  Estimate e;
  if (k.text("variant", "vit") == "detr") {
    const double image = k.get("image_size"), width = k.get("backbone_width"), exp = k.get("backbone_expansion");
    double in = width, w = width, side = image / 4;
    e.params.f32 += 3 * width * 49;
    double peak = s.batch * (image / 2) * (image / 2) * width;
    for (int64_t d : k.array("backbone_depths")) {
      const double out = w * exp;
      e.params.f32 += d * (out * w + 9 * w * w + w * out) + in * out;
      peak = std::max(peak, s.batch * side * side * out * 3);
      in = out;
      w *= 2;
      side = std::ceil(side / 2);
    }
    const double h = k.get("hidden"), heads = k.get("heads"), inter = k.get("intermediate");
    const double q = k.get("num_queries"), classes = k.get("num_classes");
    e.params += repeat(transformer_layer(h, h, h, inter, false, false), k.get("encoder_layers"));
    e.params += repeat(transformer_layer(h, h, h, inter, false, true), k.get("decoder_layers"));
    e.params.output += h * (classes + 1) + 2 * h * h + 4 * h;
    const double tokens = side * side * 4;
    e.activations = std::max(4.0 * peak, activation_bytes(s.batch * tokens, h, inter, heads, tokens)) +
                    4.0 * s.batch * q * (classes + 5);
  } else {
    double tokens, h, inter, heads;
    e.params = vit_tower(k, "", tokens, h, inter, heads);
    e.params.output += 2 * h * k.get("num_classes");
    e.activations = activation_bytes(s.batch * tokens, h, inter, heads, tokens);
  }
  return k.ok() ? std::optional<Estimate>(e) : std::nullopt;
}

Params clip_text(Keys& k, const std::string& p, double& act, double batch, double len) {
  const double layers = k.get((p + "layers").c_str()), h = k.get((p + "hidden").c_str());
  const double heads = k.get((p + "heads").c_str()), inter = k.get((p + "intermediate").c_str());
  const double vocab = k.get("vocab"), pos = k.get("max_positions");
  Params t;
  t += repeat(transformer_layer(h, h, h, inter, false, false), layers);
  t.f32 += (vocab + pos) * h;
  t.output += h * k.get("projection_dim");
  act = activation_bytes(batch * len, h, inter, heads, len);
  return t;
}

std::optional<Estimate> vision_text(Keys& k, const JobSpec& s) {
  Estimate e;
  double tokens, h, inter, heads;
  e.params = vit_tower(k, "vision_", tokens, h, inter, heads);
  const double vision_act = activation_bytes(s.batch * tokens, h, inter, heads, tokens);
  if (k.text("variant", "clip") == "vit-gpt2") {
    std::optional<Estimate> dec = text_decoder(k, s, 0);
    if (!dec) return std::nullopt;
    e.params += dec->params;
    e.params.attention += static_cast<double>(k.get("layers")) * 4 * k.get("hidden") * k.get("hidden");  // cross
    e.activations = std::max(vision_act, dec->activations);
    e.cache = dec->cache + kv_bytes(k.get("layers"), s.batch, tokens, k.get("hidden"));
  } else {
    double text_act = 0;
    e.params += clip_text(k, "text_", text_act, s.batch, s.seq_len);
    e.params.output += h * k.get("projection_dim");
    e.activations = std::max(vision_act, text_act);
  }
  return k.ok() ? std::optional<Estimate>(e) : std::nullopt;
}

std::optional<Estimate> multimodal(Keys& k, const JobSpec& s) {
  const std::string variant = k.text("variant", "llava");
  Estimate e;
  if (variant == "llava") {
    double tokens, h, inter, heads;
    e.params = vit_tower(k, "vision_", tokens, h, inter, heads, 1);
    // AnyRes (image_grid = [rows, cols]): the base view plus the tiles, and one image_newline
    // token per row of the tile grid.
    const std::vector<int64_t> grid = k.has("image_grid") ? k.array("image_grid") : std::vector<int64_t>{};
    const double side = std::sqrt(tokens - 1);
    const double crops = grid.size() == 2 ? 1.0 + grid[0] * grid[1] : k.get("image_crops", 1);
    const double image_tokens = crops * (tokens - 1) + (grid.size() == 2 ? grid[0] * side : 0.0);
    const double lm_h = k.get("hidden");
    e.params.feed_forward += h * lm_h + lm_h * lm_h;
    std::optional<Estimate> lm = text_decoder(k, s, image_tokens);
    if (!lm) return std::nullopt;
    e.params += lm->params;
    e.activations = std::max(activation_bytes(s.batch * crops * tokens, h, inter, heads, tokens), lm->activations);
    e.cache = lm->cache;
  } else if (variant == "xclip") {
    double tokens, h, inter, heads, text_act = 0;
    e.params = vit_tower(k, "vision_", tokens, h, inter, heads);
    const double frames = k.get("frames"), proj = k.get("projection_dim");
    e.params += clip_text(k, "text_", text_act, s.batch, s.seq_len);
    e.params += repeat(transformer_layer(proj, proj, proj, k.get("mit_intermediate"), false, false), k.get("mit_layers"));
    e.params.output += 2 * h * proj;  // visual projection and the prompts' visual projection
    // Prompt generator: per layer cross-attention (4 proj^2) and a 4x MLP (8 proj^2).
    const double prompt_layers = k.get("prompt_layers", 2);
    e.params.attention += prompt_layers * 4 * proj * proj;
    e.params.feed_forward += prompt_layers * 8 * proj * proj;
    e.params.f32 += 2 * h + proj * (3 + 4 * prompt_layers);
    e.activations = std::max(activation_bytes(s.batch * frames * tokens, h, inter, heads, tokens), text_act) +
                    4.0 * s.batch * frames * tokens * (h + proj);  // the prompts' per-frame patch tokens
  } else if (variant == "clap") {
    const double image = k.get("audio_image_size"), patch = k.get("audio_patch"), window = k.get("audio_window");
    double ch = k.get("audio_hidden"), res = image / patch;
    const std::vector<int64_t> depths = k.array("audio_depths");
    double peak = 0;
    for (std::size_t i = 0; i < depths.size(); ++i) {
      e.params += repeat(transformer_layer(ch, ch, ch, 4 * ch, false, false), static_cast<double>(depths[i]));
      peak = std::max(peak, activation_bytes(s.batch * res * res, ch, 4 * ch, 1, window * window));
      if (i + 1 < depths.size()) {
        e.params.output += 4 * ch * 2 * ch;
        ch *= 2;
        res /= 2;
      }
    }
    e.params.f32 += ch * patch * patch;
    const double th = k.get("text_hidden"), proj = k.get("projection_dim");
    e.params += repeat(transformer_layer(th, th, th, k.get("text_intermediate"), false, false), k.get("text_layers"));
    e.params.f32 += (k.get("vocab") + k.get("max_positions")) * th;
    e.params.output += (ch + th) * proj + 2 * proj * proj;
    e.activations = std::max(peak, activation_bytes(s.batch * s.seq_len, th, k.get("text_intermediate"), k.get("text_heads"), s.seq_len));
  } else {
    return std::nullopt;
  }
  return k.ok() ? std::optional<Estimate>(e) : std::nullopt;
}

std::optional<Estimate> diffusion(Keys& k, const JobSpec& s) {
  const std::vector<int64_t> chans = k.array("block_channels");
  const double layers = k.get("layers_per_block"), attn_levels = k.get("attention_levels");
  const double ctx = k.get("cross_attention_dim"), sample = k.get("sample_size"), in_ch = k.get("in_channels");
  const double text_len = k.get("text_len");
  if (!k.ok()) return std::nullopt;
  // Classifier-free guidance runs every UNet pass on a doubled batch.
  const double batch = (k.has("guidance_scale") ? 2.0 : 1.0) * s.batch;
  Estimate e;
  const double temb = 4.0 * chans.front();
  auto res = [&](double in, double out) {
    Params p;
    p.f32 = 9 * in * out + 9 * out * out + (in != out ? in * out : 0) + 6 * out;
    p.output = temb * out;
    return p;
  };
  auto attn = [&](double c) {
    Params p;
    p.attention = 4 * c * c + 2 * ctx * c + 2 * c * c;
    p.feed_forward = 3 * 4 * c * c;
    p.f32 = 10 * c;
    return p;
  };
  double ch = chans.front(), side = sample, peak = 0;
  for (std::size_t l = 0; l < chans.size(); ++l) {
    const double out = static_cast<double>(chans[l]);
    const bool a = static_cast<double>(l) < attn_levels;
    e.params += res(ch, out);
    e.params += repeat(res(out, out), layers - 1);
    e.params += repeat(res(2 * out, out), layers + 1);
    if (a) {
      e.params += repeat(attn(out), 2 * layers + 1);
    }
    e.params.f32 += 2 * 9 * out * out;
    const double pos = side * side;
    peak = std::max(peak, 4.0 * batch * (kLiveBuffers * pos * 2 * out + 2 * pos * 4 * out + (a ? pos * (pos + text_len) : 0)));
    ch = out;
    side = std::ceil(side / 2);
  }
  e.params += res(ch, ch);
  e.params += res(ch, ch);
  e.params += attn(ch);
  e.params.output += chans.front() * temb + temb * temb;
  e.params.f32 += 9 * in_ch * chans.front() * 2;
  // Skip connections stay alive across the whole pass.
  e.activations = peak + 4.0 * batch * sample * sample * chans.front() * (2 * layers + 2);
  return e;
}

std::optional<Estimate> state_space(Keys& k, const JobSpec& s) {
  const double layers = k.get("layers"), h = k.get("hidden"), inter = k.get("intermediate"), vocab = k.get("vocab");
  const double steps = k.get("decode_steps", kDefaultDecodeSteps);
  Estimate e;
  if (k.text("variant", "mamba") == "rwkv") {
    e.params.attention = layers * 4 * h * h;
    e.params.feed_forward = layers * (2 * h * inter + h * h);
    e.params.f32 = layers * 11 * h + vocab * h;
    e.params.output = vocab * h;
    e.cache = 4.0 * layers * s.batch * 5 * h;
    e.activations = activation_bytes(s.batch * s.seq_len, h, inter, 0, 0);
  } else {
    const double n = k.get("state_size"), kernel = k.get("conv_kernel"), dt = k.get("dt_rank");
    e.params.attention = layers * (2 * h * inter + inter * (dt + 2 * n) + dt * inter);
    e.params.feed_forward = layers * inter * h;
    e.params.f32 = layers * (inter * (kernel + 3 + n) + h) + vocab * h;
    e.params.output = vocab * h;
    e.cache = 4.0 * layers * s.batch * inter * (n + kernel - 1);
    e.activations = activation_bytes(s.batch * s.seq_len, h, 4 * inter, 0, 0);
  }
  e.activations += 4.0 * s.batch * (steps + 1) * vocab;
  return k.ok() ? std::optional<Estimate>(e) : std::nullopt;
}

std::optional<Estimate> encoder_only(Keys& k, const JobSpec& s) {
  const double layers = k.get("layers"), h = k.get("hidden"), heads = k.get("heads"), inter = k.get("intermediate");
  Estimate e;
  e.params += repeat(transformer_layer(h, h, h, inter, false, false), layers);
  e.params.f32 += (k.get("vocab") + k.get("max_positions") + k.get("type_vocab", 2)) * h;
  e.activations = activation_bytes(s.batch * s.seq_len, h, inter, heads, s.seq_len);
  return k.ok() ? std::optional<Estimate>(e) : std::nullopt;
}

std::optional<Estimate> speech(Keys& k, const JobSpec& s) {
  const std::string style = k.text("style", "whisper");
  if (style == "wav2vec2") {
    Estimate e;
    const double h = k.get("hidden"), heads = k.get("heads"), inter = k.get("intermediate"), conv = k.get("conv_dim");
    e.params += repeat(transformer_layer(h, h, h, inter, false, false), k.get("layers"));
    const std::vector<int64_t> kernels = k.array("conv_kernel");
    for (std::size_t i = 0; i < kernels.size(); ++i) e.params.f32 += (i == 0 ? 1 : conv) * conv * kernels[i];
    e.params.f32 += h * h / std::max<int64_t>(1, k.get("pos_conv_groups", 16)) * k.get("pos_conv_kernel", 128) + conv * h;
    // The feature extractor's first layer holds about samples / 5 frames of conv_dim channels.
    const double samples = 320.0 * s.seq_len;
    e.activations = std::max(4.0 * 2 * s.batch * samples / 5 * conv, activation_bytes(s.batch * s.seq_len, h, inter, heads, s.seq_len));
    return k.ok() ? std::optional<Estimate>(e) : std::nullopt;
  }
  const double frames = 2.0 * s.seq_len, h = k.get("hidden"), mels = k.get("n_mels", 80);
  std::optional<Estimate> e = encoder_decoder(k, s, s.seq_len);
  if (!e) return std::nullopt;
  e->params.f32 += 3 * mels * h + 3 * h * h + (k.get("max_source_positions", 1500) + k.get("max_target_positions", 448)) * h;
  e->activations = std::max(e->activations, 4.0 * s.batch * frames * (mels + 2 * h));
  return e;
}

std::optional<Estimate> rag(Keys& k, const JobSpec& s) {
  const double qh = k.get("question_hidden"), qi = k.get("question_intermediate");
  const double passages = k.get("passages", 1000), plen = k.get("passage_len", 32), docs = k.get("n_docs", 5);
  JobSpec gen = s;
  if (s.batch * docs > std::numeric_limits<int>::max()) return std::nullopt;
  gen.batch = static_cast<int>(s.batch * docs);
  std::optional<Estimate> e = encoder_decoder(k, gen, s.seq_len + plen);
  if (!e) return std::nullopt;
  e->params += repeat(transformer_layer(qh, qh, qh, qi, false, false), k.get("question_layers"));
  e->params.f32 += (k.get("question_vocab") + k.get("question_max_positions", 512)) * qh;
  e->activations += 4.0 * passages * qh;  // the passage index
  return k.ok() ? e : std::nullopt;
}

}  // namespace

std::optional<int64_t> estimate_job_bytes(const JobSpec& spec) {
  // A command's memory is its own business: nothing of ours to estimate.
  if (spec.command) return std::nullopt;
  // Attention, embedding and output tensors are stored in one format and feed-forward tensors in
  // another only under the mixed policy; format_for_role() answers for every precision.
  const double high = jobs::bits_per_weight(format_for_role(spec.precision, TensorRole::kAttention));
  const double low = jobs::bits_per_weight(format_for_role(spec.precision, TensorRole::kFeedForward));
  if (spec.batch < 1 || spec.seq_len < 1) return std::nullopt;
  Keys k(spec.model_config);
  const std::string& a = spec.architecture;
  std::optional<Estimate> e;
  if (a == "encoder-only") e = encoder_only(k, spec);
  else if (a == "decoder-only" || (a == "mixture-of-experts" && k.text("style", "llama") == "llama")) e = text_decoder(k, spec);
  else if (a == "encoder-decoder" || a == "mixture-of-experts") e = encoder_decoder(k, spec, spec.seq_len);
  else if (a == "speech") e = speech(k, spec);
  else if (a == "rag") e = rag(k, spec);
  else if (a == "vision") e = vision(k, spec);
  else if (a == "vision-encoder-text-decoder") e = vision_text(k, spec);
  else if (a == "multimodal") e = multimodal(k, spec);
  else if (a == "diffusion") e = diffusion(k, spec);
  else if (a == "state-space") e = state_space(k, spec);
  if (!e) return std::nullopt;
  const Params& p = e->params;
  const double weight_bytes =
      ((p.attention + p.output) * high + p.feed_forward * low) / 8.0 + p.f32 * (kF32Bits / 8.0);
  const double total = weight_bytes + e->activations + e->cache;
  if (!std::isfinite(total) || total < 0 || total > kMaxEstimateBytes) return std::nullopt;
  return static_cast<int64_t>(std::ceil(total));
}

}  // namespace am::jobs
