// The graph builders of the architecture families (see model.h for the contract they share).
#pragma once

#include "kernels/models/model.h"

namespace am::kernels {

Result<std::unique_ptr<ModelGraph>> build_encoder_only_graph(const jobs::JobSpec& spec,
                                                             Precision precision,
                                                             const ExecContext& ctx);

// vision.cpp (arch-vision)
Result<std::unique_ptr<ModelGraph>> build_vision_graph(const jobs::JobSpec& spec, Precision precision,
                                                       const ExecContext& ctx);
// state_space.cpp (arch-vision)
Result<std::unique_ptr<ModelGraph>> build_state_space_graph(const jobs::JobSpec& spec, Precision precision,
                                                            const ExecContext& ctx);
// vision_text.cpp (arch-vision)
Result<std::unique_ptr<ModelGraph>> build_vision_encoder_text_decoder_graph(const jobs::JobSpec& spec,
                                                                            Precision precision,
                                                                            const ExecContext& ctx);
// multimodal_llava.cpp (arch-vision)
Result<std::unique_ptr<ModelGraph>> build_multimodal_graph(const jobs::JobSpec& spec, Precision precision,
                                                           const ExecContext& ctx);
// diffusion.cpp (arch-vision)
Result<std::unique_ptr<ModelGraph>> build_diffusion_graph(const jobs::JobSpec& spec, Precision precision,
                                                          const ExecContext& ctx);

Result<std::unique_ptr<ModelGraph>> build_encoder_decoder_graph(const jobs::JobSpec& spec, Precision precision,
                                                             const ExecContext& ctx);
Result<std::unique_ptr<ModelGraph>> build_speech_graph(const jobs::JobSpec& spec, Precision precision,
                                                    const ExecContext& ctx);
Result<std::unique_ptr<ModelGraph>> build_mixture_of_experts_graph(const jobs::JobSpec& spec, Precision precision,
                                                                const ExecContext& ctx);
Result<std::unique_ptr<ModelGraph>> build_rag_graph(const jobs::JobSpec& spec, Precision precision,
                                                 const ExecContext& ctx);
Result<std::unique_ptr<ModelGraph>> build_decoder_only_graph(const jobs::JobSpec& spec,
                                                             Precision precision,
                                                             const ExecContext& ctx);

}  // namespace am::kernels
