// Model weights from Hugging Face safetensors checkpoints: the model_config key that names one.
// Each family that loads checkpoints maps the file's tensor names onto its own graph beside its
// builder (kernels/models/*_checkpoint.h); this layer knows files, not families.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "jobs/job_spec.h"

namespace am::kernels {

// The model_config key naming a checkpoint (jobs::kWeightsPathKey); absent means seeded synthetic
// weights.
inline constexpr const char* kWeightsPathKey = jobs::kWeightsPathKey;
// The path under kWeightsPathKey, nullopt when absent; InvalidArgument naming `family` when it
// is not a non-empty string.
Result<std::optional<std::string>> checkpoint_path_from(const nlohmann::json& model_config, const std::string& family);

}  // namespace am::kernels
