#include "kernels/weights/checkpoint.h"

#include "kernels/weights/mapped_file.h"

#include <algorithm>
#include <filesystem>
#include <set>
#include <utility>

namespace am::kernels {
namespace {

namespace fs = std::filesystem;

// diffusers names its weights after the pipeline component, not "model".
constexpr const char* kDiffusersIndexFile = "diffusion_pytorch_model.safetensors.index.json";
constexpr const char* kDiffusersWeightsFile = "diffusion_pytorch_model.safetensors";

// The largest config.json or index file read. Real ones are kilobytes (the index of a model with
// thousands of tensors, a few hundred KiB); a parsed document takes tens of times its text, so
// an unbounded file could take gigabytes before any check ran.
constexpr std::size_t kMaxCheckpointJsonBytes = 8u << 20;

// A JSON document from a file, without exceptions; InvalidArgument naming the file when it is
// not JSON, not an object or larger than kMaxCheckpointJsonBytes.
Result<nlohmann::json> read_json_object(const fs::path& file) {
  // Mapped, not streamed: MappedFile refuses what is not a regular file (a FIFO would block).
  AM_ASSIGN_OR_RETURN(MappedFile text, MappedFile::open(file.string()));
  if (text.size() > kMaxCheckpointJsonBytes) {
    return invalid_argument(file.string() + " is " + std::to_string(text.size()) + " bytes; a checkpoint's JSON "
                            "files are read up to " + std::to_string(kMaxCheckpointJsonBytes) + " bytes");
  }
  nlohmann::json doc = nlohmann::json::parse(text.data(), text.data() + text.size(), nullptr, false);
  if (doc.is_discarded()) return invalid_argument(file.string() + " is not valid JSON");
  if (!doc.is_object()) return invalid_argument(file.string() + " is not a JSON object");
  return doc;
}

bool exists_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

}  // namespace

bool is_checkpoint_directory(const std::string& path) {
  std::error_code ec;
  return fs::is_directory(path, ec);
}

Result<std::optional<nlohmann::json>> read_checkpoint_config(const std::string& path) {
  if (!is_checkpoint_directory(path)) return std::optional<nlohmann::json>();
  const fs::path file = fs::path(path) / kCheckpointConfigFile;
  if (!exists_file(file)) return std::optional<nlohmann::json>();
  AM_ASSIGN_OR_RETURN(nlohmann::json doc, read_json_object(file));
  return std::optional<nlohmann::json>(std::move(doc));
}

Status Checkpoint::add_shard(SafetensorsFile file) {
  const std::size_t index = shards_.size();
  for (const SafetensorsEntry& e : file.entries()) {
    const auto [it, inserted] = where_.emplace(e.name, index);
    if (!inserted) {
      return invalid_argument("checkpoint " + path_ + ": tensor '" + e.name + "' is in two shards, " +
                              shards_[it->second].path() + " and " + file.path());
    }
  }
  shards_.push_back(std::move(file));
  return Status::Ok();
}

Result<Checkpoint> Checkpoint::open(const std::string& path) {
  Checkpoint c;
  c.path_ = path;
  if (!is_checkpoint_directory(path)) {
    AM_ASSIGN_OR_RETURN(SafetensorsFile file, SafetensorsFile::open(path));
    AM_RETURN_IF_ERROR(c.add_shard(std::move(file)));
    return c;
  }
  c.directory_ = true;
  const fs::path dir(path);
  AM_ASSIGN_OR_RETURN(c.config_, read_checkpoint_config(path));

  fs::path index = dir / kCheckpointIndexFile;
  fs::path single = dir / kCheckpointWeightsFile;
  if (!exists_file(index) && !exists_file(single)) {
    index = dir / kDiffusersIndexFile;
    single = dir / kDiffusersWeightsFile;
  }
  if (!exists_file(index)) {
    if (!exists_file(single)) {
      return not_found("checkpoint " + path + ": the directory holds neither " + kCheckpointWeightsFile + " nor " +
                       kCheckpointIndexFile);
    }
    AM_ASSIGN_OR_RETURN(SafetensorsFile file, SafetensorsFile::open(single.string()));
    AM_RETURN_IF_ERROR(c.add_shard(std::move(file)));
    return c;
  }

  AM_ASSIGN_OR_RETURN(nlohmann::json doc, read_json_object(index));
  const std::string where = index.string() + ": ";
  if (!doc.contains("weight_map") || !doc.at("weight_map").is_object() || doc.at("weight_map").empty()) {
    return invalid_argument(where + "'weight_map' must be a non-empty object {tensor: shard file}");
  }
  const nlohmann::json& map = doc.at("weight_map");
  std::set<std::string> shard_names;
  for (const auto& [tensor, shard] : map.items()) {
    if (!shard.is_string()) return invalid_argument(where + "the shard of tensor '" + tensor + "' is not a string");
    const std::string name = shard.get<std::string>();
    // Shards live beside the index: a name that leaves the directory is refused.
    if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..") {
      return invalid_argument(where + "shard '" + name + "' of tensor '" + tensor +
                              "' is not a file name inside the checkpoint directory");
    }
    shard_names.insert(name);
  }
  std::map<std::string, std::size_t> shard_index;
  for (const std::string& name : shard_names) {
    const fs::path file = dir / name;
    if (!exists_file(file)) return not_found(where + "shard '" + name + "' is missing");
    AM_ASSIGN_OR_RETURN(SafetensorsFile shard, SafetensorsFile::open(file.string()));
    shard_index[name] = c.shards_.size();
    AM_RETURN_IF_ERROR(c.add_shard(std::move(shard)));
  }
  for (const auto& [tensor, shard] : map.items()) {
    const auto it = c.where_.find(tensor);
    const std::size_t want = shard_index.at(shard.get<std::string>());
    if (it == c.where_.end() || it->second != want) {
      return invalid_argument(where + "tensor '" + tensor + "' is mapped to shard '" + shard.get<std::string>() +
                              "', which does not hold it");
    }
  }
  return c;
}

const SafetensorsEntry* Checkpoint::find(std::string_view name) const {
  const auto it = where_.find(name);
  return it == where_.end() ? nullptr : shards_[it->second].find(name);
}

Result<Tensor> Checkpoint::read_f32(std::string_view name, const Shape& expected) const {
  const auto it = where_.find(name);
  if (it == where_.end()) return not_found("checkpoint " + path_ + ": tensor '" + std::string(name) + "' is missing");
  return shards_[it->second].read_f32(name, expected);
}

std::vector<std::string> Checkpoint::names() const {
  std::vector<std::string> out;
  out.reserve(where_.size());
  for (const auto& [name, shard] : where_) out.push_back(name);
  return out;
}

}  // namespace am::kernels
