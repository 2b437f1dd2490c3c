// The model catalog: one TOML file per model in jobs/models/, named <model name>.toml.
//
//   [model]                      # metadata; every key below is checked, unknown keys are errors
//   name = "bert-tiny"           # must equal the file's stem
//   architecture = "encoder-only"  # one of the eleven families (jobs/names.h)
//   family = "bert"              # model family within the architecture
//   source = "google/bert_uncased_L-2_H-128_A-2"   # where the published configuration is from
//   description = "..."          # optional
//   parameters = 4385920         # optional: parameter count of the published configuration
//
//   [config]                     # free-form: the keys the architecture's graph builder reads
//   layers = 2                   # integers, floats, strings, booleans, or arrays of those
//   ...
//
// Size keys (see is_size_key) must be positive integers (or arrays of them); when a config has
// both `hidden` and `heads`, hidden must be divisible by heads.
//
// Contract: loaders never throw; every error names the file and, where it is about the
// contents, the line and column ("models/bert-tiny.toml:9:10: ..."). Thread-safe (no shared
// state). docs/PLANS.md describes the format for people adding models.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace am::jobs {

struct ModelEntry {
  std::string name;           // catalog name, e.g. "bert-tiny"
  std::string architecture;   // family of graph builder, e.g. "encoder-only"
  std::string family;         // e.g. "bert"
  std::string source;         // origin of the published configuration (Hugging Face repo id)
  std::string description;
  int64_t parameters = 0;     // stated parameter count; 0 = not stated
  nlohmann::json config = nlohmann::json::object();  // the [config] table, flat
  std::filesystem::path file; // the file it was read from
};

// True for config keys that are sizes of the model (layer counts, widths, vocabularies,
// positions, experts): "layers", "hidden", "heads", "intermediate", "vocab", "max_positions",
// "experts", "experts_per_token", "state_size", "image_size", "dim", and any key ending in
// "_" followed by one of those ("encoder_layers", "kv_heads", "type_vocab", "head_dim").
// An override that lowers a size key below its published value marks a job as scaled.
bool is_size_key(std::string_view key);

// Checks the rules of a flat config (size keys positive; hidden % heads == 0; image_token_index
// inside the vocab). Errors name the
// key as "<prefix>.<key>: ..." (or "<prefix>: ..." for cross-key rules), without a file
// position; callers add where the config came from.
Status check_model_config(const nlohmann::json& config, std::string_view prefix = "config");

// Reads one catalog file.
Result<ModelEntry> load_model_file(const std::filesystem::path& file);

// Reads `dir`/`name`.toml. An unknown name is NotFound and suggests close names.
Result<ModelEntry> load_model(const std::filesystem::path& dir, std::string_view name);

// Every *.toml in `dir`, sorted by name. Fails on the first broken file.
Result<std::vector<ModelEntry>> load_catalog(const std::filesystem::path& dir);

// The model names in `dir` (the stems of its *.toml files), sorted; no file is parsed.
Result<std::vector<std::string>> list_models(const std::filesystem::path& dir);

}  // namespace am::jobs
