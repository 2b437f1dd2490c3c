// config.json readers, one per Hugging Face model_type, each writing the catalog keys its
// family's builder reads (the keys are listed in each family's header). Defaults are
// transformers' own for that model_type, so a config.json that omits a key (as many do, e.g.
// LLaVA's text_config) means what it means to from_pretrained().
#include "kernels/models/hf_config.h"

#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "kernels/cpu/activation.h"
#include "kernels/weights/checkpoint.h"
#include "kernels/weights/checkpoints.h"

namespace am::kernels {
namespace {

// A config value in an error message. Numbers, booleans and null are shown; strings, arrays and
// objects by their kind only: a checkpoint path is the coordinator's to choose, and quoting what
// a file holds would hand any readable file's text back in the job's reason.
std::string shown(const nlohmann::json& v) {
  if (v.is_number() || v.is_boolean() || v.is_null()) return v.dump();
  if (v.is_string()) return "a string";
  if (v.is_array()) return "an array";
  return "an object";
}


using json = nlohmann::json;

// Reads one (sub-)object of config.json; errors name the file and the key path. JSON null is
// "not set" (transformers writes null for unset optional settings).
class Hf {
 public:
  Hf(const json& doc, std::string where, std::string prefix = "")
      : doc_(doc), where_(std::move(where)), prefix_(std::move(prefix)) {}

  bool has(const char* key) const { return doc_.contains(key) && !doc_.at(key).is_null(); }
  // Written in the file, null included (null can mean "off" where the default is on).
  bool present(const char* key) const { return doc_.contains(key); }
  const json& value(const char* key) const { return doc_.at(key); }
  std::string name(const char* key) const { return prefix_ + key; }

  Status invalid(const char* key, const std::string& what) const {
    return invalid_argument(where_ + ": '" + name(key) + "' " + what);
  }
  Status refuse(const char* key, const std::string& why) const {
    return unsupported(where_ + ": '" + name(key) + "' " + why);
  }

  // A nested config object (text_config, ...); an absent one reads every key at its default.
  Result<Hf> sub(const char* key) const {
    static const json kEmpty = json::object();
    if (!has(key)) return Hf(kEmpty, where_, name(key) + ".");
    if (!doc_.at(key).is_object()) return invalid(key, "must be an object");
    return Hf(doc_.at(key), where_, name(key) + ".");
  }
  Result<int64_t> integer(const char* key, int64_t fallback) const {
    if (!has(key)) return fallback;
    const json& v = doc_.at(key);
    if (!v.is_number_integer()) return invalid(key, "must be an integer, got " + shown(v));
    // Above int64's range nlohmann keeps it unsigned; get<int64_t>() would wrap it negative.
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
      return invalid(key, "is out of range, got " + shown(v));
    }
    return v.get<int64_t>();
  }
  Result<int64_t> dim(const char* key, int64_t fallback) const {
    AM_ASSIGN_OR_RETURN(int64_t v, integer(key, fallback));
    if (v < 1) return invalid(key, "must be positive, got " + std::to_string(v));
    return v;
  }
  Result<double> number(const char* key, double fallback) const {
    if (!has(key)) return fallback;
    const json& v = doc_.at(key);
    if (!v.is_number() || !std::isfinite(v.get<double>())) {
      return invalid(key, "must be a finite number, got " + shown(v));
    }
    return v.get<double>();
  }
  Result<double> positive(const char* key, double fallback) const {
    AM_ASSIGN_OR_RETURN(double v, number(key, fallback));
    if (!(v > 0.0)) return invalid(key, "must be positive, got " + std::to_string(v));
    return v;
  }
  Result<std::string> text(const char* key, std::string fallback) const {
    if (!has(key)) return fallback;
    if (!doc_.at(key).is_string()) return invalid(key, "must be a string, got " + shown(doc_.at(key)));
    return doc_.at(key).get<std::string>();
  }
  Result<bool> flag(const char* key, bool fallback) const {
    if (!has(key)) return fallback;
    if (!doc_.at(key).is_boolean()) return invalid(key, "must be true or false, got " + shown(doc_.at(key)));
    return doc_.at(key).get<bool>();
  }
  // An activation name our kernels run (activation_from_name()), refused naming the key otherwise.
  Result<std::string> activation(const char* key, std::string fallback) const {
    AM_ASSIGN_OR_RETURN(std::string a, text(key, std::move(fallback)));
    if (!activation_from_name(a).ok()) return refuse(key, "= \"" + a.substr(0, 32) + "\" is an activation our kernels do not run");
    return a;
  }
  Result<std::vector<int64_t>> dims(const char* key, std::vector<int64_t> fallback) const {
    if (!has(key)) return fallback;
    const json& v = doc_.at(key);
    if (!v.is_array() || v.empty()) return invalid(key, "must be a non-empty array of positive integers");
    std::vector<int64_t> out;
    for (const json& e : v) {
      if (!e.is_number_integer() || e.get<int64_t>() < 1) {
        return invalid(key, "must hold positive integers, got " + shown(e));
      }
      out.push_back(e.get<int64_t>());
    }
    return out;
  }
  // The number of labels: id2label's size when present (transformers' num_labels), else num_labels.
  Result<int64_t> labels(int64_t fallback) const {
    if (has("id2label")) {
      if (!doc_.at("id2label").is_object() || doc_.at("id2label").empty()) {
        return invalid("id2label", "must be a non-empty object");
      }
      return static_cast<int64_t>(doc_.at("id2label").size());
    }
    return dim("num_labels", fallback);
  }
  // An encoder-decoder size our graphs model once: encoder_<what> (default `fallback`), refusing
  // a decoder_<what> that differs from it.
  Result<int64_t> shared_dim(const std::string& what, int64_t fallback, const char* modelled) const {
    const std::string enc = "encoder_" + what, dec = "decoder_" + what;
    AM_ASSIGN_OR_RETURN(int64_t e, dim(enc.c_str(), fallback));
    AM_ASSIGN_OR_RETURN(int64_t d, dim(dec.c_str(), fallback));
    if (d != e) return refuse(dec.c_str(), "differs from " + enc + "; one " + modelled + " is modelled");
    return e;
  }
  // Refuses `key` unless it is unset or equal to `want`.
  Status require_value(const char* key, const json& want, const std::string& why) const {
    if (!has(key) || doc_.at(key) == want) return Status::Ok();
    return refuse(key, "= " + shown(doc_.at(key)) + " is not supported: " + why);
  }

 private:
  const json& doc_;
  std::string where_;
  std::string prefix_;
};

// ---- text families ------------------------------------------------------------------------------

// BertModel / RobertaModel (and CLAP's RoBERTa text tower, via `p`, a key prefix).
Status bert_keys(const Hf& c, bool roberta, const std::string& p, json& out) {
  AM_ASSIGN_OR_RETURN(out[p + "layers"], c.dim("num_hidden_layers", 12));
  AM_ASSIGN_OR_RETURN(out[p + "hidden"], c.dim("hidden_size", 768));
  AM_ASSIGN_OR_RETURN(out[p + "heads"], c.dim("num_attention_heads", 12));
  AM_ASSIGN_OR_RETURN(out[p + "intermediate"], c.dim("intermediate_size", 3072));
  AM_ASSIGN_OR_RETURN(out["vocab"], c.dim("vocab_size", roberta ? 50265 : 30522));
  AM_ASSIGN_OR_RETURN(out["max_positions"], c.dim("max_position_embeddings", 512));
  AM_ASSIGN_OR_RETURN(out[p + "type_vocab"], c.dim("type_vocab_size", 2));
  AM_ASSIGN_OR_RETURN(out[p + "norm_eps"], c.positive("layer_norm_eps", 1e-12));
  AM_ASSIGN_OR_RETURN(out[p + "activation"], c.activation("hidden_act", "gelu"));
  AM_RETURN_IF_ERROR(c.require_value("position_embedding_type", "absolute", "only absolute position embeddings are modelled"));
  if (roberta) {
    // RoBERTa numbers real tokens from pad_token_id + 1 (fairseq's make_positions).
    AM_ASSIGN_OR_RETURN(int64_t pad, c.integer("pad_token_id", 1));
    if (pad < 0) return c.invalid("pad_token_id", "must not be negative");
    out[p + "position_offset"] = pad + 1;
  } else {
    out[p + "position_offset"] = 0;
  }
  return Status::Ok();
}

// LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, MixtralForCausalLM (and LLaVA's
// text_config): the decoder-only keys.
Status decoder_keys(const Hf& c, const std::string& model_type, json& out) {
  const bool mistral = model_type == "mistral", qwen2 = model_type == "qwen2", mixtral = model_type == "mixtral";
  if (!mistral && !qwen2 && !mixtral && model_type != "llama") {
    return c.refuse("model_type", "= \"" + model_type.substr(0, 32) + "\" is not a LLaMA-family decoder our loader reads");
  }
  out["style"] = "llama";
  out["rope_layout"] = "neox";  // transformers stores q/k for rotate-half RoPE
  AM_ASSIGN_OR_RETURN(out["layers"], c.dim("num_hidden_layers", 32));
  AM_ASSIGN_OR_RETURN(int64_t hidden, c.dim("hidden_size", 4096));
  out["hidden"] = hidden;
  AM_ASSIGN_OR_RETURN(int64_t heads, c.dim("num_attention_heads", 32));
  out["heads"] = heads;
  AM_ASSIGN_OR_RETURN(out["kv_heads"], c.dim("num_key_value_heads", mistral || mixtral ? 8 : heads));
  AM_ASSIGN_OR_RETURN(out["intermediate"],
                      c.dim("intermediate_size", mistral || mixtral ? 14336 : qwen2 ? 22016 : 11008));
  AM_ASSIGN_OR_RETURN(out["vocab"], c.dim("vocab_size", qwen2 ? 151936 : 32000));
  AM_ASSIGN_OR_RETURN(out["max_positions"],
                      c.dim("max_position_embeddings", mistral || mixtral ? 131072 : qwen2 ? 32768 : 2048));
  AM_ASSIGN_OR_RETURN(out["rope_theta"], c.positive("rope_theta", mixtral ? 1e6 : 10000.0));
  AM_ASSIGN_OR_RETURN(out["norm_eps"], c.positive("rms_norm_eps", mixtral ? 1e-5 : 1e-6));
  AM_ASSIGN_OR_RETURN(out["activation"], c.activation("hidden_act", "silu"));
  AM_ASSIGN_OR_RETURN(out["tie_embeddings"], c.flag("tie_word_embeddings", false));
  if (c.has("head_dim")) {
    AM_ASSIGN_OR_RETURN(out["head_dim"], c.dim("head_dim", hidden / heads));
  } else {
    out["head_dim"] = hidden / heads;
  }
  if (c.has("rope_scaling")) {
    return c.refuse("rope_scaling", "= " + c.value("rope_scaling").dump() +
                                        " is not supported: scaled RoPE (linear, dynamic, yarn, llama3) is not modelled");
  }
  AM_RETURN_IF_ERROR(c.require_value("mlp_bias", false, "the feed-forward has no biases in our graph"));
  if (qwen2) {
    out["attention_bias"] = true;  // Qwen2 projects q, k, v with biases (o without)
    AM_ASSIGN_OR_RETURN(bool sliding, c.flag("use_sliding_window", false));
    if (sliding) {
      return c.refuse("use_sliding_window", "= true: Qwen2's per-layer sliding-window attention is not modelled");
    }
  } else {
    // LLaMA's attention_bias adds a bias to o_proj too, which our stack does not have.
    AM_RETURN_IF_ERROR(c.require_value("attention_bias", false, "an o_proj bias is not modelled"));
    out["attention_bias"] = false;
  }
  if ((mistral || mixtral) && c.has("sliding_window")) {
    AM_ASSIGN_OR_RETURN(out["sliding_window"], c.dim("sliding_window", 4096));
  } else if (mistral && !c.present("sliding_window")) {
    out["sliding_window"] = 4096;  // MistralConfig's default
  }
  if (mixtral) {
    AM_ASSIGN_OR_RETURN(out["experts"], c.dim("num_local_experts", 8));
    AM_ASSIGN_OR_RETURN(out["experts_per_token"], c.dim("num_experts_per_tok", 2));
  }
  return Status::Ok();
}

// T5ForConditionalGeneration (T5 v1.0, v1.1, flan-T5).
Status t5_keys(const Hf& c, json& out) {
  out["style"] = "t5";
  AM_ASSIGN_OR_RETURN(int64_t layers, c.dim("num_layers", 6));
  out["layers"] = layers;
  AM_ASSIGN_OR_RETURN(out["decoder_layers"], c.dim("num_decoder_layers", layers));
  AM_ASSIGN_OR_RETURN(out["hidden"], c.dim("d_model", 512));
  AM_ASSIGN_OR_RETURN(out["heads"], c.dim("num_heads", 8));
  AM_ASSIGN_OR_RETURN(out["head_dim"], c.dim("d_kv", 64));
  AM_ASSIGN_OR_RETURN(out["intermediate"], c.dim("d_ff", 2048));
  AM_ASSIGN_OR_RETURN(out["vocab"], c.dim("vocab_size", 32128));
  AM_ASSIGN_OR_RETURN(out["max_positions"], c.dim("n_positions", 512));
  AM_ASSIGN_OR_RETURN(out["rel_buckets"], c.dim("relative_attention_num_buckets", 32));
  AM_ASSIGN_OR_RETURN(out["rel_max_distance"], c.dim("relative_attention_max_distance", 128));
  AM_ASSIGN_OR_RETURN(out["norm_eps"], c.positive("layer_norm_epsilon", 1e-6));
  AM_ASSIGN_OR_RETURN(out["tie_embeddings"], c.flag("tie_word_embeddings", true));
  AM_ASSIGN_OR_RETURN(std::string ffn, c.text("feed_forward_proj", "relu"));
  const bool gated = ffn.rfind("gated-", 0) == 0;
  std::string act = gated ? ffn.substr(6) : ffn;
  if (act == "gelu" && gated) act = "gelu_new";  // T5Config maps "gated-gelu" to gelu_new
  if (!activation_from_name(act).ok()) return c.refuse("feed_forward_proj", "= \"" + ffn + "\" is not supported");
  out["gated_ffn"] = gated;
  out["activation"] = act;
  AM_RETURN_IF_ERROR(c.require_value("decoder_start_token_id", 0, "the decoder starts from the pad token 0"));
  AM_RETURN_IF_ERROR(c.require_value("is_encoder_decoder", true, "only the encoder-decoder T5 is modelled"));
  return Status::Ok();
}

// ---- vision towers ------------------------------------------------------------------------------

// A CLIP-style vision config (CLIPVisionConfig, XCLIPVisionConfig, LLaVA's vision_config) as
// vision_* keys; `d` holds the model_type's defaults.
struct VisionDefaults {
  int64_t hidden, intermediate, layers, heads, image, patch;
};
Status vision_tower_keys(const Hf& v, const VisionDefaults& d, json& out) {
  AM_ASSIGN_OR_RETURN(out["vision_hidden"], v.dim("hidden_size", d.hidden));
  AM_ASSIGN_OR_RETURN(out["vision_intermediate"], v.dim("intermediate_size", d.intermediate));
  AM_ASSIGN_OR_RETURN(out["vision_layers"], v.dim("num_hidden_layers", d.layers));
  AM_ASSIGN_OR_RETURN(out["vision_heads"], v.dim("num_attention_heads", d.heads));
  AM_ASSIGN_OR_RETURN(out["vision_image_size"], v.dim("image_size", d.image));
  AM_ASSIGN_OR_RETURN(out["vision_patch"], v.dim("patch_size", d.patch));
  AM_ASSIGN_OR_RETURN(out["vision_channels"], v.dim("num_channels", 3));
  AM_ASSIGN_OR_RETURN(out["vision_activation"], v.activation("hidden_act", "quick_gelu"));
  AM_ASSIGN_OR_RETURN(out["vision_norm_eps"], v.positive("layer_norm_eps", 1e-5));
  return Status::Ok();
}

// A CLIP-style text config (CLIPTextConfig, XCLIPTextConfig) as text_* keys.
Status clip_text_keys(const Hf& t, json& out) {
  AM_ASSIGN_OR_RETURN(out["text_layers"], t.dim("num_hidden_layers", 12));
  AM_ASSIGN_OR_RETURN(out["text_hidden"], t.dim("hidden_size", 512));
  AM_ASSIGN_OR_RETURN(out["text_heads"], t.dim("num_attention_heads", 8));
  AM_ASSIGN_OR_RETURN(out["text_intermediate"], t.dim("intermediate_size", 2048));
  AM_ASSIGN_OR_RETURN(out["text_activation"], t.activation("hidden_act", "quick_gelu"));
  AM_ASSIGN_OR_RETURN(out["vocab"], t.dim("vocab_size", 49408));
  AM_ASSIGN_OR_RETURN(out["max_positions"], t.dim("max_position_embeddings", 77));
  AM_ASSIGN_OR_RETURN(out["norm_eps"], t.positive("layer_norm_eps", 1e-5));
  // transformers pools CLIP's text at argmax(input_ids) when eos_token_id is the legacy 2, else
  // at the first eos_token_id.
  AM_ASSIGN_OR_RETURN(int64_t eos, t.integer("eos_token_id", 2));
  if (eos != 2) out["eos_token_id"] = eos;
  return Status::Ok();
}

// CLIPModel.
Status clip_keys(const Hf& c, json& out) {
  out["variant"] = "clip";
  AM_ASSIGN_OR_RETURN(Hf text, c.sub("text_config"));
  AM_ASSIGN_OR_RETURN(Hf vision, c.sub("vision_config"));
  AM_RETURN_IF_ERROR(clip_text_keys(text, out));
  AM_RETURN_IF_ERROR(vision_tower_keys(vision, {768, 3072, 12, 12, 224, 32}, out));
  AM_ASSIGN_OR_RETURN(out["projection_dim"], c.dim("projection_dim", 512));
  // The checkpoint's logit_scale tensor replaces this at load.
  AM_ASSIGN_OR_RETURN(out["logit_scale"], c.number("logit_scale_init_value", 2.6592));
  return Status::Ok();
}

// ViTForImageClassification, DeiTForImageClassificationWithTeacher.
Status vit_keys(const Hf& c, bool deit, json& out) {
  out["variant"] = "vit";
  AM_ASSIGN_OR_RETURN(out["image_size"], c.dim("image_size", 224));
  AM_ASSIGN_OR_RETURN(out["patch"], c.dim("patch_size", 16));
  AM_ASSIGN_OR_RETURN(out["channels"], c.dim("num_channels", 3));
  AM_ASSIGN_OR_RETURN(out["layers"], c.dim("num_hidden_layers", 12));
  AM_ASSIGN_OR_RETURN(out["hidden"], c.dim("hidden_size", 768));
  AM_ASSIGN_OR_RETURN(out["heads"], c.dim("num_attention_heads", 12));
  AM_ASSIGN_OR_RETURN(out["intermediate"], c.dim("intermediate_size", 3072));
  AM_ASSIGN_OR_RETURN(out["activation"], c.activation("hidden_act", "gelu"));
  AM_ASSIGN_OR_RETURN(out["norm_eps"], c.positive("layer_norm_eps", 1e-12));
  AM_ASSIGN_OR_RETURN(out["num_classes"], c.labels(2));
  AM_RETURN_IF_ERROR(c.require_value("qkv_bias", true, "the attention projections have biases in our graph"));
  // DeiT models always carry the distillation token; their checkpoints hold both heads.
  out["distillation"] = deit;
  return Status::Ok();
}

// DetrForObjectDetection with timm's ResNet backbone.
Status detr_keys(const Hf& c, json& out) {
  out["variant"] = "detr";
  AM_ASSIGN_OR_RETURN(int64_t hidden, c.dim("d_model", 256));
  out["hidden"] = hidden;
  AM_ASSIGN_OR_RETURN(out["encoder_layers"], c.dim("encoder_layers", 6));
  AM_ASSIGN_OR_RETURN(out["decoder_layers"], c.dim("decoder_layers", 6));
  AM_ASSIGN_OR_RETURN(out["heads"], c.shared_dim("attention_heads", 8, "head count"));
  AM_ASSIGN_OR_RETURN(out["intermediate"], c.shared_dim("ffn_dim", 2048, "width"));
  AM_ASSIGN_OR_RETURN(out["num_queries"], c.dim("num_queries", 100));
  AM_ASSIGN_OR_RETURN(out["num_classes"], c.labels(91));
  AM_ASSIGN_OR_RETURN(out["activation"], c.activation("activation_function", "relu"));
  AM_ASSIGN_OR_RETURN(out["channels"], c.dim("num_channels", 3));
  out["norm_eps"] = 1e-5;  // DETR's LayerNorms use PyTorch's default eps
  AM_ASSIGN_OR_RETURN(std::string backbone, c.text("backbone", "resnet50"));
  if (backbone == "resnet50") {
    out["backbone_depths"] = {3, 4, 6, 3};
  } else if (backbone == "resnet101") {
    out["backbone_depths"] = {3, 4, 23, 3};
  } else {
    return c.refuse("backbone", "= \"" + backbone + "\" is not supported (resnet50, resnet101)");
  }
  out["backbone_width"] = 64;
  out["backbone_expansion"] = 4;
  AM_RETURN_IF_ERROR(c.require_value("use_timm_backbone", true, "the backbone's tensors are read under timm's names"));
  AM_RETURN_IF_ERROR(c.require_value("dilation", false, "a dilated last stage is not modelled"));
  AM_RETURN_IF_ERROR(c.require_value("position_embedding_type", "sine", "only the sine position embedding is modelled"));
  return Status::Ok();
}

// ---- speech ---------------------------------------------------------------------------------------

// WhisperForConditionalGeneration.
Status whisper_keys(const Hf& c, json& out) {
  out["style"] = "whisper";
  AM_ASSIGN_OR_RETURN(out["layers"], c.dim("encoder_layers", 4));
  AM_ASSIGN_OR_RETURN(out["decoder_layers"], c.dim("decoder_layers", 4));
  AM_ASSIGN_OR_RETURN(out["hidden"], c.dim("d_model", 384));
  AM_ASSIGN_OR_RETURN(out["heads"], c.shared_dim("attention_heads", 6, "head count"));
  AM_ASSIGN_OR_RETURN(out["intermediate"], c.shared_dim("ffn_dim", 1536, "width"));
  AM_ASSIGN_OR_RETURN(out["vocab"], c.dim("vocab_size", 51865));
  AM_ASSIGN_OR_RETURN(out["n_mels"], c.dim("num_mel_bins", 80));
  AM_ASSIGN_OR_RETURN(out["max_source_positions"], c.dim("max_source_positions", 1500));
  AM_ASSIGN_OR_RETURN(out["max_target_positions"], c.dim("max_target_positions", 448));
  AM_ASSIGN_OR_RETURN(out["activation"], c.activation("activation_function", "gelu"));
  out["norm_eps"] = 1e-5;  // Whisper's LayerNorms use PyTorch's default eps
  AM_RETURN_IF_ERROR(c.require_value("scale_embedding", false, "token embeddings are not scaled in our graph"));
  return Status::Ok();
}

// Wav2Vec2Model / Wav2Vec2ForCTC / Wav2Vec2ForPreTraining (the encoder; heads are not run).
Status wav2vec2_keys(const Hf& c, json& out) {
  out["style"] = "wav2vec2";
  AM_ASSIGN_OR_RETURN(out["layers"], c.dim("num_hidden_layers", 12));
  AM_ASSIGN_OR_RETURN(out["hidden"], c.dim("hidden_size", 768));
  AM_ASSIGN_OR_RETURN(out["heads"], c.dim("num_attention_heads", 12));
  AM_ASSIGN_OR_RETURN(out["intermediate"], c.dim("intermediate_size", 3072));
  AM_ASSIGN_OR_RETURN(out["activation"], c.activation("hidden_act", "gelu"));
  AM_ASSIGN_OR_RETURN(out["norm_eps"], c.positive("layer_norm_eps", 1e-5));
  AM_ASSIGN_OR_RETURN(std::vector<int64_t> conv_dim, c.dims("conv_dim", std::vector<int64_t>(7, 512)));
  for (int64_t d : conv_dim) {
    if (d != conv_dim.front()) return c.refuse("conv_dim", "has different widths per layer; one width is modelled");
  }
  out["conv_dim"] = conv_dim.front();
  AM_ASSIGN_OR_RETURN(std::vector<int64_t> kernel, c.dims("conv_kernel", {10, 3, 3, 3, 3, 2, 2}));
  AM_ASSIGN_OR_RETURN(std::vector<int64_t> stride, c.dims("conv_stride", {5, 2, 2, 2, 2, 2, 2}));
  if (kernel.size() != conv_dim.size() || stride.size() != conv_dim.size()) {
    return c.invalid("conv_kernel", "conv_dim, conv_kernel and conv_stride must have the same length");
  }
  out["conv_kernel"] = kernel;
  out["conv_stride"] = stride;
  AM_ASSIGN_OR_RETURN(out["conv_bias"], c.flag("conv_bias", false));
  AM_ASSIGN_OR_RETURN(std::string norm, c.text("feat_extract_norm", "group"));
  if (norm != "group" && norm != "layer") return c.refuse("feat_extract_norm", "= \"" + norm + "\" is not supported");
  out["feat_extract_norm"] = norm;
  AM_RETURN_IF_ERROR(c.require_value("feat_extract_activation", "gelu", "the feature encoder runs GELU"));
  AM_ASSIGN_OR_RETURN(out["pos_conv_kernel"], c.dim("num_conv_pos_embeddings", 128));
  AM_ASSIGN_OR_RETURN(out["pos_conv_groups"], c.dim("num_conv_pos_embedding_groups", 16));
  AM_RETURN_IF_ERROR(c.require_value("do_stable_layer_norm", false,
                                     "the pre-LN (\"stable layer norm\") encoder of large-lv60 is not modelled"));
  return Status::Ok();
}

// ---- multimodal -----------------------------------------------------------------------------------

// LlavaForConditionalGeneration and LlavaNextForConditionalGeneration (the AnyRes grid of a run
// follows its image, so image_grid stays the plan's).
Status llava_keys(const Hf& c, json& out) {
  out["variant"] = "llava";
  AM_ASSIGN_OR_RETURN(Hf vision, c.sub("vision_config"));
  AM_RETURN_IF_ERROR(vision.require_value("model_type", "clip_vision_model", "the vision tower must be CLIP's"));
  AM_RETURN_IF_ERROR(vision_tower_keys(vision, {1024, 4096, 24, 16, 336, 14}, out));
  AM_ASSIGN_OR_RETURN(Hf text, c.sub("text_config"));
  AM_ASSIGN_OR_RETURN(std::string text_type, text.text("model_type", "llama"));
  AM_RETURN_IF_ERROR(decoder_keys(text, text_type, out));
  AM_ASSIGN_OR_RETURN(out["vision_feature_layer"], c.integer("vision_feature_layer", -2));
  AM_ASSIGN_OR_RETURN(std::string select, c.text("vision_feature_select_strategy", "default"));
  if (select != "default" && select != "full") {
    return c.refuse("vision_feature_select_strategy", "= \"" + select + "\" is not supported (default, full)");
  }
  out["vision_feature_select"] = select;
  AM_ASSIGN_OR_RETURN(out["projector_activation"], c.activation("projector_hidden_act", "gelu"));
  AM_RETURN_IF_ERROR(c.require_value("multimodal_projector_bias", true, "the projector has biases in our graph"));
  AM_ASSIGN_OR_RETURN(out["image_token_index"], c.integer("image_token_index", 32000));
  return Status::Ok();
}

// XCLIPModel.
Status xclip_keys(const Hf& c, json& out) {
  out["variant"] = "xclip";
  AM_ASSIGN_OR_RETURN(Hf text, c.sub("text_config"));
  AM_ASSIGN_OR_RETURN(Hf vision, c.sub("vision_config"));
  AM_RETURN_IF_ERROR(clip_text_keys(text, out));
  AM_RETURN_IF_ERROR(vision_tower_keys(vision, {768, 3072, 12, 12, 224, 32}, out));
  AM_ASSIGN_OR_RETURN(int64_t proj, c.dim("projection_dim", 512));
  out["projection_dim"] = proj;
  AM_ASSIGN_OR_RETURN(out["frames"], vision.dim("num_frames", 8));
  AM_ASSIGN_OR_RETURN(int64_t mit_hidden, vision.dim("mit_hidden_size", 512));
  if (mit_hidden != proj) {
    return vision.refuse("mit_hidden_size", "must equal projection_dim (the MIT integrates projected frames)");
  }
  AM_ASSIGN_OR_RETURN(out["mit_layers"], vision.dim("mit_num_hidden_layers", 1));
  AM_ASSIGN_OR_RETURN(out["mit_heads"], vision.dim("mit_num_attention_heads", 8));
  AM_ASSIGN_OR_RETURN(out["mit_intermediate"], vision.dim("mit_intermediate_size", 2048));
  AM_ASSIGN_OR_RETURN(out["prompt_layers"], c.dim("prompt_layers", 2));
  AM_ASSIGN_OR_RETURN(out["prompt_heads"], c.dim("prompt_num_attention_heads", 8));
  AM_ASSIGN_OR_RETURN(out["prompt_alpha"], c.number("prompt_alpha", 0.1));
  AM_ASSIGN_OR_RETURN(out["prompt_activation"], c.activation("prompt_hidden_act", "quick_gelu"));
  AM_ASSIGN_OR_RETURN(out["logit_scale"], c.number("logit_scale_init_value", 2.6592));
  return Status::Ok();
}

// ClapModel (HTSAT audio tower, RoBERTa text tower), unfused.
Status clap_keys(const Hf& c, json& out) {
  out["variant"] = "clap";
  AM_ASSIGN_OR_RETURN(Hf a, c.sub("audio_config"));
  AM_ASSIGN_OR_RETURN(Hf t, c.sub("text_config"));
  AM_RETURN_IF_ERROR(a.require_value("enable_fusion", false, "the fused (4-crop) CLAP variant is not modelled"));
  AM_ASSIGN_OR_RETURN(int64_t spec, a.dim("spec_size", 256));
  AM_ASSIGN_OR_RETURN(int64_t mels, a.dim("num_mel_bins", 64));
  if (spec % mels != 0) return a.invalid("spec_size", "must be a multiple of num_mel_bins");
  out["audio_image_size"] = spec;
  out["audio_mel_bins"] = mels;
  out["audio_frames"] = spec * (spec / mels);  // the frames HTSAT folds into its square image
  AM_ASSIGN_OR_RETURN(int64_t patch, a.dim("patch_size", 4));
  out["audio_patch"] = patch;
  AM_ASSIGN_OR_RETURN(std::vector<int64_t> stride, a.dims("patch_stride", {patch, patch}));
  if (stride.size() != 2 || stride[0] != patch || stride[1] != patch) {
    return a.refuse("patch_stride", "must equal patch_size (overlapping patches are not modelled)");
  }
  AM_ASSIGN_OR_RETURN(out["audio_hidden"], a.dim("patch_embeds_hidden_size", 96));
  AM_ASSIGN_OR_RETURN(out["audio_depths"], a.dims("depths", {2, 2, 6, 2}));
  AM_ASSIGN_OR_RETURN(out["audio_heads"], a.dims("num_attention_heads", {4, 8, 16, 32}));
  AM_ASSIGN_OR_RETURN(out["audio_window"], a.dim("window_size", 8));
  AM_ASSIGN_OR_RETURN(out["audio_activation"], a.activation("hidden_act", "gelu"));
  AM_ASSIGN_OR_RETURN(out["norm_eps"], a.positive("layer_norm_eps", 1e-5));
  AM_ASSIGN_OR_RETURN(out["audio_patch_norm"], a.flag("enable_patch_layer_norm", true));
  AM_RETURN_IF_ERROR(a.require_value("mlp_ratio", 4.0, "Swin's feed-forward is 4x wide in our graph"));
  AM_RETURN_IF_ERROR(a.require_value("qkv_bias", true, "the attention projections have biases in our graph"));
  AM_RETURN_IF_ERROR(a.require_value("flatten_patch_embeds", true, "patch embeddings are flattened"));
  AM_RETURN_IF_ERROR(a.require_value("projection_hidden_act", "relu", "the projections run ReLU"));
  AM_RETURN_IF_ERROR(t.require_value("projection_hidden_act", "relu", "the projections run ReLU"));
  AM_RETURN_IF_ERROR(bert_keys(t, true, "text_", out));
  AM_ASSIGN_OR_RETURN(out["projection_dim"], c.dim("projection_dim", 512));
  // logit_scale_a in the checkpoint replaces this at load.
  AM_ASSIGN_OR_RETURN(double init, c.positive("logit_scale_init_value", 1.0 / 0.07));
  out["logit_scale"] = std::log(init);
  return Status::Ok();
}

// ---- state space ----------------------------------------------------------------------------------

Status mamba_keys(const Hf& c, json& out) {
  out["variant"] = "mamba";
  AM_ASSIGN_OR_RETURN(int64_t hidden, c.dim("hidden_size", 768));
  out["hidden"] = hidden;
  AM_ASSIGN_OR_RETURN(out["layers"], c.dim("num_hidden_layers", 32));
  AM_ASSIGN_OR_RETURN(int64_t expand, c.dim("expand", 2));
  AM_ASSIGN_OR_RETURN(out["intermediate"], c.dim("intermediate_size", expand * hidden));
  AM_ASSIGN_OR_RETURN(out["state_size"], c.dim("state_size", 16));
  AM_ASSIGN_OR_RETURN(out["conv_kernel"], c.dim("conv_kernel", 4));
  if (c.has("time_step_rank") && c.value("time_step_rank").is_string()) {
    AM_RETURN_IF_ERROR(c.require_value("time_step_rank", "auto", "must be an integer or \"auto\""));
    out["dt_rank"] = (hidden + 15) / 16;
  } else {
    AM_ASSIGN_OR_RETURN(out["dt_rank"], c.dim("time_step_rank", (hidden + 15) / 16));
  }
  AM_ASSIGN_OR_RETURN(out["vocab"], c.dim("vocab_size", 50280));
  AM_ASSIGN_OR_RETURN(out["norm_eps"], c.positive("layer_norm_epsilon", 1e-5));
  AM_RETURN_IF_ERROR(c.require_value("use_bias", false, "in_proj/out_proj have no biases in our graph"));
  AM_RETURN_IF_ERROR(c.require_value("use_conv_bias", true, "the causal conv has a bias in our graph"));
  AM_RETURN_IF_ERROR(c.require_value("tie_word_embeddings", true, "the head is tied to the embeddings in our graph"));
  return Status::Ok();
}

Status rwkv_keys(const Hf& c, json& out) {
  out["variant"] = "rwkv";
  AM_ASSIGN_OR_RETURN(int64_t hidden, c.dim("hidden_size", 4096));
  out["hidden"] = hidden;
  AM_ASSIGN_OR_RETURN(out["layers"], c.dim("num_hidden_layers", 32));
  AM_ASSIGN_OR_RETURN(out["intermediate"], c.dim("intermediate_size", 4 * hidden));
  AM_ASSIGN_OR_RETURN(out["vocab"], c.dim("vocab_size", 50277));
  AM_ASSIGN_OR_RETURN(out["norm_eps"], c.positive("layer_norm_epsilon", 1e-5));
  AM_ASSIGN_OR_RETURN(int64_t attn, c.dim("attention_hidden_size", hidden));
  if (attn != hidden) return c.refuse("attention_hidden_size", "must equal hidden_size in our graph");
  AM_RETURN_IF_ERROR(c.require_value("tie_word_embeddings", false, "RWKV-4's head is its own weight"));
  return Status::Ok();
}

// ---- diffusion --------------------------------------------------------------------------------------

// diffusers' UNet2DConditionModel (unet/config.json; _class_name instead of a model_type). The
// sampling settings (steps, scheduler, guidance, text length) are the plan's.
Status unet_keys(const Hf& c, json& out) {
  AM_ASSIGN_OR_RETURN(out["sample_size"], c.dim("sample_size", 64));
  AM_ASSIGN_OR_RETURN(out["in_channels"], c.dim("in_channels", 4));
  AM_ASSIGN_OR_RETURN(out["out_channels"], c.dim("out_channels", 4));
  AM_ASSIGN_OR_RETURN(std::vector<int64_t> channels, c.dims("block_out_channels", {320, 640, 1280, 1280}));
  out["block_channels"] = channels;
  AM_ASSIGN_OR_RETURN(out["layers_per_block"], c.dim("layers_per_block", 2));
  AM_ASSIGN_OR_RETURN(out["cross_attention_dim"], c.dim("cross_attention_dim", 1280));
  AM_ASSIGN_OR_RETURN(out["norm_groups"], c.dim("norm_num_groups", 32));
  AM_ASSIGN_OR_RETURN(out["norm_eps"], c.positive("norm_eps", 1e-5));
  // Cross-attention in the leading levels (CrossAttnDownBlock2D), plain levels after, mirrored up.
  const std::vector<std::string> down_default = {"CrossAttnDownBlock2D", "CrossAttnDownBlock2D", "CrossAttnDownBlock2D",
                                                 "DownBlock2D"};
  std::vector<std::string> down = down_default;
  if (c.has("down_block_types")) {
    const json& v = c.value("down_block_types");
    if (!v.is_array()) return c.invalid("down_block_types", "must be an array of block type names");
    down.clear();
    for (const json& e : v) {
      if (!e.is_string()) return c.invalid("down_block_types", "must hold block type names");
      down.push_back(e.get<std::string>());
    }
  }
  if (down.size() != channels.size()) {
    return c.invalid("down_block_types", "must have one entry per block_out_channels");
  }
  int64_t levels = 0;
  for (std::size_t i = 0; i < down.size(); ++i) {
    const bool attn = down[i] == "CrossAttnDownBlock2D";
    if (!attn && down[i] != "DownBlock2D") {
      return c.refuse("down_block_types", "holds \"" + down[i] + "\", which is not modelled");
    }
    if (attn && levels != static_cast<int64_t>(i)) {
      return c.refuse("down_block_types",
                      "has cross-attention after a plain level; only leading cross-attention levels are modelled");
    }
    if (attn) ++levels;
  }
  out["attention_levels"] = levels;
  // SD 1.x names its head count attention_head_dim (num_attention_heads wins when set).
  const char* heads_key = c.has("num_attention_heads") ? "num_attention_heads" : "attention_head_dim";
  if (c.has(heads_key) && c.value(heads_key).is_array()) {
    AM_ASSIGN_OR_RETURN(std::vector<int64_t> heads, c.dims(heads_key, {8}));
    for (int64_t h : heads) {
      if (h != heads.front()) return c.refuse(heads_key, "differs per level; one head count is modelled");
    }
    out["attention_heads"] = heads.front();
  } else {
    AM_ASSIGN_OR_RETURN(out["attention_heads"], c.dim(heads_key, 8));
  }
  AM_RETURN_IF_ERROR(c.require_value("act_fn", "silu", "the ResNets run SiLU"));
  AM_RETURN_IF_ERROR(c.require_value("flip_sin_to_cos", true, "the time embedding is [cos | sin]"));
  AM_RETURN_IF_ERROR(c.require_value("freq_shift", 0, "the time embedding has no frequency shift"));
  AM_RETURN_IF_ERROR(c.require_value("center_input_sample", false, "the input is not centred"));
  AM_RETURN_IF_ERROR(c.require_value("downsample_padding", 1, "downsamplers pad by 1"));
  AM_RETURN_IF_ERROR(c.require_value("mid_block_scale_factor", 1, "the mid block is not rescaled"));
  AM_RETURN_IF_ERROR(c.require_value("transformer_layers_per_block", 1, "one transformer block per attention"));
  AM_RETURN_IF_ERROR(c.require_value("only_cross_attention", false, "blocks self-attend before cross-attending"));
  AM_RETURN_IF_ERROR(c.require_value("dual_cross_attention", false, "one cross-attention per block"));
  AM_RETURN_IF_ERROR(c.require_value("resnet_time_scale_shift", "default", "the time embedding is added, not a scale-shift"));
  AM_RETURN_IF_ERROR(c.require_value("class_embed_type", nullptr, "class embeddings are not modelled"));
  AM_RETURN_IF_ERROR(c.require_value("addition_embed_type", nullptr, "added embeddings (SDXL) are not modelled"));
  return Status::Ok();
}

// ---- dispatch -------------------------------------------------------------------------------------

struct Reader {
  std::string_view model_type;
  std::string_view architecture;
  std::function<Status(const Hf&, json&)> read;
};

const std::vector<Reader>& readers() {
  static const std::vector<Reader> kReaders = {
      {"bert", "encoder-only", [](const Hf& c, json& o) { return bert_keys(c, false, "", o); }},
      {"roberta", "encoder-only", [](const Hf& c, json& o) { return bert_keys(c, true, "", o); }},
      {"llama", "decoder-only", [](const Hf& c, json& o) { return decoder_keys(c, "llama", o); }},
      {"mistral", "decoder-only", [](const Hf& c, json& o) { return decoder_keys(c, "mistral", o); }},
      {"qwen2", "decoder-only", [](const Hf& c, json& o) { return decoder_keys(c, "qwen2", o); }},
      {"mixtral", "mixture-of-experts", [](const Hf& c, json& o) { return decoder_keys(c, "mixtral", o); }},
      {"t5", "encoder-decoder", t5_keys},
      {"clip", "vision-encoder-text-decoder", clip_keys},
      {"vit", "vision", [](const Hf& c, json& o) { return vit_keys(c, false, o); }},
      {"deit", "vision", [](const Hf& c, json& o) { return vit_keys(c, true, o); }},
      {"detr", "vision", detr_keys},
      {"whisper", "speech", whisper_keys},
      {"wav2vec2", "speech", wav2vec2_keys},
      {"llava", "multimodal", llava_keys},
      {"llava_next", "multimodal", llava_keys},
      {"xclip", "multimodal", xclip_keys},
      {"clap", "multimodal", clap_keys},
      {"mamba", "state-space", mamba_keys},
      {"rwkv", "state-space", rwkv_keys},
      {"UNet2DConditionModel", "diffusion", unet_keys},
  };
  return kReaders;
}

}  // namespace

Result<json> hf_config_to_catalog(const json& config, const std::string& architecture, const std::string& where) {
  if (!config.is_object()) return invalid_argument(where + ": not a JSON object");
  const Hf c(config, where);
  // diffusers' component configs name their class instead of a model_type.
  std::string type;
  if (c.has("model_type")) {
    AM_ASSIGN_OR_RETURN(type, c.text("model_type", ""));
  } else if (c.has("_class_name")) {
    AM_ASSIGN_OR_RETURN(type, c.text("_class_name", ""));
  } else {
    return invalid_argument(where + ": 'model_type' is missing (it says which architecture the checkpoint is)");
  }
  for (const Reader& r : readers()) {
    if (r.model_type != type) continue;
    if (r.architecture != architecture) {
      return invalid_argument(where + ": 'model_type' = \"" + type.substr(0, 32) + "\" is a " + std::string(r.architecture) +
                              " model, but the job's architecture is " + architecture);
    }
    json out = json::object();
    AM_RETURN_IF_ERROR(r.read(c, out));
    return out;
  }
  return unsupported(where + ": 'model_type' = \"" + type.substr(0, 32) +
                     "\" has no config.json reader here; name the .safetensors file itself to use the plan's config");
}

Result<json> apply_checkpoint_config(const json& model_config, const std::string& architecture) {
  AM_ASSIGN_OR_RETURN(std::optional<std::string> path, checkpoint_path_from(model_config, architecture));
  if (!path) return model_config;
  AM_ASSIGN_OR_RETURN(std::optional<json> config, read_checkpoint_config(*path));
  if (!config) return model_config;
  AM_ASSIGN_OR_RETURN(json keys, hf_config_to_catalog(*config, architecture,
                                                      *path + "/" + kCheckpointConfigFile));
  json merged = model_config;
  for (const auto& [key, value] : keys.items()) merged[key] = value;
  return merged;
}

}  // namespace am::kernels
