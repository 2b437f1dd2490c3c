// The mixture-of-experts family: Mixtral (a LLaMA-style decoder with top-2-of-8 experts in
// every layer, renormalised softmax router) and Switch Transformers (a T5 encoder-decoder with
// top-1 routing in every other feed-forward, scaled by the router probability). Both use the
// shared expert block of TransformerStack (router linear -> Backend::top_k -> per-expert row
// gather, feed-forward, weighted scatter-add).
//
// Config: a config with `decoder_layers` is a Switch model and takes the encoder-decoder keys
// (encoder_decoder.h) plus experts / experts_per_token (1) / moe_every (2); otherwise it is a
// Mixtral model with the decoder-only keys (decoder_only.h) plus experts / experts_per_token
// (2). `experts` is required either way. A Mixtral config may name a checkpoint (weights_path,
// decoder_only_checkpoint.h); a Switch config with weights_path is refused, not silently seeded.
#include <memory>
#include <optional>
#include <string>

#include "kernels/models/decoder_only.h"
#include "kernels/models/decoder_only_checkpoint.h"
#include "kernels/models/encoder_decoder.h"
#include "kernels/models/families.h"

namespace am::kernels {

Result<std::unique_ptr<ModelGraph>> build_mixture_of_experts_graph(const jobs::JobSpec& spec,
                                                                   Precision precision,
                                                                   const ExecContext& ctx) {
  const std::string family = "mixture-of-experts";
  if (!spec.model_config.is_object() || !spec.model_config.contains("experts")) {
    return invalid_argument(family + " config: missing 'experts'");
  }
  const FormatPlan formats = format_plan_for(precision);
  if (spec.model_config.contains("decoder_layers")) {
    AM_ASSIGN_OR_RETURN(EncDecConfig config, enc_dec_config_from_json(spec.model_config, family));
    if (spec.model_config.contains(kWeightsPathKey)) {
      return unsupported(family + ": Switch Transformers checkpoints are not read yet ('weights_path')");
    }
    AM_ASSIGN_OR_RETURN(EncDecModel model, EncDecModel::create_synthetic(config, formats, spec.seed, ctx));
    return make_enc_dec_graph(std::move(model), spec);
  }
  AM_ASSIGN_OR_RETURN(DecoderLmConfig config, decoder_lm_config_from_json(spec.model_config, family));
  // model_config "weights_path" names a Mixtral safetensors checkpoint; without it, seeded weights.
  AM_ASSIGN_OR_RETURN(std::optional<std::string> checkpoint, checkpoint_path_from(spec.model_config, family));
  AM_ASSIGN_OR_RETURN(DecoderLm model, checkpoint ? load_llama_checkpoint(*checkpoint, config, formats, ctx)
                                                  : DecoderLm::create_synthetic(config, formats, spec.seed, ctx));
  return make_decoder_lm_graph(std::move(model), spec);
}

}  // namespace am::kernels
