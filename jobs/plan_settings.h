// Internal to accelmatrix_jobs: the job settings a plan's [defaults] table sets and each
// [[models]] entry may override, with the position each value came from so that problems found
// later (seq_len beyond a model's max_positions, max_reps below min_reps) point at the right line.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "jobs/placement.h"
#include "jobs/precision.h"
#include "jobs/toml_support.h"

namespace am::jobs::detail {

template <typename T>
struct Placed {
  T value{};
  toml::source_region where{};  // line 0 = built-in default
};

struct PlanSettings {
  Placed<std::vector<Placed<std::string>>> backends;
  Placed<std::vector<Placed<Precision>>> precisions;
  Placed<std::vector<Placed<int64_t>>> batch;
  Placed<std::vector<Placed<int64_t>>> seq_len;
  Placed<int64_t> warmup;
  Placed<int64_t> min_reps;
  Placed<int64_t> max_reps;
  Placed<double> min_time_s;
  Placed<double> timeout_s;
  Placed<int64_t> memory_limit_mb;
  Placed<int64_t> threads;
  Placed<std::map<std::string, std::string>> tags;   // required worker tags
  Placed<Placement> placement;                       // where each job runs (jobs/placement.h)
};

// The JobSpec defaults, plus backends = ["cpu"], precisions = ["f32"], batch = [1],
// seq_len = [32], placement = "each-class".
PlanSettings builtin_settings();

// The keys read_setting() understands, in documentation order.
const std::vector<std::string>& setting_keys();

// If `key` is a setting, validates `node` into `settings` (reporting problems to `errors`) and
// returns true; returns false for any other key. `table` names the table for messages
// ("defaults", "models[0]").
bool read_setting(std::string_view table, std::string_view key, const toml::node& node,
                  PlanSettings& settings, ErrorList& errors);

// Typed readers shared with the [plan] table. Each reports a problem at the value's position and
// returns false, leaving `out` untouched.
bool read_string(std::string_view what, const toml::node& node, ErrorList& errors, std::string& out);
bool read_integer(std::string_view what, const toml::node& node, int64_t min, int64_t max,
                  ErrorList& errors, int64_t& out);
// Accepts integers and floats; `min_exclusive` selects (min, max] instead of [min, max].
bool read_number(std::string_view what, const toml::node& node, double min, bool min_exclusive,
                 double max, ErrorList& errors, double& out);

}  // namespace am::jobs::detail
