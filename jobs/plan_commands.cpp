#include "jobs/plan_commands.h"

#include <map>

#include "jobs/names.h"
#include "jobs/spec_limits.h"
#include "jobs/suggest.h"

namespace am::jobs::detail {
namespace {

const std::vector<std::string> kCommandKeys = {
    "name",  "argv",  "backend",   "requires_tags", "timeout_s", "memory_limit_mb",
    "mode",  "output", "model",    "precision",     "batch",     "seq_len", "placement"};

std::string got(const toml::node& node) { return ", got " + std::string(type_name(node)); }

bool read_argv(const std::string& what, const toml::node& node, ErrorList& errors,
               std::vector<std::string>& out) {
  const toml::array* arr = node.as_array();
  if (arr == nullptr) {
    errors.add(node, what + ": expected an array of strings (no shell: write [\"sh\", \"-c\", \"...\"] for one)" + got(node));
    return false;
  }
  if (arr->empty()) {
    errors.add(node, what + ": empty: it needs at least the program");
    return false;
  }
  if (arr->size() > kMaxCommandArgs) {
    errors.add(node, what + ": more than " + std::to_string(kMaxCommandArgs) + " arguments");
    return false;
  }
  bool ok = true;
  for (std::size_t i = 0; i < arr->size(); ++i) {
    const toml::node& el = *arr->get(i);
    const std::string where = what + "[" + std::to_string(i) + "]";
    std::string s;
    if (!read_string(where, el, errors, s)) {
      ok = false;
      continue;
    }
    if (i == 0 && s.empty()) {
      errors.add(el, where + ": the program is empty");
      ok = false;
    } else if (s.size() > kMaxCommandArgBytes || s.find('\0') != std::string::npos) {
      errors.add(el, where + ": longer than 16 KiB or holding a NUL byte");
      ok = false;
    }
    out.push_back(std::move(s));
  }
  return ok;
}

bool read_required_tags(const std::string& what, const toml::node& node, ErrorList& errors,
                        std::map<std::string, std::string>& out) {
  const toml::array* arr = node.as_array();
  if (arr == nullptr) {
    errors.add(node, what + ": expected an array of \"KEY=VALUE\" strings" + got(node));
    return false;
  }
  bool ok = true;
  for (std::size_t i = 0; i < arr->size(); ++i) {
    const toml::node& el = *arr->get(i);
    const std::string where = what + "[" + std::to_string(i) + "]";
    std::string item;
    if (!read_string(where, el, errors, item)) {
      ok = false;
      continue;
    }
    const auto eq = item.find('=');
    const std::string key = eq == std::string::npos ? item : item.substr(0, eq);
    const std::string value = eq == std::string::npos ? std::string() : item.substr(eq + 1);
    if (eq == std::string::npos || !is_valid_identifier(key) || value.empty()) {
      errors.add(el, where + ": expected KEY=VALUE with KEY of letters, digits, '.', '_', '-' and a non-empty VALUE, got '" + item + "'");
      ok = false;
      continue;
    }
    if (auto [it, inserted] = out.emplace(key, value); !inserted && it->second != value) {
      errors.add(el, where + ": tag '" + key + "' required twice, as '" + it->second + "' and '" + value + "'");
      ok = false;
    }
  }
  return ok;
}

struct Entry {
  JobSpec spec;
  bool ok = true;
};

Entry read_entry(const toml::table& t, std::size_t index, const std::string& mode,
                 const PlanSettings& defaults, ErrorList& errors) {
  Entry e;
  const std::string label = "commands[" + std::to_string(index) + "]";
  const std::size_t errors_before = errors.size();
  JobSpec& s = e.spec;
  CommandSpec c;
  s.architecture = std::string(kExternalArchitecture);
  s.mode = mode;
  s.timeout_s = defaults.timeout_s.value;
  s.memory_limit_mb = defaults.memory_limit_mb.value;
  s.batch = 1;
  s.seq_len = 1;
  s.precision = Precision::kExternal;
  s.placement = defaults.placement.value;
  std::string model;
  bool has_backend = false;
  for (const auto& [key, value] : t) {
    const std::string k(key.str());
    const std::string what = label + "." + k;
    int64_t i = 0;
    if (k == "name") {
      if (read_string(what, value, errors, c.name) && !is_valid_identifier(c.name)) {
        errors.add(value, what + ": '" + c.name + "' is not a valid name (1-64 of letters, digits, '.', '_', '-')");
      }
    } else if (k == "argv") {
      read_argv(what, value, errors, c.argv);
    } else if (k == "backend") {
      has_backend = true;
      if (read_string(what, value, errors, s.backend) && !is_known_backend(s.backend)) {
        errors.add(value, what + ": unknown backend '" + s.backend + "' (expected one of " +
                              join_names(known_backends()) + ")");
      }
    } else if (k == "requires_tags") {
      read_required_tags(what, value, errors, s.required_tags);
    } else if (k == "timeout_s") {
      read_number(what, value, 0.0, true, kMaxTimeoutS, errors, s.timeout_s);
    } else if (k == "memory_limit_mb") {
      read_integer(what, value, 0, kMaxMemoryLimitMb, errors, s.memory_limit_mb);
    } else if (k == "mode") {
      if (read_string(what, value, errors, s.mode) && !is_known_mode(s.mode)) {
        errors.add(value, what + ": unknown mode '" + s.mode + "' (expected one of " +
                              join_names(known_modes()) + ")");
      }
    } else if (k == "placement") {
      std::string name;
      if (read_string(what, value, errors, name)) {
        if (std::optional<Placement> p = parse_placement(name)) {
          s.placement = *p;
        } else {
          errors.add(value, what + ": unknown placement '" + name + "' (expected one of " +
                                join_names(known_placements()) + ")");
        }
      }
    } else if (k == "output") {
      if (read_string(what, value, errors, c.output) && !is_known_output_reader(c.output)) {
        errors.add(value, what + ": unknown reader '" + c.output + "' (expected one of " +
                              join_names(known_output_readers()) + ")");
      }
    } else if (k == "model") {
      if (read_string(what, value, errors, model) &&
          (model.empty() || model.size() > kMaxCommandLabelBytes)) {
        errors.add(value, what + ": must be 1 to 256 bytes of text");
      }
    } else if (k == "precision") {
      std::string p;
      if (read_string(what, value, errors, p)) {
        if (p.empty() || p.size() > kMaxCommandLabelBytes) {
          errors.add(value, what + ": must be 1 to 256 bytes of text");
        } else if (auto ours = parse_precision(p)) {
          s.precision = *ours;
        } else {
          c.precision_label = p;   // a tool's own name ("Q4_K_M"): the job's precision is "external"
        }
      }
    } else if (k == "batch") {
      if (read_integer(what, value, 1, kMaxBatch, errors, i)) s.batch = static_cast<int>(i);
    } else if (k == "seq_len") {
      if (read_integer(what, value, 1, kMaxSeqLen, errors, i)) s.seq_len = static_cast<int>(i);
    } else {
      std::string msg = "unknown key '" + k + "' in [[commands]]";
      std::string hint = did_you_mean(k, kCommandKeys);
      if (hint.empty()) {
        msg += " (allowed: ";
        for (std::size_t j = 0; j < kCommandKeys.size(); ++j) msg += (j ? ", " : "") + kCommandKeys[j];
        msg += ")";
      } else {
        msg += hint;
      }
      errors.add(key, label + ": " + msg);
    }
  }
  if (!t.contains("name")) errors.add(t, label + ": [[commands]] entry is missing 'name'");
  if (!t.contains("argv")) errors.add(t, label + ": [[commands]] entry is missing 'argv'");
  if (!has_backend) errors.add(t, label + ": [[commands]] entry is missing 'backend'");
  s.model = model.empty() ? c.name : model;
  s.command = std::move(c);
  e.ok = errors.size() == errors_before;
  return e;
}

}  // namespace

std::vector<JobSpec> read_command_tables(const toml::array& commands, const std::string& mode,
                                         const PlanSettings& defaults, ErrorList& errors) {
  std::vector<JobSpec> out;
  std::map<std::string, uint32_t> first_line;   // name -> line of its first entry
  for (std::size_t i = 0; i < commands.size(); ++i) {
    const toml::node& el = *commands.get(i);
    const toml::table* t = el.as_table();
    if (t == nullptr) {
      errors.add(el, "commands[" + std::to_string(i) + "]: expected a table ([[commands]])" + got(el));
      continue;
    }
    Entry e = read_entry(*t, i, mode, defaults, errors);
    // Names are compared whether or not the rest of the entry read (every problem at once).
    const toml::node* name_node = t->get("name");
    if (const std::optional<std::string> name = name_node != nullptr ? name_node->value<std::string>() : std::nullopt;
        name && !name->empty()) {
      auto [it, inserted] = first_line.emplace(*name, t->source().begin.line);
      if (!inserted) {
        errors.add(name_node->source(), "commands[" + std::to_string(i) + "].name: duplicate command name '" + *name +
                                            "' (first used at line " + std::to_string(it->second) + ")");
        continue;
      }
    }
    if (!e.ok) continue;
    out.push_back(std::move(e.spec));
  }
  return out;
}

}  // namespace am::jobs::detail
