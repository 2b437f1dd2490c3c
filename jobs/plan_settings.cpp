#include "jobs/plan_settings.h"

#include <cmath>
#include <functional>

#include "jobs/job_spec.h"
#include "jobs/names.h"
#include "jobs/spec_limits.h"

namespace am::jobs::detail {
namespace {

std::string got(const toml::node& node) { return ", got " + std::string(type_name(node)); }

std::string format_number(double x) {
  std::string s = std::to_string(x);
  // std::to_string prints six decimals; trim the zeros a user did not write.
  while (s.size() > 1 && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

// A list key accepts one value or an array of them; an empty array is an error because it would
// silently expand to no jobs.
template <typename T, typename ReadOne>
bool read_list(std::string_view what, const toml::node& node, ErrorList& errors,
               Placed<std::vector<Placed<T>>>& out, ReadOne read_one) {
  std::vector<Placed<T>> items;
  bool ok = true;
  if (const auto* arr = node.as_array()) {
    if (arr->empty()) {
      errors.add(node, std::string(what) + ": empty list (name at least one value)");
      return false;
    }
    for (const toml::node& el : *arr) {
      Placed<T> item{T{}, el.source()};
      ok = read_one(el, item.value) && ok;
      items.push_back(std::move(item));
    }
  } else {
    Placed<T> item{T{}, node.source()};
    ok = read_one(node, item.value);
    items.push_back(std::move(item));
  }
  if (!ok) return false;
  out.value = std::move(items);
  out.where = node.source();
  return true;
}

bool read_name_list(std::string_view what, std::string_view noun, bool (*known)(std::string_view),
                    std::span<const std::string_view> names, const toml::node& node,
                    ErrorList& errors, Placed<std::vector<Placed<std::string>>>& out) {
  return read_list<std::string>(what, node, errors, out, [&](const toml::node& el, std::string& v) {
    const auto* s = el.as_string();
    if (s == nullptr) {
      errors.add(el, std::string(what) + ": expected a " + std::string(noun) + " name (string)" + got(el));
      return false;
    }
    if (!known(s->get())) {
      errors.add(el, "unknown " + std::string(noun) + " '" + s->get() + "' (expected one of " +
                         join_names(names) + ")");
      return false;
    }
    v = s->get();
    return true;
  });
}

bool read_precision_list(std::string_view what, const toml::node& node, ErrorList& errors,
                         Placed<std::vector<Placed<Precision>>>& out) {
  return read_list<Precision>(what, node, errors, out, [&](const toml::node& el, Precision& v) {
    const auto* s = el.as_string();
    if (s == nullptr) {
      errors.add(el, std::string(what) + ": expected a precision name (string)" + got(el));
      return false;
    }
    std::optional<Precision> p = parse_precision(s->get());
    if (!p) {
      errors.add(el, "unknown precision '" + s->get() + "' (expected one of " + precision_names() + ")");
      return false;
    }
    v = *p;
    return true;
  });
}

bool read_size_list(std::string_view what, int64_t max, const toml::node& node, ErrorList& errors,
                    Placed<std::vector<Placed<int64_t>>>& out) {
  return read_list<int64_t>(what, node, errors, out, [&](const toml::node& el, int64_t& v) {
    return read_integer(what, el, 1, max, errors, v);
  });
}

template <typename T>
void set(Placed<T>& out, T value, const toml::node& node) {
  out.value = std::move(value);
  out.where = node.source();
}

}  // namespace

PlanSettings builtin_settings() {
  const JobSpec d;
  PlanSettings s;
  s.backends.value = {Placed<std::string>{d.backend, {}}};
  s.precisions.value = {Placed<Precision>{d.precision, {}}};
  s.batch.value = {Placed<int64_t>{d.batch, {}}};
  s.seq_len.value = {Placed<int64_t>{d.seq_len, {}}};
  s.warmup.value = d.warmup;
  s.min_reps.value = d.min_reps;
  s.max_reps.value = d.max_reps;
  s.min_time_s.value = d.min_time_s;
  s.timeout_s.value = d.timeout_s;
  s.memory_limit_mb.value = d.memory_limit_mb;
  s.threads.value = d.threads;
  s.placement.value = Placement::kEachClass;
  return s;
}

const std::vector<std::string>& setting_keys() {
  static const std::vector<std::string> kKeys = {
      "backends", "precisions", "batch",     "seq_len",         "warmup", "min_reps",
      "max_reps", "min_time_s", "timeout_s", "memory_limit_mb", "threads", "tags", "placement"};
  return kKeys;
}

bool read_string(std::string_view what, const toml::node& node, ErrorList& errors, std::string& out) {
  const auto* s = node.as_string();
  if (s == nullptr) {
    errors.add(node, std::string(what) + ": expected a string" + got(node));
    return false;
  }
  out = s->get();
  return true;
}

bool read_integer(std::string_view what, const toml::node& node, int64_t min, int64_t max,
                  ErrorList& errors, int64_t& out) {
  const auto* v = node.as_integer();
  if (v == nullptr) {
    errors.add(node, std::string(what) + ": expected an integer" + got(node));
    return false;
  }
  const int64_t x = v->get();
  if (x < min) {
    errors.add(node, std::string(what) + ": must be at least " + std::to_string(min) + ", got " +
                         std::to_string(x));
    return false;
  }
  if (x > max) {
    errors.add(node, std::string(what) + ": must be at most " + std::to_string(max) + ", got " +
                         std::to_string(x));
    return false;
  }
  out = x;
  return true;
}

bool read_number(std::string_view what, const toml::node& node, double min, bool min_exclusive,
                 double max, ErrorList& errors, double& out) {
  double x = 0;
  if (const auto* i = node.as_integer()) {
    x = static_cast<double>(i->get());
  } else if (const auto* f = node.as_floating_point()) {
    x = f->get();
  } else {
    errors.add(node, std::string(what) + ": expected a number" + got(node));
    return false;
  }
  if (!std::isfinite(x)) {
    errors.add(node, std::string(what) + ": must be finite");
    return false;
  }
  const bool below = min_exclusive ? !(x > min) : x < min;
  if (below) {
    errors.add(node, std::string(what) + ": must be " + (min_exclusive ? "greater than " : "at least ") +
                         format_number(min) + ", got " + format_number(x));
    return false;
  }
  if (x > max) {
    errors.add(node, std::string(what) + ": must be at most " + format_number(max) + ", got " +
                         format_number(x));
    return false;
  }
  out = x;
  return true;
}

bool read_setting(std::string_view table, std::string_view key, const toml::node& node,
                  PlanSettings& s, ErrorList& errors) {
  const std::string what = std::string(table) + "." + std::string(key);
  int64_t i = 0;
  double d = 0;
  if (key == "backends") {
    read_name_list(what, "backend", is_known_backend, known_backends(), node, errors, s.backends);
  } else if (key == "precisions") {
    read_precision_list(what, node, errors, s.precisions);
  } else if (key == "batch") {
    read_size_list(what, kMaxBatch, node, errors, s.batch);
  } else if (key == "seq_len") {
    read_size_list(what, kMaxSeqLen, node, errors, s.seq_len);
  } else if (key == "warmup") {
    if (read_integer(what, node, 0, kMaxWarmup, errors, i)) set(s.warmup, i, node);
  } else if (key == "min_reps") {
    if (read_integer(what, node, 1, kMaxReps, errors, i)) set(s.min_reps, i, node);
  } else if (key == "max_reps") {
    if (read_integer(what, node, 1, kMaxReps, errors, i)) set(s.max_reps, i, node);
  } else if (key == "min_time_s") {
    if (read_number(what, node, 0.0, false, kMaxMinTimeS, errors, d)) set(s.min_time_s, d, node);
  } else if (key == "timeout_s") {
    if (read_number(what, node, 0.0, true, kMaxTimeoutS, errors, d)) set(s.timeout_s, d, node);
  } else if (key == "memory_limit_mb") {
    if (read_integer(what, node, 0, kMaxMemoryLimitMb, errors, i)) set(s.memory_limit_mb, i, node);
  } else if (key == "threads") {
    if (read_integer(what, node, 0, kMaxThreads, errors, i)) set(s.threads, i, node);
  } else if (key == "placement") {
    std::string name;
    if (read_string(what, node, errors, name)) {
      if (std::optional<Placement> p = parse_placement(name)) {
        set(s.placement, *p, node);
      } else {
        errors.add(node, what + ": unknown placement '" + name + "' (expected one of " +
                             join_names(known_placements()) + ")");
      }
    }
  } else if (key == "tags") {
    const auto* table = node.as_table();
    if (table == nullptr) {
      errors.add(node, what + ": expected a table of strings, e.g. { gpu = \"rtx4090\" }" + got(node));
      return true;
    }
    std::map<std::string, std::string> tags;
    bool ok = true;
    for (const auto& [k, v] : *table) {
      const std::string tag(k.str());
      std::string value;
      if (!is_valid_identifier(tag)) {
        errors.add(v, what + "." + tag + ": tag names are letters, digits, '.', '_', '-'");
        ok = false;
      } else if (read_string(what + "." + tag, v, errors, value)) {
        if (value.empty()) {
          errors.add(v, what + "." + tag + ": must not be empty");
          ok = false;
        }
        tags[tag] = value;
      } else {
        ok = false;
      }
    }
    if (ok) set(s.tags, tags, node);
  } else {
    return false;
  }
  return true;
}

}  // namespace am::jobs::detail
