#include "jobs/plan.h"
#include "jobs/spec_family.h"
#include "jobs/spec_limits.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include "common/hash.h"
#include "common/u64_set.h"
#include "jobs/catalog.h"
#include "jobs/names.h"
#include "jobs/plan_commands.h"
#include "jobs/plan_settings.h"
#include "jobs/selftest_models.h"
#include "jobs/suggest.h"
#include "jobs/toml_support.h"

#ifndef ACCELMATRIX_SOURCE_DIR
#error "ACCELMATRIX_SOURCE_DIR must be defined by the build (jobs/CMakeLists.txt)"
#endif

namespace am::jobs {
namespace {

using detail::ErrorList;
using detail::Placed;
using detail::PlanSettings;
using nlohmann::json;

// A plan may expand to at most `[plan] max_jobs` jobs (docs/PLANS.md): by default a million, a
// size the coordinator is measured at (bench/bench_scale, docs/SCALE.md); beyond it a stray list
// of hundreds of sizes would flood the store before anyone noticed. A plan may raise its own
// limit up to kMaxJobsLimit.
constexpr int64_t kDefaultMaxJobsPerPlan = 1'000'000;
constexpr int64_t kMaxJobsLimit = 100'000'000;
// How many combinations a plan's entries may list in all, against its cap: entries of one model
// may overlap (a job listed twice runs once), but not without bound (plan.cpp, load_plan_impl).
constexpr int64_t kOverlapFactor = 4;

// Derived seeds keep to 53 bits so they survive every JSON reader (doubles) and SQLite (int64).
constexpr int kDerivedSeedBits = 53;
constexpr uint64_t kDerivedSeedMask = (uint64_t{1} << kDerivedSeedBits) - 1;

constexpr const char* kCatalogEnv = "ACCELMATRIX_CATALOG";

const std::vector<std::string> kRootKeys = {"plan", "defaults", "models", "commands"};
const std::vector<std::string> kPlanKeys = {"name", "description", "mode", "seed", "time_budget_s", "max_jobs"};

struct PlanHeader {
  std::string name;
  std::string description;
  std::string mode = kModeBoth;
  int64_t seed = 0;
  double time_budget_s = 0;
  int64_t max_jobs = kDefaultMaxJobsPerPlan;
};

// One [[models]] entry after parsing, before the catalog is consulted.
struct ModelRequest {
  std::string name;
  const toml::node* name_node = nullptr;
  const toml::table* table = nullptr;
  const toml::table* overrides = nullptr;
  PlanSettings settings;
  bool ok = true;
};

void report_unknown_key(const toml::key& key, std::string_view table,
                        const std::vector<std::string>& allowed, ErrorList& errors) {
  std::string msg = "unknown key '" + std::string(key.str()) + "' in " + std::string(table);
  std::string hint = did_you_mean(key.str(), allowed);
  if (hint.empty()) {
    msg += " (allowed: ";
    for (std::size_t i = 0; i < allowed.size(); ++i) msg += (i ? ", " : "") + allowed[i];
    msg += ")";
  } else {
    msg += hint;
  }
  errors.add(key, msg);
}

PlanHeader read_plan_table(const toml::table& t, ErrorList& errors) {
  PlanHeader h;
  for (const auto& [key, value] : t) {
    const std::string_view k = key.str();
    if (k == "name") {
      if (detail::read_string("plan.name", value, errors, h.name) && !is_valid_identifier(h.name)) {
        errors.add(value, "plan.name: '" + h.name +
                              "' is not a valid run name (1-64 of letters, digits, '.', '_', '-')");
      }
    } else if (k == "description") {
      detail::read_string("plan.description", value, errors, h.description);
    } else if (k == "mode") {
      std::string mode;
      if (detail::read_string("plan.mode", value, errors, mode)) {
        if (is_known_mode(mode)) {
          h.mode = mode;
        } else {
          errors.add(value, "unknown mode '" + mode + "' (expected one of " +
                                join_names(known_modes()) + ")");
        }
      }
    } else if (k == "seed") {
      detail::read_integer("plan.seed", value, 0, std::numeric_limits<int64_t>::max(), errors, h.seed);
    } else if (k == "time_budget_s") {
      detail::read_number("plan.time_budget_s", value, 0.0, false,
                          std::numeric_limits<double>::max(), errors, h.time_budget_s);
    } else if (k == "max_jobs") {
      detail::read_integer("plan.max_jobs", value, 1, kMaxJobsLimit, errors, h.max_jobs);
    } else {
      report_unknown_key(key, "[plan]", kPlanKeys, errors);
    }
  }
  if (!t.contains("name")) errors.add(t, "[plan] is missing 'name'");
  return h;
}

PlanSettings read_defaults_table(const toml::table& t, ErrorList& errors) {
  PlanSettings s = detail::builtin_settings();
  for (const auto& [key, value] : t) {
    if (!detail::read_setting("defaults", key.str(), value, s, errors)) {
      report_unknown_key(key, "[defaults]", detail::setting_keys(), errors);
    }
  }
  return s;
}

ModelRequest read_model_table(const toml::table& t, std::size_t index, const PlanSettings& defaults,
                              ErrorList& errors) {
  ModelRequest m;
  m.table = &t;
  m.settings = defaults;
  const std::string label = "models[" + std::to_string(index) + "]";
  std::vector<std::string> allowed = {"name", "overrides"};
  allowed.insert(allowed.end(), detail::setting_keys().begin(), detail::setting_keys().end());
  const std::size_t errors_before = errors.size();
  for (const auto& [key, value] : t) {
    const std::string_view k = key.str();
    if (k == "name") {
      m.name_node = &value;
      detail::read_string(label + ".name", value, errors, m.name);
    } else if (k == "overrides") {
      m.overrides = value.as_table();
      if (m.overrides == nullptr) {
        errors.add(value, label + ".overrides: expected a table" + std::string(", got ") +
                              std::string(detail::type_name(value)));
      }
    } else if (!detail::read_setting(label, k, value, m.settings, errors)) {
      report_unknown_key(key, "[[models]]", allowed, errors);
    }
  }
  if (m.name_node == nullptr) errors.add(t, "[[models]] entry is missing 'name'");
  m.ok = errors.size() == errors_before;
  return m;
}

enum class ValueKind { kInteger, kFloat, kString, kBoolean, kOther };

ValueKind kind_of(const json& v) {
  if (v.is_number_integer()) return ValueKind::kInteger;
  if (v.is_number_float()) return ValueKind::kFloat;
  if (v.is_string()) return ValueKind::kString;
  if (v.is_boolean()) return ValueKind::kBoolean;
  return ValueKind::kOther;
}

// An override keeps the catalog value's type; an integer is accepted where a float is published
// (norm_eps = 1 means 1.0) and converted so the spec's config stays uniformly typed.
std::optional<json> coerce_like(const json& published, const json& value) {
  const ValueKind want = kind_of(published);
  const ValueKind have = kind_of(value);
  if (want == ValueKind::kFloat && have == ValueKind::kInteger) return json(value.get<double>());
  if (want != ValueKind::kOther && want == have) return value;
  return std::nullopt;
}

std::optional<json> coerce_override(const json& published, const json& value) {
  if (!published.is_array()) return value.is_array() ? std::nullopt : coerce_like(published, value);
  if (!value.is_array()) return std::nullopt;
  if (published.empty()) return value;
  json out = json::array();
  for (const json& el : value) {
    auto c = coerce_like(published.front(), el);
    if (!c) return std::nullopt;
    out.push_back(std::move(*c));
  }
  return out;
}

bool is_smaller(const json& published, const json& value) {
  if (published.is_number_integer() && value.is_number_integer()) {
    return value.get<int64_t>() < published.get<int64_t>();
  }
  if (published.is_array() && value.is_array()) {
    if (value.size() < published.size()) return true;
    for (std::size_t i = 0; i < published.size(); ++i) {
      if (is_smaller(published[i], value[i])) return true;
    }
  }
  return false;
}

std::string describe(ValueKind k) {
  switch (k) {
    case ValueKind::kInteger: return "an integer";
    case ValueKind::kFloat: return "a number";
    case ValueKind::kString: return "a string";
    case ValueKind::kBoolean: return "a boolean";
    case ValueKind::kOther: break;
  }
  return "an array";
}

// Applies [models.overrides] on top of the catalog config. Returns false when any override is
// wrong (each problem is reported at its own line).
bool apply_overrides(const ModelRequest& m, const ModelEntry& entry, ErrorList& errors,
                     json& config, bool& scaled) {
  config = entry.config;
  scaled = false;
  if (m.overrides == nullptr) return true;
  std::vector<std::string> config_keys;
  for (const auto& [k, v] : entry.config.items()) config_keys.push_back(k);
  bool ok = true;
  std::vector<std::string> refused;   // overridden keys whose value was refused
  for (const auto& [key, value] : *m.overrides) {
    const std::string k(key.str());
    // A checkpoint may be named for any model: its weights (and, for a Hugging Face directory,
    // its config.json) replace the seeded ones on the worker.
    if (k == kWeightsPathKey) {
      if (!value.is_string() || value.as_string()->get().empty()) {
        errors.add(value, std::string("override '") + kWeightsPathKey +
                              "': expected a non-empty path string (a .safetensors file or a checkpoint directory)");
        ok = false;
        refused.push_back(k);
        continue;
      }
      config[k] = value.as_string()->get();
      continue;
    }
    auto published = entry.config.find(k);
    if (published == entry.config.end()) {
      std::string hint = did_you_mean(k, config_keys);
      if (hint.empty()) {
        hint = " (its config keys are: ";
        for (std::size_t i = 0; i < config_keys.size(); ++i) hint += (i ? ", " : "") + config_keys[i];
        hint += ")";
      }
      errors.add(key, "override '" + k + "' is not a config key of model '" + entry.name + "'" + hint);
      ok = false;
      refused.push_back(k);
      continue;
    }
    std::string why;
    auto converted = detail::config_value_to_json(value, why);
    std::optional<json> coerced = converted ? coerce_override(*published, *converted) : std::nullopt;
    if (!coerced) {
      const std::string expected = published->is_array()
                                       ? "an array like the catalog's " + published->dump()
                                       : describe(kind_of(*published)) + " like the catalog's " +
                                             published->dump();
      errors.add(value, "override '" + k + "': expected " + expected + ", got " +
                            std::string(detail::type_name(value)));
      ok = false;
      refused.push_back(k);
      continue;
    }
    if (is_size_key(k)) {
      const json probe = json::object({{k, *coerced}});
      if (Status st = check_model_config(probe); !st.ok()) {
        errors.add(value, "override '" + k + "': a size must be a positive integer, got " +
                              coerced->dump());
        ok = false;
        refused.push_back(k);
        continue;
      }
      if (is_smaller(*published, *coerced)) scaled = true;
    }
    config[k] = std::move(*coerced);
  }
  // The cross-key rules on the overrides that were accepted, beside any refused above: every
  // problem at once (hidden = 129 was reported only after vocab = 0 was fixed). A refused key
  // is left out of them: the catalog's value it would be judged by is one the plan replaced.
  json judged = config;
  for (const std::string& k : refused) judged.erase(k);
  if (Status st = check_model_config(judged); !st.ok()) {
    errors.add(*m.overrides, "model '" + entry.name + "' with these overrides: " + st.message());
    return false;
  }
  return ok;
}

// The seed names the synthetic weights and inputs. It depends on the plan seed and the model
// (name and effective config) only, not on backend, precision or shape: every job of one model
// then works on the same numbers, so f32 vs q8_0 or cpu vs vulkan compare like with like, and a
// job keeps its seed when other lists in the plan change.
uint64_t derive_seed(int64_t plan_seed, const std::string& model, const json& config) {
  std::string identity = std::to_string(plan_seed);
  identity += '\n';
  identity += model;
  identity += '\n';
  identity += config.dump();
  return fnv1a64(identity) & kDerivedSeedMask;
}

// `check_positions`: whether seq_len is checked against the config's max_positions (not when
// the plan tried to override max_positions and the override was refused: the limit checked would
// be one the plan did not mean).
// max_reps below min_reps, said at whichever of the two the file sets (the same text for the
// defaults and every model that inherits them: ErrorList says it once).
bool check_reps(const PlanSettings& s, ErrorList& errors) {
  if (s.max_reps.value >= s.min_reps.value) return true;
  const toml::source_region& where = s.max_reps.where.begin.line > 0 ? s.max_reps.where : s.min_reps.where;
  errors.add(where, "max_reps (" + std::to_string(s.max_reps.value) + ") is below min_reps (" +
                        std::to_string(s.min_reps.value) + ")");
  return false;
}

bool check_settings(const ModelRequest& m, const json& config, ErrorList& errors, bool check_positions = true) {
  const PlanSettings& s = m.settings;
  bool ok = check_reps(s, errors);
  auto max_positions = config.find("max_positions");
  if (check_positions && max_positions != config.end() && max_positions->is_number_integer()) {
    const int64_t limit = max_positions->get<int64_t>();
    for (const Placed<int64_t>& len : s.seq_len.value) {
      if (len.value > limit) {
        // A built-in default seq_len has no line of its own: said at the model's overrides (which
        // set the limit it passes) or its table.
        const toml::source_region& where =
            len.where.begin.line > 0 ? len.where
            : m.overrides != nullptr ? m.overrides->source()
            : m.table != nullptr     ? m.table->source()
                                     : len.where;
        errors.add(where, "seq_len " + std::to_string(len.value) + " exceeds max_positions " +
                              std::to_string(limit) + " of model '" + m.name + "'");
        ok = false;
      }
    }
  }
  return ok;
}

class Expander {
 public:
  // `run_id`: what the job ids hash (the header's name when empty).
  Expander(const PlanHeader& header, std::string_view run_id, ErrorList& errors)
      : header_(header), run_id_(run_id.empty() ? header.name : std::string(run_id)), errors_(errors) {}

  void expand(const ModelRequest& m, const ModelEntry& entry, const json& config, bool scaled) {
    // Each list's distinct values, in the order first listed: a value listed again makes only
    // jobs already made, and a plan of 250 copies of one value per list looped 15 million times
    // (0.6 µs each) to make one job.
    PlanSettings distinct = m.settings;
    const auto dedupe = [](auto& list) {
      std::set<decltype(list.value.front().value)> seen;
      auto& v = list.value;
      v.erase(std::remove_if(v.begin(), v.end(), [&](const auto& x) { return !seen.insert(x.value).second; }), v.end());
    };
    dedupe(distinct.backends);
    dedupe(distinct.precisions);
    dedupe(distinct.batch);
    dedupe(distinct.seq_len);
    const PlanSettings& s = distinct;
    const uint64_t seed = derive_seed(header_.seed, entry.name, config);
    // Room for this model's jobs at once (a JobSpec moved per doubling was a tenth of a million-job
    // expansion), within the plan's cap.
    const std::size_t wanted = std::min<std::size_t>(
        jobs_.size() + s.backends.value.size() * s.precisions.value.size() * s.batch.value.size() * s.seq_len.value.size(),
        static_cast<std::size_t>(std::max<int64_t>(header_.max_jobs, 0)));
    if (wanted > jobs_.capacity()) jobs_.reserve(std::max(wanted, jobs_.capacity() * 2));
    const std::string what = "model '" + m.name + "'";
    for (const auto& backend : s.backends.value) {
      // Within one backend the jobs differ only in precision, batch and seq_len (every other
      // field is set alike below): one family, found for the first and handed to the rest
      // instead of comparing each job's spec (its model config among them) with it.
      const SpecTemplate* family = nullptr;
      for (const auto& precision : s.precisions.value) {
        for (const auto& batch : s.batch.value) {
          for (const auto& seq_len : s.seq_len.value) {
            JobSpec spec;
            spec.model = entry.name;
            spec.architecture = entry.architecture;
            spec.model_config = config;
            spec.scaled = scaled;
            spec.backend = backend.value;
            spec.precision = precision.value;
            spec.batch = static_cast<int>(batch.value);
            spec.seq_len = static_cast<int>(seq_len.value);
            spec.mode = header_.mode;
            spec.seed = seed;
            spec.warmup = static_cast<int>(s.warmup.value);
            spec.min_reps = static_cast<int>(s.min_reps.value);
            spec.max_reps = static_cast<int>(s.max_reps.value);
            spec.min_time_s = s.min_time_s.value;
            spec.timeout_s = s.timeout_s.value;
            spec.memory_limit_mb = s.memory_limit_mb.value;
            spec.threads = static_cast<int>(s.threads.value);
            spec.required_tags = s.tags.value;
            spec.placement = s.placement.value;
            if (!add_checked(std::move(spec), *m.table, what, &family)) return;
          }
        }
      }
    }
  }

  // One [[commands]] entry is one job; `where` is its table, for messages.
  void add_command(JobSpec spec, const toml::node& where) {
    spec.seed = 0;   // a command brings its own inputs
    const std::string what = "command '" + spec.command->name + "'";
    add_checked(std::move(spec), where, what);
  }

  std::vector<PlannedJob> take() { return std::move(jobs_); }

 private:
  // `family` (optional): the template of spec's family when the caller knows it (*family set),
  // else found here and stored there for the caller's next job of the same family.
  bool add_checked(JobSpec spec, const toml::node& where, const std::string& what,
                   const SpecTemplate** family_hint = nullptr) {
    // The plan checks above should make this unreachable; it guarantees that a plan can never
    // hand the scheduler a spec a worker would refuse. A spec is checked whole (through its JSON
    // form, as a worker reads it) once per family; the other jobs of the family differ only in
    // precision (an enum value), batch and seq_len, whose ranges are checked here — any doubt and
    // the whole check runs, for its message. Ids are hashed from the family's canonical template
    // (jobs/spec_family.h): a million-job plan expands in seconds, not minutes (docs/SCALE.md).
    bool new_family = false;
    const SpecTemplate& family =
        family_hint != nullptr && *family_hint != nullptr ? **family_hint : templates_.of(spec, &new_family);
    if (family_hint != nullptr) *family_hint = &family;
    const bool scalars_in_range = spec.batch >= 1 && spec.batch <= kMaxBatch && spec.seq_len >= 1 &&
                                  spec.seq_len <= kMaxSeqLen;
    if (new_family || spec.command || !scalars_in_range) {
      if (auto checked = job_spec_from_json(to_json(spec)); !checked.ok()) {
        errors_.add(where, what + " expands to an invalid job: " + checked.status().message());
        return false;
      }
    }
    const uint64_t id_value = templates_.id_hash(run_id_, family, scalars_of(spec));
    if (!seen_.insert(id_value)) return true;  // the same job listed twice runs once
    if (static_cast<int64_t>(jobs_.size()) >= header_.max_jobs) {
      errors_.add_unplaced("plan expands to more than " + std::to_string(header_.max_jobs) +
                           " jobs (plan.max_jobs" +
                           (header_.max_jobs == kDefaultMaxJobsPerPlan ? std::string(", the default") : std::string()) +
                           "); raise [plan] max_jobs (at most " + std::to_string(kMaxJobsLimit) +
                           ") or split it into smaller plans");
      return false;
    }
    int32_t& ordinal = family_ordinals_[&family];
    if (ordinal == 0) ordinal = static_cast<int32_t>(family_ordinals_.size());   // 1-based while stored
    jobs_.push_back(PlannedJob{hex64(id_value), std::move(spec), std::string(), ordinal - 1});
    return true;
  }

  const PlanHeader& header_;
  std::string run_id_;
  ErrorList& errors_;
  U64Set seen_;   // the ids as numbers (a set of a million id strings took two seconds)
  std::vector<PlannedJob> jobs_;
  SpecTemplates templates_;   // a family met before was checked whole then
  std::unordered_map<const SpecTemplate*, int32_t> family_ordinals_;   // PlannedJob::family + 1
};

std::string list_or_none(const std::vector<std::string>& names) {
  if (names.empty()) return "the catalog is empty";
  std::string out = "catalog models: ";
  for (std::size_t i = 0; i < names.size(); ++i) out += (i ? ", " : "") + names[i];
  return out;
}

Result<Plan> load_plan_impl(const std::filesystem::path& plan_file, const std::string* text,
                            const std::filesystem::path& catalog_arg, std::string_view run_id) {
  AM_ASSIGN_OR_RETURN(toml::table root, text != nullptr ? detail::parse_toml_text(*text, plan_file)
                                                        : detail::parse_toml_file(plan_file));
  ErrorList errors(plan_file);

  for (const auto& [key, value] : root) {
    const std::string_view k = key.str();
    if (k == "plan" || k == "defaults") {
      if (!value.is_table()) {
        errors.add(value, "'" + std::string(k) + "' must be a table ([" + std::string(k) +
                              "]), got " + std::string(detail::type_name(value)));
      }
    } else if (k != "models" && k != "commands") {
      report_unknown_key(key, "the plan", kRootKeys, errors);
    }
  }

  PlanHeader header;
  if (const toml::table* t = root["plan"].as_table()) {
    header = read_plan_table(*t, errors);
  } else if (!root.contains("plan")) {
    errors.add_unplaced("missing [plan] table (it needs at least name = \"...\")");
  }
  PlanSettings defaults = detail::builtin_settings();
  if (const toml::table* t = root["defaults"].as_table()) {
    defaults = read_defaults_table(*t, errors);
    check_reps(defaults, errors);   // also when no model gets as far as its own check
  }

  std::vector<ModelRequest> requests;
  if (const toml::node* models = root.get("models")) {
    const toml::array* arr = models->as_array();
    if (arr == nullptr) {
      errors.add(*models, "'models' must be an array of tables ([[models]]), got " +
                              std::string(detail::type_name(*models)));
    } else if (arr->empty()) {
      errors.add(*models, "models: empty list (name at least one model)");
    } else {
      for (std::size_t i = 0; i < arr->size(); ++i) {
        const toml::node& el = *arr->get(i);
        if (const toml::table* t = el.as_table()) {
          requests.push_back(read_model_table(*t, i, defaults, errors));
        } else {
          errors.add(el, "models[" + std::to_string(i) + "]: expected a table, got " +
                             std::string(detail::type_name(el)));
        }
      }
    }
  } else if (!root.contains("commands")) {
    errors.add_unplaced("no [[models]] or [[commands]] entries: a plan names at least one model or command");
  }
  std::vector<JobSpec> command_specs;
  const toml::array* command_tables = nullptr;
  if (const toml::node* commands = root.get("commands")) {
    command_tables = commands->as_array();
    if (command_tables == nullptr) {
      errors.add(*commands, "'commands' must be an array of tables ([[commands]]), got " +
                                std::string(detail::type_name(*commands)));
    } else if (command_tables->empty()) {
      errors.add(*commands, "commands: empty list (name at least one command, or leave the key out)");
    } else {
      command_specs = detail::read_command_tables(*command_tables, header.mode, defaults, errors);
    }
  }

  // A plan certainly past its cap is refused before anything is expanded: expanding first took
  // gigabytes and seconds (the coordinator's whole loop, for a `submit`) to find the same answer.
  // What is certain: each entry makes the product of its lists' distinct values, and entries of
  // different models never make the same job; entries of one model may overlap (the same job
  // listed twice runs once), so a model counts for its largest entry only. Plans between this
  // bound and the cap are counted exactly while they expand (add_checked).
  // Also what expanding would walk: every entry's combinations, overlapping ones included. Many
  // copies of one entry, each within the cap, made one job each at the price of all of them.
  {
    std::map<std::string, double> largest_entry;   // model name -> its largest entry's job count
    double walked = static_cast<double>(command_specs.size());
    for (const ModelRequest& m : requests) {
      if (!m.ok) continue;
      const PlanSettings& s = m.settings;
      const auto distinct = [](const auto& list) {
        std::set<decltype(list.value.front().value)> values;
        for (const auto& v : list.value) values.insert(v.value);
        return static_cast<double>(values.size());
      };
      const double n = distinct(s.backends) * distinct(s.precisions) * distinct(s.batch) * distinct(s.seq_len);
      double& largest = largest_entry[m.name];
      largest = std::max(largest, n);
      walked += n;
    }
    double certain = static_cast<double>(command_specs.size());   // command names are distinct
    for (const auto& [name, n] : largest_entry) certain += n;
    if (certain > static_cast<double>(header.max_jobs)) {
      char count[64];
      std::snprintf(count, sizeof count, "%.0f", certain);
      errors.add_unplaced(std::string("plan expands to at least ") + count +
                          " jobs (each model's largest entry: its backends × precisions × batch × seq_len): more than " +
                          std::to_string(header.max_jobs) + " jobs (plan.max_jobs" +
                          (header.max_jobs == kDefaultMaxJobsPerPlan ? ", the default" : "") +
                          "); raise [plan] max_jobs (at most " + std::to_string(kMaxJobsLimit) +
                          ") or split it into smaller plans");
      return errors.status();
    }
    if (walked > kOverlapFactor * static_cast<double>(header.max_jobs)) {
      char count[64];
      std::snprintf(count, sizeof count, "%.0f", walked);
      errors.add_unplaced(std::string("plan's entries list ") + count +
                          " combinations in all (each entry's backends × precisions × batch × seq_len, summed), more "
                          "than " + std::to_string(kOverlapFactor) + " × plan.max_jobs (" +
                          std::to_string(header.max_jobs) + "): entries of one model overlap that much; merge them");
      return errors.status();
    }
  }

  const std::filesystem::path catalog_dir =
      catalog_arg.empty() ? find_catalog_dir(plan_file) : catalog_arg;
  std::vector<std::string> catalog_names;
  const bool needs_catalog = std::any_of(requests.begin(), requests.end(),
                                         [](const ModelRequest& m) { return !is_selftest_model(m.name); });
  if (needs_catalog) {
    auto listed = list_models(catalog_dir);
    if (!listed.ok()) return listed.status().with_context(plan_file.string());
    catalog_names = std::move(listed).value();
  }

  Expander expander(header, run_id, errors);
  std::map<std::string, std::optional<ModelEntry>> loaded;  // by name; nullopt = failed to load
  for (const ModelRequest& m : requests) {
    // An entry whose own settings did not read is still looked up and its overrides checked
    // (every problem at once, docs/PLANS.md "Errors"); its settings are not checked further.
    if (!m.ok && (m.name_node == nullptr || !m.name_node->is_string() || m.name.empty())) continue;
    if (is_selftest_model(m.name)) {
      if (!m.ok) continue;
      // Diagnostic models are not catalog files (jobs/selftest_models.h).
      if (Status known = check_selftest_model(m.name); !known.ok()) {
        errors.add(*m.name_node, known.message());
        continue;
      }
      if (m.overrides != nullptr) {
        errors.add(*m.overrides, "model '" + m.name + "' is a diagnostic and takes no overrides");
        continue;
      }
      ModelEntry entry;
      entry.name = m.name;
      entry.architecture = std::string(kSelftestArchitecture);
      if (!check_settings(m, entry.config, errors)) continue;
      if (errors.empty()) expander.expand(m, entry, entry.config, false);
      continue;
    }
    if (std::find(catalog_names.begin(), catalog_names.end(), m.name) == catalog_names.end()) {
      std::string hint = did_you_mean(m.name, catalog_names);
      if (hint.empty()) hint = " (" + list_or_none(catalog_names) + ")";
      errors.add(*m.name_node, "unknown model '" + m.name + "'" + hint);
      continue;
    }
    auto [it, inserted] = loaded.try_emplace(m.name);
    if (inserted) {
      auto entry = load_model(catalog_dir, m.name);
      if (entry.ok()) {
        it->second = std::move(entry).value();
      } else {
        errors.add(*m.name_node, "cannot load model '" + m.name + "': " + entry.status().message());
      }
    }
    if (!it->second) continue;
    const ModelEntry& entry = *it->second;
    json config;
    bool scaled = false;
    // The settings are checked even when an override was refused, so that every problem of the
    // entry is reported at once (docs/PLANS.md "Errors").
    const bool overrides_ok = apply_overrides(m, entry, errors, config, scaled);
    if (!m.ok) continue;
    const bool positions_meant = overrides_ok || m.overrides == nullptr || !m.overrides->contains("max_positions");
    const bool settings_ok = check_settings(m, config, errors, positions_meant);
    if (!overrides_ok || !settings_ok) continue;
    if (errors.empty()) expander.expand(m, entry, config, scaled);
  }
  if (errors.empty()) {
    for (JobSpec& spec : command_specs) expander.add_command(std::move(spec), *command_tables);
  }

  AM_RETURN_IF_ERROR(errors.status());
  Plan plan;
  plan.name = header.name;
  plan.run_id = run_id.empty() ? header.name : std::string(run_id);
  plan.description = header.description;
  plan.source = plan_file;
  plan.time_budget_s = header.time_budget_s;
  plan.jobs = expander.take();
  return plan;
}

}  // namespace

Result<std::string> read_plan_file(const std::filesystem::path& plan_file) {
  return detail::read_text_file(plan_file);
}

Result<PlanSummary> load_plan_summary_text(const std::string& text, const std::filesystem::path& display_name) {
  try {
    AM_ASSIGN_OR_RETURN(toml::table root, detail::parse_toml_text(text, display_name));
    ErrorList errors(display_name);
    const toml::table* t = root["plan"].as_table();
    if (t == nullptr) return invalid_argument(display_name.string() + ": no [plan] table");
    const PlanHeader header = read_plan_table(*t, errors);
    AM_RETURN_IF_ERROR(errors.status());
    PlanSummary summary;
    summary.name = header.name;
    summary.description = header.description;
    summary.source = display_name;
    summary.time_budget_s = header.time_budget_s;
    return summary;
  } catch (const std::exception& e) {
    return internal_error(display_name.string() + ": " + e.what());
  }
}

Result<Plan> load_plan(const std::filesystem::path& plan_file,
                       const std::filesystem::path& catalog_dir, std::string_view run_id) {
  try {
    return load_plan_impl(plan_file, nullptr, catalog_dir, run_id);
  } catch (const std::exception& e) {
    return internal_error(plan_file.string() + ": " + e.what());
  }
}

Result<Plan> load_plan_text(const std::string& text, const std::filesystem::path& display_name,
                            const std::filesystem::path& catalog_dir, std::string_view run_id) {
  if (catalog_dir.empty()) return invalid_argument("load_plan_text needs a catalog directory");
  try {
    return load_plan_impl(display_name, &text, catalog_dir, run_id);
  } catch (const std::exception& e) {
    return internal_error(display_name.string() + ": " + e.what());
  }
}

std::filesystem::path find_catalog_dir(const std::filesystem::path& plan_file) {
  if (const char* env = std::getenv(kCatalogEnv); env != nullptr && *env != '\0') {
    return std::filesystem::path(env);
  }
  std::error_code ec;
  const std::filesystem::path beside = plan_file.parent_path() / ".." / "models";
  if (std::filesystem::is_directory(beside, ec)) return beside.lexically_normal();
  return std::filesystem::path(ACCELMATRIX_SOURCE_DIR) / "jobs" / "models";
}

namespace {

// The value of exactly 16 lowercase hex digits; nullopt for anything else (upper case included:
// its string order differs from its numeric order).
std::optional<uint64_t> hex16_value(std::string_view id) {
  if (id.size() != 16) return std::nullopt;
  uint64_t v = 0;
  for (const char c : id) {
    uint64_t digit = 0;
    if (c >= '0' && c <= '9') {
      digit = static_cast<uint64_t>(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      digit = static_cast<uint64_t>(c - 'a' + 10);
    } else {
      return std::nullopt;
    }
    v = (v << 4) | digit;
  }
  return v;
}

}  // namespace

std::string plan_hash(const std::vector<PlannedJob>& jobs) {
  // Sorted as numbers where every id is 16 lowercase hex digits (every id a plan makes: the same
  // order as the strings'), else as strings.
  std::vector<uint64_t> keys;
  keys.reserve(jobs.size());
  for (const PlannedJob& j : jobs) {
    const std::optional<uint64_t> key = hex16_value(j.job_id);
    if (!key) break;
    keys.push_back(*key);
  }
  uint64_t h = fnv1a64("accelmatrix plan v2\n");
  if (keys.size() == jobs.size()) {
    std::sort(keys.begin(), keys.end());
    for (uint64_t k : keys) {
      h = fnv1a64(hex64(k), h);
      h = fnv1a64("\n", h);
    }
  } else {
    std::vector<std::string_view> ids;
    ids.reserve(jobs.size());
    for (const PlannedJob& j : jobs) ids.push_back(j.job_id);
    std::sort(ids.begin(), ids.end());
    for (std::string_view id : ids) {
      h = fnv1a64(id, h);
      h = fnv1a64("\n", h);
    }
  }
  return "v2:" + hex64(h);
}

bool is_plan_hash_v1(std::string_view stored) {
  return stored.size() == 16 && stored.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

std::string plan_hash_v1(const std::vector<PlannedJob>& jobs) {
  // Each job's "id canonical-spec" line (nlohmann::json objects are key-sorted), the lines sorted,
  // so the order in which the plan lists models and values does not matter. A line starts with
  // its job id, 16 hex digits unique in the plan, so sorting the ids sorts the lines: they are
  // hashed in that order as they are made (from the family's template, jobs/spec_family.h),
  // never all held at once (a million-job plan's lines are most of a gigabyte).
  // The ids are sorted as numbers when every one is 16 lowercase hex digits (every id a plan
  // makes): the same order as comparing the strings, and a million of them sort in a tenth of a
  // second where comparing strings took three (docs/SCALE.md, restart).
  const auto line_less = [&jobs](uint32_t a, uint32_t b) {
    return jobs[a].job_id != jobs[b].job_id ? jobs[a].job_id < jobs[b].job_id
                                            : to_json(jobs[a].spec).dump() < to_json(jobs[b].spec).dump();
  };
  std::vector<uint32_t> order(jobs.size());
  std::vector<std::pair<uint64_t, uint32_t>> keyed;
  keyed.reserve(jobs.size());
  for (uint32_t i = 0; i < jobs.size(); ++i) {
    const std::optional<uint64_t> key = hex16_value(jobs[i].job_id);
    if (!key) break;
    keyed.emplace_back(*key, i);
  }
  if (keyed.size() == jobs.size()) {
    std::sort(keyed.begin(), keyed.end(), [&line_less](const auto& a, const auto& b) {
      return a.first != b.first ? a.first < b.first : line_less(a.second, b.second);
    });
    for (std::size_t i = 0; i < keyed.size(); ++i) order[i] = keyed[i].second;
  } else {
    for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), line_less);
  }
  keyed = {};
  // Each job's family template is found in plan order, where the jobs of a family follow each
  // other and the last template found is the one; in id order nearly every job missed it.
  SpecTemplates templates;
  std::vector<const SpecTemplate*> family(jobs.size(), nullptr);
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (!jobs[i].spec.command) family[i] = &templates.of(jobs[i].spec);
  }
  uint64_t h = fnv1a64("accelmatrix plan v1\n");
  for (uint32_t i : order) {
    const JobSpec& spec = jobs[i].spec;
    h = fnv1a64(jobs[i].job_id, h);
    h = fnv1a64(" ", h);
    h = fnv1a64(spec.command ? to_json(spec).dump() : family[i]->canonical(scalars_of(spec)), h);
    h = fnv1a64("\n", h);
  }
  return hex64(h);
}

std::filesystem::path default_plans_dir() {
  return std::filesystem::path(ACCELMATRIX_SOURCE_DIR) / "jobs" / "plans";
}

}  // namespace am::jobs
