#include "jobs/catalog.h"

#include <algorithm>
#include <array>

#include "jobs/job_spec.h"
#include "jobs/names.h"
#include "jobs/suggest.h"
#include "jobs/toml_support.h"

namespace am::jobs {
namespace {

using nlohmann::json;

constexpr std::string_view kCatalogExtension = ".toml";

constexpr std::array<std::string_view, 11> kSizeKeyNames = {
    "layers", "hidden",            "heads",      "intermediate", "vocab", "max_positions",
    "experts", "experts_per_token", "state_size", "image_size",   "dim"};

constexpr std::array<std::string_view, 6> kModelKeys = {"name",   "architecture", "family",
                                                        "source", "description",  "parameters"};

bool is_positive_int(const json& v) { return v.is_number_integer() && v.get<int64_t>() >= 1; }

// Reads a required or optional non-empty string from the [model] table.
void read_meta_string(const toml::table& model, std::string_view key, bool required,
                      detail::ErrorList& errors, std::string& out) {
  const toml::node* node = model.get(key);
  if (node == nullptr) {
    if (required) errors.add(model, "[model] is missing '" + std::string(key) + "'");
    return;
  }
  const auto* s = node->as_string();
  if (s == nullptr) {
    errors.add(*node, "model." + std::string(key) + ": expected a string, got " +
                          std::string(detail::type_name(*node)));
    return;
  }
  if (required && s->get().empty()) {
    errors.add(*node, "model." + std::string(key) + ": must not be empty");
    return;
  }
  out = s->get();
}

void read_model_table(const toml::table& model, const std::filesystem::path& file,
                      detail::ErrorList& errors, ModelEntry& entry) {
  const std::vector<std::string> allowed(kModelKeys.begin(), kModelKeys.end());
  for (const auto& [key, value] : model) {
    if (std::find(allowed.begin(), allowed.end(), key.str()) == allowed.end()) {
      errors.add(key, "unknown key 'model." + std::string(key.str()) + "'" +
                          did_you_mean(key.str(), allowed));
    }
  }
  read_meta_string(model, "name", true, errors, entry.name);
  if (!entry.name.empty()) {
    const toml::node& node = *model.get("name");
    if (!is_valid_identifier(entry.name)) {
      errors.add(node, "model.name: '" + entry.name + "' is not a valid name (letters, digits, '.', '_', '-')");
    } else if (entry.name != file.stem().string()) {
      errors.add(node, "model.name: '" + entry.name + "' does not match the file name '" +
                           file.filename().string() + "'");
    }
  }
  read_meta_string(model, "architecture", true, errors, entry.architecture);
  if (!entry.architecture.empty() && !is_known_architecture(entry.architecture)) {
    errors.add(*model.get("architecture"), "model.architecture: unknown architecture '" +
                                               entry.architecture + "' (expected one of " +
                                               join_names(known_architectures()) + ")");
  }
  read_meta_string(model, "family", true, errors, entry.family);
  read_meta_string(model, "source", true, errors, entry.source);
  read_meta_string(model, "description", false, errors, entry.description);
  if (const toml::node* node = model.get("parameters")) {
    const auto* v = node->as_integer();
    if (v == nullptr || v->get() < 1) {
      errors.add(*node, "model.parameters: expected a positive integer, got " +
                            (v ? std::to_string(v->get()) : std::string(detail::type_name(*node))));
    } else {
      entry.parameters = v->get();
    }
  }
}

void read_config_table(const toml::table& config, detail::ErrorList& errors, ModelEntry& entry) {
  const std::size_t errors_before = errors.size();
  for (const auto& [key, value] : config) {
    std::string why;
    auto v = detail::config_value_to_json(value, why);
    if (!v) {
      errors.add(value, "config." + std::string(key.str()) + ": " + why);
      continue;
    }
    const std::string k(key.str());
    // A bad size is reported at its own value; check_model_config() on the one key says why.
    if (Status st = check_model_config(json::object({{k, *v}})); !st.ok()) {
      errors.add(value, st.message());
      continue;
    }
    entry.config[k] = std::move(*v);
  }
  // Cross-key rules are about the table, not one value in it: reported at its header.
  if (errors.size() == errors_before) {
    if (Status st = check_model_config(entry.config); !st.ok()) errors.add(config, st.message());
  }
}

}  // namespace

bool is_size_key(std::string_view key) {
  for (std::string_view s : kSizeKeyNames) {
    if (key == s) return true;
    if (key.size() > s.size() + 1 && key.ends_with(s) && key[key.size() - s.size() - 1] == '_') {
      return true;
    }
  }
  return false;
}

Status check_model_config(const json& config, std::string_view prefix) {
  const std::string p(prefix);
  if (!config.is_object()) return invalid_argument(p + ": expected a table");
  for (const auto& [key, value] : config.items()) {
    if (!is_size_key(key)) continue;
    bool ok = is_positive_int(value);
    if (value.is_array()) {
      ok = !value.empty() && std::all_of(value.begin(), value.end(), is_positive_int);
    }
    if (!ok) {
      return invalid_argument(p + "." + key +
                              ": a size must be a positive integer (or array of them), got " +
                              value.dump());
    }
  }
  auto hidden = config.find("hidden");
  auto heads = config.find("heads");
  if (hidden != config.end() && heads != config.end() && is_positive_int(*hidden) &&
      is_positive_int(*heads) && hidden->get<int64_t>() % heads->get<int64_t>() != 0) {
    return invalid_argument(p + ": hidden (" + hidden->dump() + ") is not divisible by heads (" +
                            heads->dump() + ")");
  }
  // Grouped-query attention shares each key/value head among heads / kv_heads query heads.
  auto kv_heads = config.find("kv_heads");
  if (kv_heads != config.end() && heads != config.end() && is_positive_int(*kv_heads) && is_positive_int(*heads) &&
      heads->get<int64_t>() % kv_heads->get<int64_t>() != 0) {
    return invalid_argument(p + ": heads (" + heads->dump() + ") is not divisible by kv_heads (" + kv_heads->dump() +
                            ")");
  }
  // A normalisation epsilon divides nothing by zero only when it is positive (the graphs take
  // (0, 1]); refused here rather than by every job of the model at run time.
  for (const auto& [key, value] : config.items()) {
    if (key != "norm_eps" && !(key.size() > 9 && key.compare(key.size() - 9, 9, "_norm_eps") == 0)) continue;
    if (!value.is_number() || !(value.get<double>() > 0.0 && value.get<double>() <= 1.0)) {
      return invalid_argument(p + "." + key + ": must be a number above 0 and at most 1, got " + value.dump());
    }
  }
  // A token id names a row of the embedding table: a vocabulary scaled down below it (an
  // override) must move the id too, or every job of the model fails at run time.
  auto vocab = config.find("vocab");
  auto image_token = config.find("image_token_index");
  if (vocab != config.end() && image_token != config.end() && is_positive_int(*vocab) &&
      image_token->is_number_integer() &&
      (image_token->get<int64_t>() < 0 || image_token->get<int64_t>() >= vocab->get<int64_t>())) {
    const int64_t last = vocab->get<int64_t>() - 1;
    return invalid_argument(p + ": image_token_index (" + image_token->dump() + ") is outside the vocabulary (vocab " +
                            vocab->dump() + "): it must be 0.." + std::to_string(last) +
                            (image_token->get<int64_t>() < 0 ? "" : "; with a smaller vocab, set image_token_index below it too"));
  }
  return Status::Ok();
}

Result<ModelEntry> load_model_file(const std::filesystem::path& file) {
  try {
    AM_ASSIGN_OR_RETURN(toml::table root, detail::parse_toml_file(file));
    detail::ErrorList errors(file);
    ModelEntry entry;
    entry.file = file;
    for (const auto& [key, value] : root) {
      if (key.str() != "model" && key.str() != "config") {
        errors.add(key, "unknown top-level key '" + std::string(key.str()) +
                            "' (a catalog file has a [model] and a [config] table)");
      } else if (!value.is_table()) {
        errors.add(value, "'" + std::string(key.str()) + "' must be a table, got " +
                              std::string(detail::type_name(value)));
      }
    }
    if (const toml::table* model = root["model"].as_table()) {
      read_model_table(*model, file, errors, entry);
    } else if (!root.contains("model")) {
      errors.add_unplaced("missing [model] table");
    }
    if (const toml::table* config = root["config"].as_table()) {
      read_config_table(*config, errors, entry);
    } else if (!root.contains("config")) {
      errors.add_unplaced("missing [config] table");
    }
    AM_RETURN_IF_ERROR(errors.status());
    return entry;
  } catch (const std::exception& e) {
    return internal_error(file.string() + ": " + e.what());
  }
}

Result<std::vector<std::string>> list_models(const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return not_found("model catalog directory '" + dir.string() +
                     "' does not exist (set ACCELMATRIX_CATALOG to the jobs/models folder)");
  }
  std::vector<std::string> names;
  std::filesystem::directory_iterator it(dir, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    const std::filesystem::path& p = it->path();
    if (p.extension() == kCatalogExtension && it->is_regular_file(ec)) {
      names.push_back(p.stem().string());
    }
  }
  if (ec) return io_error("cannot list model catalog '" + dir.string() + "': " + ec.message());
  std::sort(names.begin(), names.end());
  return names;
}

Result<ModelEntry> load_model(const std::filesystem::path& dir, std::string_view name) {
  AM_ASSIGN_OR_RETURN(std::vector<std::string> names, list_models(dir));
  // Looking the name up in the listing (rather than opening dir/name.toml) also keeps a name
  // such as "../x" from reaching outside the catalog.
  if (std::find(names.begin(), names.end(), name) == names.end()) {
    return not_found("unknown model '" + std::string(name) + "' in catalog '" + dir.string() +
                     "'" + did_you_mean(name, names));
  }
  return load_model_file(dir / (std::string(name) + std::string(kCatalogExtension)));
}

Result<std::vector<ModelEntry>> load_catalog(const std::filesystem::path& dir) {
  AM_ASSIGN_OR_RETURN(std::vector<std::string> names, list_models(dir));
  std::vector<ModelEntry> entries;
  entries.reserve(names.size());
  for (const std::string& name : names) {
    AM_ASSIGN_OR_RETURN(ModelEntry entry,
                        load_model_file(dir / (name + std::string(kCatalogExtension))));
    entries.push_back(std::move(entry));
  }
  return entries;
}

}  // namespace am::jobs
