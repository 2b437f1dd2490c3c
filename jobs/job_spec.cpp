#include "jobs/job_spec.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "common/hash.h"
#include "jobs/catalog.h"
#include "jobs/names.h"
#include "jobs/spec_limits.h"

namespace am::jobs {
namespace {

using nlohmann::json;

Status field_error(std::string_view field, std::string_view what) {
  return invalid_argument("spec." + std::string(field) + ": " + std::string(what));
}

std::string type_of(const json& v) { return v.type_name(); }

// Looks `key` up; returns nullptr when absent. A missing required field is an error.
Result<const json*> find_field(const json& doc, std::string_view key, bool required) {
  auto it = doc.find(std::string(key));
  if (it == doc.end()) {
    if (required) return field_error(key, "missing");
    return static_cast<const json*>(nullptr);
  }
  return &*it;
}

Status read_string(const json& doc, std::string_view key, bool required, std::string& out) {
  AM_ASSIGN_OR_RETURN(const json* v, find_field(doc, key, required));
  if (v == nullptr) return Status::Ok();
  if (!v->is_string()) return field_error(key, "expected a string, got " + type_of(*v));
  out = v->get<std::string>();
  return Status::Ok();
}

template <typename Int>
Status read_int(const json& doc, std::string_view key, bool required, int64_t min, int64_t max,
                Int& out) {
  AM_ASSIGN_OR_RETURN(const json* v, find_field(doc, key, required));
  if (v == nullptr) return Status::Ok();
  if (!v->is_number_integer()) return field_error(key, "expected an integer, got " + type_of(*v));
  const bool too_big = v->is_number_unsigned() &&
                       v->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  const int64_t x = too_big ? std::numeric_limits<int64_t>::max() : v->get<int64_t>();
  if (too_big || x < min || x > max) {
    return field_error(key, "value " + v->dump() + " out of range [" + std::to_string(min) + ", " +
                                std::to_string(max) + "]");
  }
  out = static_cast<Int>(x);
  return Status::Ok();
}

// `min_exclusive` selects (min, max] instead of [min, max].
Status read_double(const json& doc, std::string_view key, bool required, double min,
                   bool min_exclusive, double max, double& out) {
  AM_ASSIGN_OR_RETURN(const json* v, find_field(doc, key, required));
  if (v == nullptr) return Status::Ok();
  if (!v->is_number()) return field_error(key, "expected a number, got " + type_of(*v));
  const double x = v->get<double>();
  const bool below = min_exclusive ? !(x > min) : !(x >= min);
  if (!std::isfinite(x) || below || x > max) {
    return field_error(key, "value " + v->dump() + " out of range " + (min_exclusive ? "(" : "[") +
                                json(min).dump() + ", " + json(max).dump() + "]");
  }
  out = x;
  return Status::Ok();
}

Status read_bool(const json& doc, std::string_view key, bool required, bool& out) {
  AM_ASSIGN_OR_RETURN(const json* v, find_field(doc, key, required));
  if (v == nullptr) return Status::Ok();
  if (!v->is_boolean()) return field_error(key, "expected a boolean, got " + type_of(*v));
  out = v->get<bool>();
  return Status::Ok();
}

Status read_seed(const json& doc, uint64_t& out) {
  AM_ASSIGN_OR_RETURN(const json* v, find_field(doc, "seed", /*required=*/true));
  if (!v->is_number_integer()) return field_error("seed", "expected an integer, got " + type_of(*v));
  if (!v->is_number_unsigned() && v->get<int64_t>() < 0) {
    return field_error("seed", "value " + v->dump() + " is negative");
  }
  out = v->get<uint64_t>();
  return Status::Ok();
}

Status read_name(const json& doc, std::string_view key, bool (*known)(std::string_view),
                 std::string_view what, std::span<const std::string_view> names, std::string& out) {
  std::string value;
  AM_RETURN_IF_ERROR(read_string(doc, key, /*required=*/true, value));
  if (!known(value)) {
    return field_error(key, "unknown " + std::string(what) + " '" + value + "' (expected one of " +
                                join_names(names) + ")");
  }
  out = std::move(value);
  return Status::Ok();
}

Status read_precision(const json& doc, bool command, Precision& out) {
  std::string value;
  AM_RETURN_IF_ERROR(read_string(doc, "precision", /*required=*/true, value));
  std::optional<Precision> p = command ? parse_precision_label(value) : parse_precision(value);
  if (!p) {
    return field_error("precision", "unknown precision '" + value + "' (expected one of " +
                                        precision_names() + ")");
  }
  out = *p;
  return Status::Ok();
}

bool is_config_scalar(const json& v) {
  if (v.is_string() || v.is_boolean() || v.is_number_integer()) return true;
  return v.is_number_float() && std::isfinite(v.get<double>());
}

// Configs are flat: values are scalars or arrays of scalars, so every architecture's builder
// reads them the same way and the canonical dump stays simple.
Status validate_model_config(const json& config) {
  if (!config.is_object()) {
    return field_error("model_config", "expected an object, got " + type_of(config));
  }
  for (const auto& [key, value] : config.items()) {
    if (key.empty()) return field_error("model_config", "empty key");
    bool ok = is_config_scalar(value);
    if (value.is_array()) {
      ok = true;
      for (const json& el : value) ok = ok && is_config_scalar(el);
    }
    if (!ok) {
      return field_error("model_config." + key,
                         "expected a finite number, string, boolean or array of those, got " +
                             value.dump());
    }
  }
  return Status::Ok();
}

}  // namespace

json to_json(const JobSpec& spec) {
  json doc = json::object();
  doc["model"] = spec.model;
  doc["architecture"] = spec.architecture;
  doc["model_config"] = spec.model_config;
  doc["scaled"] = spec.scaled;
  doc["backend"] = spec.backend;
  doc["precision"] = std::string(to_string(spec.precision));
  doc["batch"] = spec.batch;
  doc["seq_len"] = spec.seq_len;
  doc["mode"] = spec.mode;
  doc["seed"] = spec.seed;
  doc["warmup"] = spec.warmup;
  doc["min_reps"] = spec.min_reps;
  doc["max_reps"] = spec.max_reps;
  doc["min_time_s"] = spec.min_time_s;
  doc["timeout_s"] = spec.timeout_s;
  doc["memory_limit_mb"] = spec.memory_limit_mb;
  doc["threads"] = spec.threads;
  if (!spec.required_tags.empty()) doc["required_tags"] = spec.required_tags;
  if (spec.command) doc["command"] = command_to_json(*spec.command);
  if (spec.placement != Placement::kAny) doc["placement"] = std::string(to_string(spec.placement));
  return doc;
}

// The identity fields (what is run) are required; the measurement settings fall back to the
// JobSpec defaults so that a field added later does not make older documents invalid. Unknown
// keys are ignored for the same reason.
Result<JobSpec> job_spec_from_json(const json& doc) {
  if (!doc.is_object()) return invalid_argument("spec: expected an object, got " + type_of(doc));
  JobSpec s;
  AM_RETURN_IF_ERROR(read_string(doc, "model", true, s.model));
  if (s.model.empty()) return field_error("model", "empty");
  if (auto command = doc.find("command"); command != doc.end()) {
    AM_ASSIGN_OR_RETURN(CommandSpec c, command_from_json(*command));
    s.command = std::move(c);
  }
  if (s.command) {
    // A command runs no graph of ours: its architecture is the "external" label.
    AM_RETURN_IF_ERROR(read_string(doc, "architecture", true, s.architecture));
    if (s.architecture != kExternalArchitecture) {
      return field_error("architecture", "a command job's architecture is '" +
                                             std::string(kExternalArchitecture) + "', got '" + s.architecture + "'");
    }
  } else {
    AM_RETURN_IF_ERROR(read_name(doc, "architecture", is_known_architecture, "architecture",
                                 known_architectures(), s.architecture));
  }
  if (auto it = doc.find("model_config"); it != doc.end()) {
    AM_RETURN_IF_ERROR(validate_model_config(*it));
    AM_RETURN_IF_ERROR(check_model_config(*it, "spec.model_config"));
    s.model_config = *it;
  }
  AM_RETURN_IF_ERROR(read_bool(doc, "scaled", false, s.scaled));
  AM_RETURN_IF_ERROR(read_name(doc, "backend", is_known_backend, "backend", known_backends(), s.backend));
  AM_RETURN_IF_ERROR(read_precision(doc, s.command.has_value(), s.precision));
  AM_RETURN_IF_ERROR(read_int(doc, "batch", true, 1, kMaxBatch, s.batch));
  AM_RETURN_IF_ERROR(read_int(doc, "seq_len", true, 1, kMaxSeqLen, s.seq_len));
  AM_RETURN_IF_ERROR(read_name(doc, "mode", is_known_mode, "mode", known_modes(), s.mode));
  AM_RETURN_IF_ERROR(read_seed(doc, s.seed));
  AM_RETURN_IF_ERROR(read_int(doc, "warmup", false, 0, kMaxWarmup, s.warmup));
  AM_RETURN_IF_ERROR(read_int(doc, "min_reps", false, 1, kMaxReps, s.min_reps));
  AM_RETURN_IF_ERROR(read_int(doc, "max_reps", false, 1, kMaxReps, s.max_reps));
  if (s.max_reps < s.min_reps) {
    return field_error("max_reps", "value " + std::to_string(s.max_reps) + " is below min_reps " +
                                       std::to_string(s.min_reps));
  }
  AM_RETURN_IF_ERROR(read_double(doc, "min_time_s", false, 0.0, false, kMaxMinTimeS, s.min_time_s));
  AM_RETURN_IF_ERROR(read_double(doc, "timeout_s", false, 0.0, true, kMaxTimeoutS, s.timeout_s));
  AM_RETURN_IF_ERROR(read_int(doc, "memory_limit_mb", false, 0, kMaxMemoryLimitMb, s.memory_limit_mb));
  AM_RETURN_IF_ERROR(read_int(doc, "threads", false, 0, kMaxThreads, s.threads));
  if (auto tags = doc.find("required_tags"); tags != doc.end()) {
    if (!tags->is_object()) return field_error("required_tags", "expected an object of strings");
    for (const auto& [k, v] : tags->items()) {
      if (!v.is_string() || !is_valid_identifier(k) || v.get<std::string>().empty()) {
        return field_error("required_tags", "tag '" + k + "' must be an identifier with a non-empty string value");
      }
      s.required_tags[k] = v.get<std::string>();
    }
  }
  if (auto placement = doc.find("placement"); placement != doc.end()) {
    std::optional<Placement> p = placement->is_string() ? parse_placement(placement->get<std::string>())
                                                        : std::nullopt;
    if (!p) {
      return field_error("placement", "expected one of " + join_names(known_placements()) + ", got " +
                                          placement->dump());
    }
    s.placement = *p;
  }
  return s;
}

std::string compute_job_id(std::string_view run_id, const JobSpec& spec, std::string_view target) {
  // nlohmann::json objects are std::maps, so dump() is key-sorted: the canonical form.
  return job_id_of(run_id, to_json(spec).dump(), target);
}

uint64_t job_hash_of(std::string_view run_id, std::string_view canonical_spec, std::string_view target) {
  // FNV-1a runs over the bytes in order, so the pieces are hashed in turn, never joined.
  uint64_t h = fnv1a64(run_id);
  h = fnv1a64("\n", h);
  h = fnv1a64(canonical_spec, h);
  return job_hash_with_target(h, target);
}

uint64_t job_hash_with_target(uint64_t spec_hash, std::string_view target) {
  if (target.empty()) return spec_hash;
  return fnv1a64(target, fnv1a64("\ntarget ", spec_hash));
}

std::string job_id_of(std::string_view run_id, std::string_view canonical_spec, std::string_view target) {
  return hex64(job_hash_of(run_id, canonical_spec, target));
}

JobScalars scalars_of(const JobSpec& spec) { return JobScalars{spec.precision, spec.batch, spec.seq_len}; }

JobSpec with_scalars(JobSpec family, const JobScalars& scalars) {
  family.precision = scalars.precision;
  family.batch = scalars.batch;
  family.seq_len = scalars.seq_len;
  return family;
}

}  // namespace am::jobs
