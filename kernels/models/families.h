// The graph builders of the architecture families (see model.h for the contract they share).
#pragma once

#include "kernels/models/model.h"

namespace am::kernels {

Result<std::unique_ptr<ModelGraph>> build_encoder_only_graph(const jobs::JobSpec& spec,
                                                             std::string_view precision,
                                                             const ExecContext& ctx);

}  // namespace am::kernels
