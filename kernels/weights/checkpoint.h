// A model checkpoint as Hugging Face stores one: either a single .safetensors file, or a
// directory holding config.json and the weights as model.safetensors, or as shards listed by
// model.safetensors.index.json (diffusers' diffusion_pytorch_model.* names are accepted too).
//
// Contract:
//   - open() of a regular file reads it as one safetensors file; there is no config.json.
//   - open() of a directory reads config.json when present (config() non-null), then the weights:
//     the index when present, else the single file. An index is {"weight_map": {tensor: shard}}
//     (other keys ignored); every shard is a plain file name inside the directory (no '/', no
//     ".."), opened and validated once; every tensor the map names must be in its shard, and no
//     tensor may be in two shards. Errors name the directory, the shard and the tensor: NotFound
//     when no weights file is there, InvalidArgument for a malformed index or config.json.
//   - read_f32() reads a tensor from whichever shard holds it, converting F16 / BF16 to f32
//     (SafetensorsFile::read_f32: NotFound, InvalidArgument for a shape, Unsupported for a dtype,
//     each naming the tensor).
//   - Immutable after open(); concurrent reads are safe. Move-only.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "kernels/tensor.h"
#include "kernels/weights/safetensors.h"

namespace am::kernels {

inline constexpr const char* kCheckpointConfigFile = "config.json";
inline constexpr const char* kCheckpointIndexFile = "model.safetensors.index.json";
inline constexpr const char* kCheckpointWeightsFile = "model.safetensors";

class Checkpoint {
 public:
  Checkpoint() = default;
  Checkpoint(Checkpoint&&) noexcept = default;
  Checkpoint& operator=(Checkpoint&&) noexcept = default;

  static Result<Checkpoint> open(const std::string& path);

  // The path given to open() (the file, or the directory).
  const std::string& path() const { return path_; }
  bool is_directory() const { return directory_; }
  // config.json of a directory checkpoint; null for a single file or a directory without one.
  const nlohmann::json* config() const { return config_ ? &*config_ : nullptr; }
  std::size_t shard_count() const { return shards_.size(); }

  bool contains(std::string_view name) const { return find(name) != nullptr; }
  const SafetensorsEntry* find(std::string_view name) const;
  Result<Tensor> read_f32(std::string_view name, const Shape& expected) const;
  // Every tensor name, sorted.
  std::vector<std::string> names() const;

 private:
  Status add_shard(SafetensorsFile file);

  std::string path_;
  bool directory_ = false;
  std::optional<nlohmann::json> config_;
  std::vector<SafetensorsFile> shards_;
  std::map<std::string, std::size_t, std::less<>> where_;  // tensor name -> shard index
};

// True when `path` names a directory (a checkpoint directory rather than a file).
bool is_checkpoint_directory(const std::string& path);
// config.json of the checkpoint directory `path`: nullopt when `path` is a file or the directory
// has none; InvalidArgument naming the file when it is not a JSON object.
Result<std::optional<nlohmann::json>> read_checkpoint_config(const std::string& path);

}  // namespace am::kernels
