#include "coordinator/matrix.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <tuple>
#include <utility>

#include "coordinator/report_common.h"

namespace am::coord {
namespace {

using ShapeKey = std::pair<int, int>;   // (batch, seq_len)

// Raw per-shape samples of one cell before they are reduced to medians.
struct ShapeSamples {
  std::vector<double> raw;          // every job's stored raw samples, pooled
  // Paired baselines (metrics.paired_baseline): the cpu f32 samples each job timed alongside
  // its own, pooled, and the medians of those; paired_jobs counts the jobs that carried one.
  std::vector<double> paired_baseline_raw;
  std::vector<double> paired_baseline_medians;
  int paired_jobs = 0;
  int busy_jobs = 0;                // jobs of the shape that ran on a busy host
  std::vector<double> medians;
  std::vector<double> p90s;
  std::vector<double> tokens_per_s;
};

struct CellBuilder {
  MatrixCell cell;
  int worst_severity = -1;
  std::map<ShapeKey, ShapeSamples> shapes;
};

double median_of(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

std::optional<double> optional_median(const std::vector<double>& values) {
  if (values.empty()) return std::nullopt;
  return median_of(values);
}

template <typename T>
void remember(std::vector<T>& order, const T& name) {
  if (std::find(order.begin(), order.end(), name) == order.end()) order.push_back(name);
}

template <typename T>
std::size_t position(const std::vector<T>& order, const T& name) {
  return static_cast<std::size_t>(std::find(order.begin(), order.end(), name) - order.begin());
}

int spec_int(const nlohmann::json& spec, const char* key) {
  auto it = spec.find(key);
  return it != spec.end() && it->is_number_integer() ? it->get<int>() : 0;
}

void keep_max(std::optional<double>& slot, std::optional<double> value) {
  if (value && (!slot || *value > *slot)) slot = value;
}

void keep_min(std::optional<double>& slot, std::optional<double> value) {
  if (value && (!slot || *value < *slot)) slot = value;
}

// <latency>.samples: positive finite numbers only (anything else is not a latency).
void append_raw_samples(const nlohmann::json& latency, std::vector<double>& out) {
  if (!latency.is_object()) return;
  auto samples = latency.find("samples");
  if (samples == latency.end() || !samples->is_array()) return;
  for (const nlohmann::json& v : *samples) {
    if (!v.is_number()) continue;
    const double x = v.get<double>();
    if (std::isfinite(x) && x > 0) out.push_back(x);
  }
}

const nlohmann::json& member_or_null(const nlohmann::json& object, const char* key) {
  static const nlohmann::json kNull;
  if (!object.is_object()) return kNull;
  auto it = object.find(key);
  return it == object.end() ? kNull : *it;
}

// metrics.paired_baseline.latency_ms (job_runner.cpp): a positive median and samples.
void add_paired_baseline(const nlohmann::json& metrics, ShapeSamples& samples) {
  const nlohmann::json& paired = member_or_null(metrics, "paired_baseline");
  // Only a record of the cpu f32 baseline backs a "vs cpu f32" speed-up.
  const nlohmann::json& backend = member_or_null(paired, "backend");
  const nlohmann::json& precision = member_or_null(paired, "precision");
  if (!backend.is_string() || backend.get<std::string>() != kBaselineBackend || !precision.is_string() ||
      precision.get<std::string>() != jobs::to_string(kBaselinePrecision)) {
    return;
  }
  const nlohmann::json& latency = member_or_null(paired, "latency_ms");
  const nlohmann::json& median = member_or_null(latency, "median");
  if (!median.is_number() || !(median.get<double>() > 0) || !std::isfinite(median.get<double>())) return;
  const std::size_t before = samples.paired_baseline_raw.size();
  append_raw_samples(latency, samples.paired_baseline_raw);
  if (samples.paired_baseline_raw.size() == before) return;
  samples.paired_baseline_medians.push_back(median.get<double>());
  ++samples.paired_jobs;
}

void add_row(CellBuilder& b, const ReportRow& row) {
  MatrixCell& cell = b.cell;
  cell.job_ids.push_back(row.job_id);
  if (row.status) {
    ++cell.status_counts[*row.status];
  } else {
    ++cell.pending;
  }
  auto scaled = row.spec.find("scaled");
  if (scaled != row.spec.end() && scaled->is_boolean() && scaled->get<bool>()) cell.scaled = true;
  if (!row.hardware_class.empty() &&
      std::find(cell.hardware_classes.begin(), cell.hardware_classes.end(), row.hardware_class) ==
          cell.hardware_classes.end()) {
    cell.hardware_classes.push_back(row.hardware_class);
  }
  if (!row.status) return;   // not terminal: its numbers (if any) are not final

  bool busy = false;
  if (auto host = host_load(row.metrics); host && host_busy(*host)) {
    busy = true;
    ++cell.host_busy_jobs;
    if (host->other_load && host->cpus && *host->cpus > 0) {
      keep_max(cell.busy_other_load_per_cpu, *host->other_load / *host->cpus);
    }
    keep_max(cell.busy_steal_fraction, host->steal_fraction);
  }

  const int severity = status_severity(row.status);
  if (severity > b.worst_severity) {
    b.worst_severity = severity;
    cell.status = row.status;
    cell.reason = row.reason;
  }
  keep_max(cell.nmse_max, metric_number(row.metrics, "accuracy", "nmse"));
  keep_min(cell.cosine_min, metric_number(row.metrics, "accuracy", "cosine"));
  keep_min(cell.top1_min, metric_number(row.metrics, "accuracy", "top1_agreement"));

  if (!is_measured_status(row.status)) return;
  const auto median = metric_number(row.metrics, "latency_ms", "median");
  if (!median || *median <= 0) return;
  const int batch = row.spec.contains("batch") ? spec_int(row.spec, "batch") : 0;
  const int seq_len = row.spec.contains("seq_len") ? spec_int(row.spec, "seq_len") : 0;
  ShapeSamples& samples = b.shapes[{batch, seq_len}];
  samples.medians.push_back(*median);
  append_raw_samples(member_or_null(row.metrics, "latency_ms"), samples.raw);
  add_paired_baseline(row.metrics, samples);
  if (busy) ++samples.busy_jobs;
  if (auto p90 = metric_number(row.metrics, "latency_ms", "p90")) samples.p90s.push_back(*p90);
  if (auto tps = metric_number(row.metrics, "throughput", "tokens_per_s")) {
    samples.tokens_per_s.push_back(*tps);
  }
}

void reduce_shapes(CellBuilder& b) {
  for (const auto& [key, samples] : b.shapes) {   // std::map: ordered by (batch, seq_len)
    ShapeLatency shape;
    shape.batch = key.first;
    shape.seq_len = key.second;
    shape.median_ms = median_of(samples.medians);
    shape.p90_ms = optional_median(samples.p90s);
    shape.tokens_per_s = optional_median(samples.tokens_per_s);
    b.cell.shapes.push_back(shape);
  }
}

// A shape's speed-up comes from paired baselines only when every job measured at it carried
// one: a mix would divide samples taken under different conditions.
bool paired_shape(const ShapeSamples& s) {
  return s.paired_jobs > 0 && s.paired_jobs == static_cast<int>(s.medians.size());
}

// Speed-ups against the baseline cell, the representative shape and the rating.
void compare_with_baseline(CellBuilder& b, const CellBuilder* baseline_builder) {
  MatrixCell& cell = b.cell;
  const MatrixCell* baseline = baseline_builder ? &baseline_builder->cell : nullptr;
  const bool is_base = cell.command.empty() && is_baseline(cell.backend, cell.precision);
  const ShapeLatency* representative = nullptr;
  const bool baseline_measured = baseline && is_measured_status(baseline->status);
  if (!is_base) {
    for (ShapeLatency& shape : cell.shapes) {
      const ShapeSamples& mine = b.shapes.at({shape.batch, shape.seq_len});
      if (paired_shape(mine)) {
        shape.paired = true;
        shape.baseline_ms = median_of(mine.paired_baseline_medians);
      } else if (baseline_measured) {
        // The baseline's shapes are ordered by (batch, seq_len) (reduce_shapes).
        auto base = std::lower_bound(baseline->shapes.begin(), baseline->shapes.end(), shape,
                                     [](const ShapeLatency& a, const ShapeLatency& b) {
                                       return std::make_pair(a.batch, a.seq_len) < std::make_pair(b.batch, b.seq_len);
                                     });
        if (base != baseline->shapes.end() && base->batch == shape.batch && base->seq_len == shape.seq_len) {
          shape.baseline_ms = base->median_ms;
        }
      }
      if (shape.baseline_ms) {
        // Stored medians of a few denormal milliseconds overflow the ratio: no speed-up then.
        const double ratio = *shape.baseline_ms / shape.median_ms;
        if (std::isfinite(ratio) && ratio > 0.0) {
          shape.speedup = ratio;
          if (!representative) representative = &shape;
        }
      }
    }
  }
  if (!representative && !cell.shapes.empty()) representative = &cell.shapes.front();
  if (representative) {
    cell.rep_batch = representative->batch;
    cell.rep_seq_len = representative->seq_len;
    cell.median_ms = representative->median_ms;
    cell.baseline_ms = representative->baseline_ms;
    if (representative->speedup) {
      const ShapeKey key{representative->batch, representative->seq_len};
      const ShapeSamples& mine = b.shapes.at(key);
      if (representative->paired) {
        cell.speedup_interval = estimate_speedup(mine.paired_baseline_raw, mine.raw, *representative->speedup);
        cell.speedup_paired = true;
        cell.baseline_host_busy = mine.busy_jobs > 0;   // the same jobs timed both sides
      } else {
        const ShapeSamples& theirs = baseline_builder->shapes.at(key);
        cell.speedup_interval = estimate_speedup(theirs.raw, mine.raw, *representative->speedup);
        cell.baseline_host_busy = theirs.busy_jobs > 0;
      }
      if (std::isfinite(cell.speedup_interval->estimate) && cell.speedup_interval->estimate > 0.0) {
        cell.speedup = cell.speedup_interval->estimate;
      } else {
        cell.speedup_interval.reset();   // the raw samples' ratio overflowed: nothing backs a band
      }
    }
  }
  cell.rating = rate_cell(cell.status, is_base, cell.speedup_interval, cell.median_ms.has_value());
  if (!cell.status) cell.reason = "pending";
  // Jobs still out (queued or leased) may add a smaller shape (the one rated) or a failure: the
  // cell is not rated until they end, unless it has failed already (a failure stays its verdict).
  // So are the jobs of the baseline cell it is rated against, when it is not paired: one still
  // out may be the smaller shape the cell would be rated at.
  const bool baseline_out = !is_base && !cell.speedup_paired && cell.median_ms.has_value() && baseline != nullptr &&
                            baseline->pending > 0;
  if ((cell.pending > 0 || baseline_out) && cell.rating != Rating::kFailed && cell.rating != Rating::kUnsupported) {
    cell.rating = Rating::kPending;
  }
}

OverviewCell summarize(const std::string& architecture, const MatrixColumn& column,
                       const std::vector<MatrixCell>& cells) {
  OverviewCell o;
  o.architecture = architecture;
  o.backend = column.backend;
  o.hardware_class = column.hardware_class;
  for (const MatrixCell& cell : cells) {
    if (cell.architecture != architecture || cell.backend != column.backend ||
        cell.hardware_class != column.hardware_class) {
      continue;
    }
    ++o.cells;
    if (cell.rating == Rating::kPending) {
      ++o.pending;
    } else if (is_measured_status(cell.status)) {
      ++o.working;
      if (cell.status == ResultStatus::kDegraded) ++o.degraded;
      remember(o.working_precisions, cell.precision);
      if (cell.speedup && (!o.best_speedup || *cell.speedup > *o.best_speedup)) {
        o.best_speedup = cell.speedup;
        o.best_precision = cell.precision;
        o.best_model = cell.model;
      }
    } else if (cell.rating == Rating::kUnsupported) {
      ++o.unsupported;
    } else if (cell.rating == Rating::kFailed) {
      ++o.failed;
    } else {
      ++o.not_run;
    }
  }
  const int finished = o.cells - o.not_run - o.pending;
  if (finished == 0 && o.pending > 0) {
    o.support = "pending";
  } else if (finished == 0) {
    o.support = "not run";
  } else if (o.working == finished) {
    o.support = "full";
  } else if (o.working == 0) {
    o.support = "none";
  } else {
    o.support = "partial";
  }
  return o;
}

}  // namespace

std::optional<double> metric_number(const nlohmann::json& metrics, std::string_view group,
                                    std::string_view key) {
  if (!metrics.is_object()) return std::nullopt;
  auto g = metrics.find(group);
  if (g == metrics.end() || !g->is_object()) return std::nullopt;
  auto v = g->find(key);
  if (v == g->end() || !v->is_number()) return std::nullopt;
  return v->get<double>();
}

std::optional<HostLoad> host_load(const nlohmann::json& metrics) {
  if (!metrics.is_object()) return std::nullopt;
  auto h = metrics.find("host");
  if (h == metrics.end() || !h->is_object()) return std::nullopt;
  HostLoad out;
  out.load_start = metric_number(metrics, "host", "load_start");
  out.load_end = metric_number(metrics, "host", "load_end");
  out.steal_fraction = metric_number(metrics, "host", "steal_fraction");
  out.other_load = metric_number(metrics, "host", "other_load");
  if (auto cpus = metric_number(metrics, "host", "cpus"); cpus && *cpus >= 1 && *cpus < 1e6) {
    out.cpus = static_cast<int>(*cpus);
  }
  return out;
}

const std::vector<std::string_view>& matrix_spec_keys() {
  static const std::vector<std::string_view> keys{"batch", "seq_len", "scaled", "command"};
  return keys;
}

const std::vector<std::string_view>& matrix_metrics_keys() {
  static const std::vector<std::string_view> keys{
      "latency_ms.median", "latency_ms.p90",          "latency_ms.samples",
      "throughput.tokens_per_s", "accuracy.nmse",      "accuracy.cosine",
      "accuracy.top1_agreement", "host",               "paired_baseline.latency_ms",
      "paired_baseline.backend", "paired_baseline.precision"};
  return keys;
}

struct MatrixBuilder::State {
  Matrix m;
  std::vector<CellBuilder> builders;
  using CellKey = std::tuple<std::string, std::string, std::string, jobs::Precision, std::string>;
  std::map<CellKey, std::size_t> index;
  std::vector<MatrixColumn> columns;   // first appearance
  std::optional<std::size_t> last_cell;   // of the previous row
  // What picks each column's baseline class (see the contract): the cpu classes, the rows each
  // worker ran on each cpu class, and the rows of each other column per worker.
  std::set<std::string> cpu_classes;
  std::set<std::string> cpu_columns;   // classes of the cpu columns, each its own baseline
  // Model names that stand for several configs in the run, with their labels: a command naming
  // one has no single baseline (MatrixCell::baseline_configs).
  std::map<std::string, std::set<std::string>> names_with_configs;
  std::map<std::string, std::map<std::string, int>> cpu_classes_of_worker;
  std::map<std::pair<std::string, std::string>, std::map<std::string, int>> column_worker_rows;
};

MatrixBuilder::MatrixBuilder() : state_(std::make_unique<State>()) {}
MatrixBuilder::~MatrixBuilder() = default;
MatrixBuilder::MatrixBuilder(MatrixBuilder&&) noexcept = default;
MatrixBuilder& MatrixBuilder::operator=(MatrixBuilder&&) noexcept = default;

void MatrixBuilder::add(const ReportRow& row) {
  State& s = *state_;
  // The model as the matrix shows it: one config of a name that stands for several in the run
  // is a model of its own (ReportRow::model_label).
  const std::string& model = row.model_label.empty() ? row.model : row.model_label;
  remember(s.m.architectures, row.architecture);
  // A command's cell is keyed by its name and precision label (command_key), shown by its name
  // with the label beside it.
  const std::string command = command_key(row.spec);
  // Rows come in plan order, so a row is mostly of the previous row's cell: checked first,
  // without making the key.
  const auto same_cell = [&](const MatrixCell& c) {
    return c.precision == row.precision && c.model == model && c.backend == row.backend &&
           c.hardware_class == row.hardware_class && c.command_key() == command;
  };
  if (!s.last_cell || !same_cell(s.builders[*s.last_cell].cell)) {
    auto key = std::make_tuple(model, row.backend, row.hardware_class, row.precision, command);
    auto [it, inserted] = s.index.emplace(std::move(key), s.builders.size());
    if (inserted) {
      // What is part of a cell's key is remembered with its first row.
      remember(s.m.models, model);
      if (model != row.model) s.names_with_configs[row.model].insert(model);
      remember(s.m.backends, row.backend);
      remember(s.m.precisions, row.precision);
      remember(s.columns, MatrixColumn{row.backend, row.hardware_class});
      CellBuilder b;
      if (std::optional<CommandIdentity> id = command_identity(row.spec)) {
        b.cell.command = id->name;
        b.cell.command_precision_label = id->label;
      }
      b.cell.model = model;
      b.cell.architecture = row.architecture;
      b.cell.backend = row.backend;
      b.cell.hardware_class = row.hardware_class;
      b.cell.precision = row.precision;
      s.builders.push_back(std::move(b));
    }
    s.last_cell = it->second;
  }
  add_row(s.builders[*s.last_cell], row);

  if (row.backend == kBaselineBackend) {
    s.cpu_columns.insert(row.hardware_class);
    if (row.hardware_class.empty()) return;
    s.cpu_classes.insert(row.hardware_class);
    if (!row.worker_id.empty()) ++s.cpu_classes_of_worker[row.worker_id][row.hardware_class];
  } else {
    ++s.column_worker_rows[{row.backend, row.hardware_class}][row.worker_id];
  }
}

Matrix MatrixBuilder::finish() {
  State& s = *state_;
  Matrix m = std::move(s.m);
  for (const std::string& backend : m.backends) {
    for (const MatrixColumn& c : s.columns) {
      if (c.backend == backend) m.columns.push_back(c);
    }
  }
  // The baseline class of each column: a cpu column's own class; another backend's column votes
  // with every row for the cpu classes its worker ran cpu rows on (weighted by those rows), and
  // takes the most voted, or the run's only cpu class.
  std::map<std::pair<std::string, std::string>, std::optional<std::string>> baselines;
  for (const std::string& cls : s.cpu_columns) baselines[{std::string(kBaselineBackend), cls}] = cls;
  for (const auto& [column, rows_of_worker] : s.column_worker_rows) {
    std::map<std::string, int64_t> votes;   // rows x rows: past int at a million jobs
    for (const auto& [worker, rows] : rows_of_worker) {
      auto w = s.cpu_classes_of_worker.find(worker);
      if (w == s.cpu_classes_of_worker.end()) continue;
      for (const auto& [cls, n] : w->second) votes[cls] += int64_t{rows} * n;
    }
    std::string best;
    int64_t best_n = 0;
    for (const auto& [cls, n] : votes) {
      if (n > best_n) {
        best = cls;
        best_n = n;
      }
    }
    if (best.empty() && s.cpu_classes.size() == 1) best = *s.cpu_classes.begin();
    if (!best.empty()) baselines[column] = best;
  }
  for (CellBuilder& b : s.builders) reduce_shapes(b);
  for (CellBuilder& b : s.builders) {
    if (!b.cell.command.empty()) {
      if (auto configs = s.names_with_configs.find(b.cell.model); configs != s.names_with_configs.end()) {
        b.cell.baseline_configs = static_cast<int>(configs->second.size());
      }
    }
    const CellBuilder* baseline = nullptr;
    auto cls = baselines.find({b.cell.backend, b.cell.hardware_class});
    if (cls != baselines.end() && cls->second) {
      b.cell.baseline_class = *cls->second;
      auto base = s.index.find({b.cell.model, std::string(kBaselineBackend), *cls->second, kBaselinePrecision, std::string()});
      if (base != s.index.end()) baseline = &s.builders[base->second];
    }
    compare_with_baseline(b, baseline);
  }
  m.cells.reserve(s.builders.size());
  for (CellBuilder& b : s.builders) m.cells.push_back(std::move(b.cell));
  std::stable_sort(m.cells.begin(), m.cells.end(), [&](const MatrixCell& a, const MatrixCell& b) {
    const MatrixColumn ca{a.backend, a.hardware_class};
    const MatrixColumn cb{b.backend, b.hardware_class};
    return std::make_tuple(position(m.columns, ca), position(m.models, a.model), position(m.precisions, a.precision)) <
           std::make_tuple(position(m.columns, cb), position(m.models, b.model), position(m.precisions, b.precision));
  });
  for (const std::string& architecture : m.architectures) {
    for (const MatrixColumn& column : m.columns) {
      OverviewCell o = summarize(architecture, column, m.cells);
      if (o.cells > 0) m.overview.push_back(std::move(o));
    }
  }
  state_ = std::make_unique<State>();
  return m;
}

Matrix build_matrix(const std::vector<ReportRow>& rows) {
  MatrixBuilder builder;
  for (const ReportRow& row : rows) builder.add(row);
  return builder.finish();
}

const MatrixCell* find_cell(const Matrix& matrix, std::string_view model, std::string_view backend,
                            jobs::Precision precision) {
  // A built-in job's cell first; a command cell only where no built-in one has the same key.
  const MatrixCell* command_cell = nullptr;
  for (const MatrixCell& cell : matrix.cells) {
    if (cell.model == model && cell.backend == backend && cell.precision == precision) {
      if (cell.command.empty()) return &cell;
      if (command_cell == nullptr) command_cell = &cell;
    }
  }
  return command_cell;
}

const MatrixCell* find_cell(const Matrix& matrix, std::string_view model, const MatrixColumn& column,
                            jobs::Precision precision) {
  const MatrixCell* command_cell = nullptr;
  for (const MatrixCell& cell : matrix.cells) {
    if (cell.model == model && cell.backend == column.backend && cell.hardware_class == column.hardware_class &&
        cell.precision == precision) {
      if (cell.command.empty()) return &cell;
      if (command_cell == nullptr) command_cell = &cell;
    }
  }
  return command_cell;
}

const OverviewCell* find_overview(const Matrix& matrix, std::string_view architecture,
                                  std::string_view backend) {
  for (const OverviewCell& o : matrix.overview) {
    if (o.architecture == architecture && o.backend == backend) return &o;
  }
  return nullptr;
}

const OverviewCell* find_overview(const Matrix& matrix, std::string_view architecture,
                                  const MatrixColumn& column) {
  for (const OverviewCell& o : matrix.overview) {
    if (o.architecture == architecture && o.backend == column.backend && o.hardware_class == column.hardware_class) {
      return &o;
    }
  }
  return nullptr;
}

}  // namespace am::coord
