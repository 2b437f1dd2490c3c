#include "coordinator/dashboard_data.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>

#include "common/json_text.h"
#include "common/utf8.h"
#include "coordinator/chunked_text.h"
#include "coordinator/hardware_label.h"
#include "coordinator/matrix.h"
#include "coordinator/ratings.h"
#include "coordinator/report_common.h"
#include "coordinator/report_json.h"

namespace am::coord {
namespace {

using nlohmann::json;

// Rounds to kSignificantDigits. Divides or multiplies by an exact power of ten (never by 1e-5,
// which is inexact), so 123456789 becomes exactly 123500000 and 17.2 stays the double 17.2.
double round_significant(double v) {
  if (v == 0 || !std::isfinite(v)) return v;
  const int magnitude = static_cast<int>(std::floor(std::log10(std::fabs(v))));
  const int shift = kSignificantDigits - 1 - magnitude;
  if (shift > 300 || shift < -300) return v;
  double r;
  if (shift >= 0) {
    const double scale = std::pow(10.0, shift);
    r = std::round(v * scale) / scale;
  } else {
    const double scale = std::pow(10.0, -shift);
    r = std::round(v / scale) * scale;
  }
  return std::isfinite(r) ? r : v;
}

json number(std::optional<double> v) {
  return v && std::isfinite(*v) ? json(round_significant(*v)) : json(nullptr);
}

std::optional<double> metric(const ReportRow& r, const char* group, const char* key) {
  return metric_number(r.metrics, group, key);
}

// As the CSV and Markdown reports take it (report_csv.cpp peak_rss()): the job's own reading first.
std::optional<double> peak_rss(const ReportRow& r) {
  if (auto v = metric(r, "memory", "peak_rss_bytes")) return v;
  return metric(r, "process", "peak_rss_bytes");
}

// Interned text: the job table repeats a few dozen strings 100k times.
class StringTable {
 public:
  int operator()(const std::string& s) {
    auto [it, inserted] = index_.try_emplace(s, static_cast<int>(strings_.size()));
    if (inserted) strings_.push_back(repair_utf8(s));
    return it->second;
  }
  json to_json() const { return strings_; }

 private:
  std::unordered_map<std::string, int> index_;
  std::vector<std::string> strings_;
};

// The q-th quantile (0..1) of sorted samples, linear between order statistics.
double quantile(const std::vector<double>& sorted, double q) {
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - static_cast<double>(lo));
}

std::vector<double> finite_samples(const ReportRow& r) {
  std::vector<double> out;
  const json* lat = r.metrics.is_object() && r.metrics.contains("latency_ms") ? &r.metrics["latency_ms"] : nullptr;
  if (lat == nullptr || !lat->is_object() || !lat->contains("samples") || !(*lat)["samples"].is_array()) return out;
  for (const json& v : (*lat)["samples"]) {
    if (v.is_number() && std::isfinite(v.get<double>()) && v.get<double>() >= 0) out.push_back(v.get<double>());
  }
  std::sort(out.begin(), out.end());
  return out;
}

struct LatencySummary {
  json quantiles = nullptr;   // [count, min, q1, median, q3, max, p90]
  json histogram = nullptr;   // [counts...] of equal bins over [min, max]
  bool noisy = false;
};

LatencySummary summarize_latency_for_page(const ReportRow& r) {
  LatencySummary out;
  const std::vector<double> s = finite_samples(r);
  if (!s.empty()) {
    const double q1 = quantile(s, 0.25), median = quantile(s, 0.5), q3 = quantile(s, 0.75);
    out.quantiles = json::array({static_cast<int64_t>(s.size()), number(s.front()), number(q1), number(median),
                                 number(q3), number(s.back()), number(quantile(s, 0.9))});
    out.noisy = median > 0 && (q3 - q1) / median > kNoisyRelativeIqr;
    const double lo = s.front(), hi = s.back();
    json h = json::array();
    std::vector<int64_t> counts(kHistogramBins, 0);
    for (double v : s) {
      int bin = hi > lo ? static_cast<int>((v - lo) / (hi - lo) * kHistogramBins) : 0;
      counts[static_cast<std::size_t>(std::clamp(bin, 0, kHistogramBins - 1))]++;
    }
    for (int64_t c : counts) h.push_back(c);
    out.histogram = std::move(h);
    return out;
  }
  if (auto median = metric(r, "latency_ms", "median")) {
    const std::optional<double> count = metric(r, "latency_ms", "count");
    out.quantiles = json::array({count && *count >= 0 && *count < 1e12 ? static_cast<int64_t>(*count) : 0,
                                 number(metric(r, "latency_ms", "min")), nullptr, number(median), nullptr,
                                 number(metric(r, "latency_ms", "max")), number(metric(r, "latency_ms", "p90"))});
  }
  return out;
}

// The order in which a heatmap cell shows its best rating: speed-ups first, then the baseline
// itself, then cells whose speed-up is uncertain or missing, then the ones that did not work.
int rating_rank(Rating r) {
  switch (r) {
    case Rating::kExcellent: return 0;
    case Rating::kGood: return 1;
    case Rating::kBaseline: return 2;
    case Rating::kModerate: return 3;
    case Rating::kNoisy: return 4;
    case Rating::kNoBaseline: return 5;
    case Rating::kAccuracyOnly: return 6;
    case Rating::kPoor: return 7;
    case Rating::kUnsupported: return 8;
    case Rating::kFailed: return 9;
    case Rating::kPending: return 10;
    case Rating::kNotRun: return 11;
  }
  return 11;
}

json spec_number(const json& spec, const char* key) {
  if (spec.is_object() && spec.contains(key) && spec[key].is_number()) return spec[key];
  return nullptr;
}

std::string spec_text(const json& spec, const char* key) {
  if (spec.is_object() && spec.contains(key)) {
    if (spec[key].is_string()) return spec[key].get<std::string>();
    if (spec[key].is_number()) return spec[key].dump();
  }
  return {};
}

json class_json(const std::string& id, const json& device, const json& caps, const std::string& backend_hint) {
  const json cpu = caps.is_object() && caps.contains("cpu") ? caps["cpu"] : json::object();
  const json topology = caps.is_object() && caps.contains("topology") ? caps["topology"] : json::object();
  json isa = json::array();
  if (cpu.is_object() && cpu.contains("isa") && cpu["isa"].is_object()) {
    for (const auto& [flag, on] : cpu["isa"].items()) {
      if (on.is_boolean() && on.get<bool>()) isa.push_back(repair_utf8(flag));
    }
  }
  auto text = [](const json& doc, const char* key) {
    return doc.is_object() && doc.contains(key) && doc[key].is_string() ? repair_utf8(doc[key].get<std::string>())
                                                                         : std::string();
  };
  const bool known = device.is_object();
  std::string label = known ? hardware_class_label(device, cpu, topology) : std::string();
  if (label.empty()) label = id.empty() ? "(unknown)" : id;
  const bool software = known && device.contains("software") && device["software"].is_boolean() &&
                        device["software"].get<bool>();
  json host = caps.is_object() && caps.contains("host") && caps["host"].is_object() ? caps["host"] : json::object();
  return {{"id", repair_utf8(id)},
          {"label", repair_utf8(label)},
          {"backend", known ? text(device, "backend") : repair_utf8(backend_hint)},
          {"software", software},
          {"device", known ? device : json::object()},
          {"cpu",
           {{"model", text(cpu, "model")},
            {"vendor", text(cpu, "vendor")},
            {"arch", text(cpu, "arch")},
            {"isa_level", text(cpu, "isa_level")},
            {"isa_summary", repair_utf8(isa_summary(cpu))},
            {"isa", std::move(isa)}}},
          {"topology", topology.is_object() ? topology : json::object()},
          {"host", std::move(host)},
          {"workers", json::array()},
          {"jobs", 0}};
}

// [load_start, load_end, cpus, other_load, steal_fraction] of metrics.host, or null.
json host_json(const ReportRow& r) {
  auto host = host_load(r.metrics);
  if (!host) return nullptr;
  return json::array({number(host->load_start), number(host->load_end),
                      host->cpus ? json(*host->cpus) : json(nullptr), number(host->other_load),
                      number(host->steal_fraction)});
}

json host_busy_json(const ReportRow& r) {
  auto host = host_load(r.metrics);
  if (!host) return nullptr;
  return host_busy(*host) ? 1 : 0;
}

}  // namespace

const std::vector<const char*>& dashboard_job_columns() {
  static const std::vector<const char*> columns = {
      "id", "model", "architecture", "backend", "precision", "batch", "seq_len", "mode", "status", "reason",
      "attempt", "attempts", "worker", "hardware_class", "device", "build", "seed", "scaled", "start_s",
      "wall_s", "latency", "histogram", "tokens_per_s", "ttft_ms", "decode_tokens_per_s", "nmse", "cosine",
      "top1", "kl", "peak_rss_bytes", "noisy", "cell", "host", "host_busy"};
  return columns;
}

struct DashboardBuilder::State {
  RunRecord run;
  std::map<std::string, const WorkerRecord*> worker_by_id;
  RunSummaryBuilder summary_builder;
  MatrixBuilder matrix_builder;
  std::size_t rows = 0;
  // What the cells need of their jobs once the matrix is known: each job's row and peak RSS.
  std::unordered_map<std::string, std::size_t> row_of_job;
  std::vector<double> peak_of_row;   // NaN: none measured
  // Hardware classes, from the first capability record that lists each one.
  json classes = json::array();
  std::map<std::string, std::size_t> class_index;
  // Failure reasons per architecture × backend × status × reason, with their rows.
  std::map<std::tuple<std::string, std::string, std::string, std::string>, std::vector<std::size_t>> failures;
  // The job table, by column, as JSON text (each column's values without its brackets) in chunks,
  // so a million jobs are held as the bytes the page carries, not as trees.
  StringTable strings;
  std::vector<ChunkedText> job_columns = std::vector<ChunkedText>(dashboard_job_columns().size());
  std::size_t cell_column = 0;   // "cell": written once the matrix is known
};

DashboardBuilder::DashboardBuilder(const RunRecord& run, const std::vector<WorkerRecord>& workers)
    : state_(std::make_unique<State>()) {
  state_->run = run;
  for (const WorkerRecord& w : workers) state_->worker_by_id[w.worker_id] = &w;
  const auto& names = dashboard_job_columns();
  state_->cell_column = static_cast<std::size_t>(
      std::find_if(names.begin(), names.end(), [](const char* n) { return std::string_view(n) == "cell"; }) -
      names.begin());
}

DashboardBuilder::~DashboardBuilder() = default;

const ReportDocumentKeys& DashboardBuilder::keys() {
  static const std::vector<std::string_view> spec = [] {
    std::vector<std::string_view> k = matrix_spec_keys();
    for (std::string_view extra : {"batch", "seq_len", "mode", "seed", "scaled"}) {
      if (std::find(k.begin(), k.end(), extra) == k.end()) k.push_back(extra);
    }
    return k;
  }();
  static const std::vector<std::string_view> metrics = [] {
    std::vector<std::string_view> k = matrix_metrics_keys();
    for (std::string_view extra :
         {"latency_ms.count", "latency_ms.min", "latency_ms.max", "latency_ms.median", "latency_ms.p90",
          "latency_ms.samples", "process.wall_s", "process.peak_rss_bytes", "memory.peak_rss_bytes",
          "throughput.tokens_per_s", "generation.time_to_first_token_ms_median", "generation.decode_tokens_per_s",
          "accuracy.nmse", "accuracy.cosine", "accuracy.top1_agreement", "accuracy.kl_divergence", "host"}) {
      if (std::find(k.begin(), k.end(), extra) == k.end()) k.push_back(extra);
    }
    return k;
  }();
  static const ReportDocumentKeys keys{&spec, &metrics};
  return keys;
}

void DashboardBuilder::add(const ReportRow& r) {
  State& st = *state_;
  const std::size_t i = st.rows++;
  st.summary_builder.add(r);
  st.matrix_builder.add(r);
  st.row_of_job.emplace(r.job_id, i);
  const std::optional<double> peak = peak_rss(r);
  st.peak_of_row.push_back(peak ? *peak : std::nan(""));

  if (!r.hardware_class.empty()) {
    auto it = st.class_index.find(r.hardware_class);
    if (it == st.class_index.end()) {
      json device;
      json caps = json::object();
      auto w = st.worker_by_id.find(r.worker_id);
      if (w != st.worker_by_id.end() && w->second->capabilities.is_object() &&
          w->second->capabilities.contains("devices") && w->second->capabilities["devices"].is_array()) {
        for (const json& d : w->second->capabilities["devices"]) {
          if (d.is_object() && d.contains("hardware_class") && d["hardware_class"] == r.hardware_class) {
            device = d;
            caps = w->second->capabilities;
            break;
          }
        }
      }
      it = st.class_index.emplace(r.hardware_class, st.classes.size()).first;
      st.classes.push_back(class_json(r.hardware_class, device, caps, r.backend));
    }
    json& c = st.classes[it->second];
    c["jobs"] = c["jobs"].get<int64_t>() + 1;
    const std::string worker = repair_utf8(r.worker_id);
    if (!worker.empty() && std::find(c["workers"].begin(), c["workers"].end(), worker) == c["workers"].end()) {
      c["workers"].push_back(worker);
    }
  }

  if (r.status &&
      (is_test_failure(*r.status) || is_infrastructure(*r.status) || *r.status == ResultStatus::kUnsupported)) {
    st.failures[{r.architecture, r.backend, std::string(to_string(*r.status)), r.reason}].push_back(i);
  }

  StringTable& s = st.strings;
  const LatencySummary lat = summarize_latency_for_page(r);
  const std::string status = r.status ? std::string(to_string(*r.status)) : std::string(to_string(r.state));
  std::optional<double> start_s, wall_s = metric(r, "process", "wall_s");
  if (r.started_at_ms > 0 && st.run.created_at_ms > 0) {
    start_s = static_cast<double>(r.started_at_ms - st.run.created_at_ms) / 1e3;
  }
  if (!wall_s && r.started_at_ms > 0 && r.finished_at_ms >= r.started_at_ms) {
    wall_s = static_cast<double>(r.finished_at_ms - r.started_at_ms) / 1e3;
  }
  const bool scaled = r.spec.is_object() && r.spec.contains("scaled") && r.spec["scaled"].is_boolean() &&
                      r.spec["scaled"].get<bool>();
  const json row = json::array({repair_utf8(r.job_id), s(r.model), s(r.architecture), s(r.backend),
                                s(std::string(jobs::to_string(r.precision))), spec_number(r.spec, "batch"),
                                spec_number(r.spec, "seq_len"), s(spec_text(r.spec, "mode")), s(status),
                                s(r.reason), r.attempt, r.attempts, s(r.worker_id), s(r.hardware_class),
                                s(r.device), s(r.build), repair_utf8(spec_text(r.spec, "seed")), scaled ? 1 : 0,
                                number(start_s), number(wall_s), lat.quantiles, lat.histogram,
                                number(metric(r, "throughput", "tokens_per_s")),
                                number(metric(r, "generation", "time_to_first_token_ms_median")),
                                number(metric(r, "generation", "decode_tokens_per_s")),
                                number(metric(r, "accuracy", "nmse")), number(metric(r, "accuracy", "cosine")),
                                number(metric(r, "accuracy", "top1_agreement")),
                                number(metric(r, "accuracy", "kl_divergence")), number(peak),
                                lat.noisy ? 1 : 0, nullptr /* cell: at finish */, host_json(r), host_busy_json(r)});
  for (std::size_t c = 0; c < st.job_columns.size(); ++c) {
    if (c == st.cell_column) continue;
    std::string& column = st.job_columns[c].tail();
    if (i > 0) column += ',';
    append_json(column, row[c]);
  }
}

std::string DashboardBuilder::finish(int64_t generated_at_ms) {
  return collect_text([&](const TextSink& sink) { return finish(generated_at_ms, sink); });
}

Status DashboardBuilder::finish(int64_t generated_at_ms, const TextSink& sink) {
  State& st = *state_;
  // Everything but the job table, made while the matrix is alive; the matrix is gone before the
  // table is written.
  std::string head_text;
  {
    const RunSummary summary = st.summary_builder.finish();
    const Matrix matrix = st.matrix_builder.finish();
    const RunRecord& run = st.run;

    // Cells, with the row indices of their jobs.
    std::vector<int> cell_of_row(st.rows, -1);
    json cells = json::array();
    for (std::size_t ci = 0; ci < matrix.cells.size(); ++ci) {
      const MatrixCell& c = matrix.cells[ci];
      json cell = matrix_cell_json(c);
      const jobs::PrecisionInfo& info = jobs::precision_info(c.precision);
      cell["group"] = std::string(info.group);
      cell["bits"] = info.format ? json(jobs::bits_per_weight(*info.format)) : json(nullptr);
      json job_rows = json::array();
      std::optional<double> peak;
      for (const std::string& id : c.job_ids) {
        auto it = st.row_of_job.find(id);
        if (it == st.row_of_job.end()) continue;
        cell_of_row[it->second] = static_cast<int>(ci);
        job_rows.push_back(it->second);
        if (const double p = st.peak_of_row[it->second]; !std::isnan(p)) peak = std::max(peak.value_or(0.0), p);
      }
      cell["peak_rss_max"] = number(peak);
      cell["jobs"] = std::move(job_rows);
      cell.erase("job_ids");  // "jobs" names them by row; 16 hex digits each do not compress
      cells.push_back(std::move(cell));
    }
    st.row_of_job = {};
    // By column, like the job table: 7 classes × 3 backends make ~75k cells of a 100k-job run, and
    // the same keys repeated per cell cost more than their values.
    json cell_table = json::object();
    for (const json& cell : cells) {
      for (const auto& [key, value] : cell.items()) {
        if (!cell_table.contains(key)) cell_table[key] = json::array();
      }
    }
    // Values are moved, not copied: at a million jobs the cells' shapes are most of a gigabyte.
    const std::size_t cell_count = cells.size();
    for (auto& [key, column] : cell_table.items()) {
      for (json& cell : cells) {
        auto value = cell.find(key);
        column.push_back(value != cell.end() ? std::move(*value) : json(nullptr));
      }
    }
    cells = json();
    {
      ChunkedText& column = st.job_columns[st.cell_column];
      for (std::size_t i = 0; i < cell_of_row.size(); ++i) {
        std::string& tail = column.tail();
        if (i > 0) tail += ',';
        tail += std::to_string(cell_of_row[i]);
      }
    }

    // Overview, with the best rating of each architecture × column (backend × hardware class).
    json overview = json::array();
    for (const OverviewCell& o : matrix.overview) {
      json cell = overview_cell_json(o);
      std::optional<Rating> best;
      std::set<std::string> classes;
      for (const MatrixCell& c : matrix.cells) {
        if (c.architecture != o.architecture || c.backend != o.backend || c.hardware_class != o.hardware_class) {
          continue;
        }
        if (!best || rating_rank(c.rating) < rating_rank(*best)) best = c.rating;
        classes.insert(c.hardware_classes.begin(), c.hardware_classes.end());
      }
      cell["best_rating"] = std::string(rating_key(best.value_or(Rating::kNotRun)));
      json class_list = json::array();
      for (const std::string& id : classes) class_list.push_back(repair_utf8(id));
      cell["hardware_classes"] = std::move(class_list);
      overview.push_back(std::move(cell));
    }

    json failure_list = json::array();
    for (const auto& [key, ids] : st.failures) {
      failure_list.push_back({{"architecture", repair_utf8(std::get<0>(key))},
                              {"backend", repair_utf8(std::get<1>(key))},
                              {"status", std::get<2>(key)},
                              {"reason", repair_utf8(std::get<3>(key))},
                              {"count", ids.size()},
                              {"jobs", ids}});
    }

    json by_status = json::object(), by_state = json::object();
    for (const auto& [status, n] : summary.by_status) by_status[std::string(to_string(status))] = n;
    for (const auto& [state, n] : summary.by_state) by_state[std::string(to_string(state))] = n;
    json worker_list = json::array();
    for (const WorkerSummary& w : summary.workers) {
      json hw = json::array();
      for (const std::string& c : w.hardware_classes) hw.push_back(repair_utf8(c));
      worker_list.push_back({{"worker_id", repair_utf8(w.worker_id)},
                             {"hostname", repair_utf8(w.hostname)},
                             {"build", repair_utf8(w.build)},
                             {"jobs", w.jobs},
                             {"hardware_classes", std::move(hw)}});
    }
    json builds = json::array();
    for (const std::string& b : summary.builds) builds.push_back(repair_utf8(b));
    json precisions = json::array();
    for (const jobs::PrecisionInfo& p : jobs::all_precisions()) {
      precisions.push_back({{"name", std::string(p.name)},
                            {"group", std::string(p.group)},
                            {"bits", p.format ? json(jobs::bits_per_weight(*p.format)) : json(nullptr)}});
    }
    // Command jobs whose precision is none of ours carry the "external" label: its own column.
    for (const MatrixCell& c : matrix.cells) {
      if (c.precision != jobs::Precision::kExternal) continue;
      const jobs::PrecisionInfo& p = jobs::precision_info(c.precision);
      precisions.push_back({{"name", std::string(p.name)}, {"group", std::string(p.group)}, {"bits", nullptr}});
      break;
    }

    const json head = {{"schema", kDashboardSchema},
                       {"generated_at", format_utc(generated_at_ms)},
                       {"run",
                        {{"run_id", repair_utf8(run.run_id)},
                         {"plan_name", repair_utf8(run.plan_name)},
                         {"plan_path", repair_utf8(run.plan_path)},
                         {"description", repair_utf8(run.description)},
                         {"created_at", format_utc(run.created_at_ms)},
                         {"finished_at", format_utc(run.finished_at_ms)}}},
                       {"summary",
                        {{"total", summary.total},
                         {"terminal", summary.terminal},
                         {"by_status", std::move(by_status)},
                         {"by_state", std::move(by_state)}}},
                       {"builds", std::move(builds)},
                       {"rating_rules", rating_rules_json()},
                       {"workers", std::move(worker_list)},
                       {"classes", std::move(st.classes)},
                       {"precisions", std::move(precisions)},
                       {"overview", std::move(overview)},
                       {"cell_count", cell_count},
                       {"cells", std::move(cell_table)},
                       {"failures", std::move(failure_list)},
                       {"strings", st.strings.to_json()},
                       {"job_count", st.rows}};
    head_text = to_json_text(head);
  }
  // The head's text with the job table spliced in as its last member, a column at a time.
  head_text.pop_back();   // the closing '}'
  head_text += ",\"jobs\":{";
  AM_RETURN_IF_ERROR(sink(head_text));
  const auto& names = dashboard_job_columns();
  for (std::size_t c = 0; c < names.size(); ++c) {
    std::string name = c > 0 ? "," : "";
    append_json_string(name, names[c]);
    name += ":[";
    AM_RETURN_IF_ERROR(sink(name));
    AM_RETURN_IF_ERROR(st.job_columns[c].write_to(sink));
    AM_RETURN_IF_ERROR(sink("]"));
    st.job_columns[c].clear();
  }
  return sink("}}");
}

json dashboard_data(const RunRecord& run, const std::vector<ReportRow>& rows,
                    const std::vector<WorkerRecord>& workers, int64_t generated_at_ms) {
  DashboardBuilder builder(run, workers);
  for (const ReportRow& r : rows) builder.add(r);
  return json::parse(builder.finish(generated_at_ms));
}

}  // namespace am::coord
