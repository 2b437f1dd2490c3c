// A checkpoint directory's Hugging Face config.json as the catalog's [config] keys.
//
// When a job's model_config names a checkpoint directory (weights_path) that holds config.json,
// the architecture comes from that file, as transformers' from_pretrained() takes it: every
// setting the file determines (layer counts, widths, heads, vocabulary, norm eps, RoPE theta,
// tied embeddings, activations, ...) replaces the catalog's value, with transformers' default for
// a key the file omits. Run settings the file does not hold (decode_steps, image crops, frames
// measured, ...) stay as the plan gives them.
//
// Contract:
//   - apply_checkpoint_config() returns model_config unchanged when there is no weights_path, when
//     it names a file, or when the directory has no config.json; otherwise model_config with the
//     file's settings written over it. The model_type (diffusers: _class_name) picks the reader;
//     it must belong to `architecture` (InvalidArgument naming both otherwise).
//   - Every problem names the config.json key: InvalidArgument for a malformed value (wrong type,
//     out of range); Unsupported for a setting our graph cannot honour (e.g. 'rope_scaling',
//     'do_stable_layer_norm', 'enable_fusion'), and for a model_type with no reader here —
//     never a silent fallback to the catalog.
//   - hf_config_to_catalog() is the translation itself, for tests: config.json -> the catalog
//     keys it determines (without merging).
//   - Pure functions of their inputs and the file; thread-safe.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace am::kernels {

Result<nlohmann::json> apply_checkpoint_config(const nlohmann::json& model_config, const std::string& architecture);

// `where` names the file in messages (e.g. "/ckpt/config.json").
Result<nlohmann::json> hf_config_to_catalog(const nlohmann::json& config, const std::string& architecture,
                                            const std::string& where);

}  // namespace am::kernels
