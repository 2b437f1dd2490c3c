#include "kernels/weights/checkpoint_names.h"

#include "kernels/weights/checkpoints.h"

namespace am::kernels {

Result<Tensor> read_first_of(const Checkpoint& file, const std::vector<std::string>& names, const Shape& expected) {
  for (const std::string& n : names) {
    if (file.contains(n)) return file.read_f32(n, expected);
  }
  std::string also;
  for (std::size_t i = 1; i < names.size(); ++i) also += (i > 1 ? "', '" : "") + names[i];
  return not_found("checkpoint " + file.path() + ": tensor '" + (names.empty() ? std::string() : names[0]) +
                   "' is missing" + (also.empty() ? "" : " (also looked for '" + also + "')"));
}

Result<std::optional<std::string>> checkpoint_path_from(const nlohmann::json& model_config, const std::string& family) {
  if (!model_config.is_object() || !model_config.contains(kWeightsPathKey)) return std::optional<std::string>();
  const nlohmann::json& v = model_config.at(kWeightsPathKey);
  if (!v.is_string() || v.get<std::string>().empty()) {
    return invalid_argument(family + " config: '" + kWeightsPathKey + "' must be a non-empty path string");
  }
  return std::optional<std::string>(v.get<std::string>());
}

}  // namespace am::kernels
