#include <string>

#include "kernels/models/families.h"
#include "kernels/models/hf_config.h"
#include "kernels/models/model.h"

namespace am::kernels {
namespace {

struct Family {
  std::string_view architecture;
  GraphBuilder build;
};

// One line per family. A family without a builder yet is absent: its jobs are `unsupported`.
constexpr Family kFamilies[] = {
    {"encoder-only", &build_encoder_only_graph},
    {"decoder-only", &build_decoder_only_graph},
    {"encoder-decoder", &build_encoder_decoder_graph},
    {"speech", &build_speech_graph},
    {"mixture-of-experts", &build_mixture_of_experts_graph},
    {"rag", &build_rag_graph},
    {"vision", &build_vision_graph},
    {"state-space", &build_state_space_graph},
    {"vision-encoder-text-decoder", &build_vision_encoder_text_decoder_graph},
    {"multimodal", &build_multimodal_graph},
    {"diffusion", &build_diffusion_graph},
};

}  // namespace

GraphBuilder graph_builder_for(std::string_view architecture) {
  for (const Family& f : kFamilies) {
    if (f.architecture == architecture) return f.build;
  }
  return nullptr;
}

Result<GraphOutput> ModelGraph::run(Backend& be) const {
  AM_ASSIGN_OR_RETURN(GraphOutput out, forward(be));
  AM_RETURN_IF_ERROR(be.to_host(out.output.view()));
  return out;
}

Result<std::unique_ptr<ModelGraph>> build_graph(const jobs::JobSpec& spec, Precision precision,
                                                const ExecContext& ctx) {
  GraphBuilder build = graph_builder_for(spec.architecture);
  if (build == nullptr) {
    return unsupported("architecture " + spec.architecture + " has no graph builder yet");
  }
  // A checkpoint directory's config.json decides the architecture settings (hf_config.h).
  AM_ASSIGN_OR_RETURN(nlohmann::json config, apply_checkpoint_config(spec.model_config, spec.architecture));
  if (config == spec.model_config) return build(spec, precision, ctx);
  jobs::JobSpec from_checkpoint = spec;
  from_checkpoint.model_config = std::move(config);
  return build(from_checkpoint, precision, ctx);
}

}  // namespace am::kernels
