#include "coordinator/report_compare.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include <fmt/format.h>

#include "coordinator/report_common.h"
#include "coordinator/report_text.h"

namespace am::coord {
namespace {

constexpr std::size_t kMaxCellChars = 120;
constexpr std::string_view kMissing = "—";

// Spec fields that are the match key itself, or that say nothing about how the job was measured.
const std::set<std::string>& key_fields() {
  static const std::set<std::string> k = {"model", "architecture", "backend", "precision", "batch", "seq_len"};
  return k;
}

std::optional<double> number_at(const nlohmann::json& metrics, std::string_view group, std::string_view key) {
  const nlohmann::json* v = metric_value(metrics, group, key);
  if (!v || !v->is_number()) return std::nullopt;
  const double d = v->get<double>();
  if (!std::isfinite(d)) return std::nullopt;
  return d;
}

// The stored raw samples, when every one is a positive finite number; a document with anything
// else is not trusted at all (a partial list would bias the test).
std::vector<double> usable_samples(const nlohmann::json& metrics, std::string* why) {
  const nlohmann::json* samples = metric_value(metrics, "latency_ms", "samples");
  if (!samples || !samples->is_array() || samples->empty()) {
    *why = "no latency samples";
    return {};
  }
  std::vector<double> out;
  out.reserve(samples->size());
  for (const auto& s : *samples) {
    if (!s.is_number()) {
      *why = "a stored latency sample is not a number";
      return {};
    }
    const double v = s.get<double>();
    if (!std::isfinite(v) || v <= 0.0) {
      *why = "a stored latency sample is not a positive finite number";
      return {};
    }
    out.push_back(v);
  }
  return out;
}

ComparedSide side_of(const ReportRow& r, std::string* samples_note) {
  ComparedSide s;
  s.job_id = r.job_id;
  s.state = r.state;
  s.status = r.status;
  s.reason = r.reason;
  s.samples_ms = usable_samples(r.metrics, samples_note);
  if (!s.samples_ms.empty()) s.median_ms = stats::median(s.samples_ms);
  s.nmse = number_at(r.metrics, "accuracy", "nmse");
  s.cosine = number_at(r.metrics, "accuracy", "cosine");
  s.top1_agreement = number_at(r.metrics, "accuracy", "top1_agreement");
  const std::optional<double> user = number_at(r.metrics, "process", "cpu_user_s");
  const std::optional<double> sys = number_at(r.metrics, "process", "cpu_sys_s");
  if (user && sys) s.cpu_s = *user + *sys;
  s.wall_s = number_at(r.metrics, "process", "wall_s");
  if (r.metrics.is_object()) {
    auto t = r.metrics.find("threads");
    if (t != r.metrics.end() && t->is_number()) s.threads = t->get<double>();
  }
  return s;
}

// An integer field of the stored spec; 0 when absent, not an integer or outside int (the spec
// was validated when the plan was loaded, but the database is a file anyone can edit).
int spec_int(const nlohmann::json& spec, const char* field) {
  if (!spec.is_object()) return 0;
  auto it = spec.find(field);
  if (it == spec.end() || !it->is_number_integer()) return 0;
  const auto v = it->get<int64_t>();
  if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max()) return 0;
  return static_cast<int>(v);
}

JobKey key_of(const ReportRow& r) {
  JobKey k;
  k.model = r.model;
  k.command = command_key(r.spec);
  k.backend = r.backend;
  k.hardware_class = r.hardware_class;
  k.precision = r.precision;
  k.batch = spec_int(r.spec, "batch");
  k.seq_len = spec_int(r.spec, "seq_len");
  return k;
}

StatusChange classify(const ComparedSide& b, const ComparedSide& n) {
  if (!b.status || !n.status) return StatusChange::kUnfinished;
  const ResultStatus bs = *b.status;
  const ResultStatus ns = *n.status;
  if (bs == ns) return StatusChange::kNone;
  if (is_working(bs) && is_test_failure(ns)) return StatusChange::kBroke;
  if (is_test_failure(bs) && is_working(ns)) return StatusChange::kFixed;
  if (ns == ResultStatus::kUnsupported) return StatusChange::kNewUnsupported;
  if (bs == ResultStatus::kUnsupported) return StatusChange::kNowSupported;
  return StatusChange::kChanged;
}

std::vector<SpecChange> spec_changes(const nlohmann::json& base, const nlohmann::json& fresh) {
  std::vector<SpecChange> out;
  if (!base.is_object() || !fresh.is_object()) return out;
  std::set<std::string> fields;
  for (auto it = base.begin(); it != base.end(); ++it) fields.insert(it.key());
  for (auto it = fresh.begin(); it != fresh.end(); ++it) fields.insert(it.key());
  for (const std::string& f : fields) {
    if (key_fields().count(f)) continue;
    const nlohmann::json b = base.contains(f) ? base.at(f) : nlohmann::json();
    const nlohmann::json n = fresh.contains(f) ? fresh.at(f) : nlohmann::json();
    if (b != n) out.push_back({f, b, n});
  }
  return out;
}

// The spec changes of base row `bi` against new row `ni`, from the sides' spec texts when both
// carry them (equal texts: none; else both parsed), else from the rows' spec trees.
std::vector<SpecChange> spec_changes_of(const CompareSide& base, std::size_t bi, const CompareSide& fresh,
                                        std::size_t ni) {
  if (base.spec_texts.size() != base.rows.size() || fresh.spec_texts.size() != fresh.rows.size()) {
    return spec_changes(base.rows[bi].spec, fresh.rows[ni].spec);
  }
  const std::string& b = base.spec_texts[bi];
  const std::string& n = fresh.spec_texts[ni];
  if (b == n) return {};
  const auto parsed = [](const std::string& text) {
    nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    return doc.is_discarded() ? nlohmann::json() : doc;
  };
  return spec_changes(parsed(b), parsed(n));
}

void compare_latency(ComparedJob& j, const std::string& base_note, const std::string& new_note,
                     const CompareOptions& o) {
  const ComparedSide& b = *j.base;
  const ComparedSide& n = *j.fresh;
  if (b.samples_ms.empty() || n.samples_ms.empty()) {
    j.latency_note = b.samples_ms.empty() ? "base: " + base_note : "new: " + new_note;
    return;
  }
  j.ratio = *n.median_ms / *b.median_ms;
  // Samples of a few denormals (a hand-edited database) overflow the ratio: no verdict rests on
  // an infinite or undefined one.
  if (!std::isfinite(*j.ratio) || *j.ratio <= 0.0) {
    j.latency_note = fmt::format("the medians ({} ms base, {} ms new) give no finite ratio", *b.median_ms, *n.median_ms);
    j.ratio.reset();
    return;
  }
  if (b.samples_ms.size() < o.min_samples || n.samples_ms.size() < o.min_samples) {
    j.latency_note = fmt::format("too few samples ({} base, {} new; at least {} each)", b.samples_ms.size(),
                                 n.samples_ms.size(), o.min_samples);
    return;
  }
  auto u = stats::mann_whitney_u(n.samples_ms, b.samples_ms, stats::Alternative::kTwoSided);
  if (!u.ok()) {
    j.latency_note = u.status().message();
    return;
  }
  j.p_value = u->p_value;
  j.effect = u->effect();
  auto ci = stats::bootstrap_median_ratio(b.samples_ms, n.samples_ms, o.bootstrap);
  if (ci.ok() && std::isfinite(ci->low) && std::isfinite(ci->high)) j.ci = *ci;
  j.verdict = LatencyVerdict::kSame;   // until Holm says otherwise
}

std::string shape_text(const JobKey& k) { return fmt::format("b{} s{}", k.batch, k.seq_len); }

std::string status_text(const std::optional<ComparedSide>& s) {
  if (!s) return std::string(kMissing);
  if (s->status) return std::string(to_string(*s->status));
  return "(" + std::string(to_string(s->state)) + ")";
}

std::string cell(std::string_view text) { return markdown_cell(text, kMaxCellChars); }
std::string code(std::string_view text) { return markdown_code(text, kMaxCellChars); }
// The precision column: an external command's name and label beside "external".
std::string precision_cell(const JobKey& k) {
  const std::string p(jobs::to_string(k.precision));
  return k.command.empty() ? p : p + " (" + cell(k.command) + ")";
}

std::string ms(std::optional<double> v) {
  if (!v) return std::string(kMissing);
  const double a = std::abs(*v);
  const int decimals = a >= 100 ? 1 : a >= 10 ? 2 : a >= 1 ? 3 : 4;
  return fmt::format("{:.{}f}", *v, decimals);
}

std::string ratio_text(std::optional<double> r) { return r ? fmt::format("{:.3f}×", *r) : std::string(kMissing); }

std::string p_text(std::optional<double> p) {
  if (!p) return std::string(kMissing);
  if (*p < 1e-4) return fmt::format("{:.1e}", *p);
  return fmt::format("{:.4f}", *p);
}

std::string sci(std::optional<double> v) { return v ? fmt::format("{:.2e}", *v) : std::string(kMissing); }

std::string verdict_text(const ComparedJob& j) {
  switch (j.verdict) {
    case LatencyVerdict::kNotCompared: return "not compared: " + j.latency_note;
    case LatencyVerdict::kSame: return "≈ no significant change";
    case LatencyVerdict::kFaster: return "faster";
    case LatencyVerdict::kSlower: return j.regression ? "**slower: REGRESSION**" : "slower";
  }
  return "";
}

std::string spec_change_text(const std::vector<SpecChange>& changes) {
  std::string out;
  for (const SpecChange& c : changes) {
    if (!out.empty()) out += "; ";
    if (c.base.is_object() || c.fresh.is_object() || c.base.is_array() || c.fresh.is_array()) {
      out += c.field + " differs";
    } else {
      out += c.field + " " + (c.base.is_null() ? "unset" : c.base.dump()) + " → " +
             (c.fresh.is_null() ? "unset" : c.fresh.dump());
    }
  }
  return out;
}

std::string run_line(const std::string& db, const RunRecord& r, int jobs) {
  return fmt::format("{} run {} (plan {}, {} jobs, started {}{})", code(db), code(r.run_id),
                     code(r.plan_name), jobs, format_utc(r.created_at_ms),
                     r.finished_at_ms ? ", finished " + format_utc(r.finished_at_ms) : std::string(", not finished"));
}

nlohmann::json opt_json(std::optional<double> v) { return v ? nlohmann::json(*v) : nlohmann::json(); }

nlohmann::json side_json(const std::optional<ComparedSide>& s) {
  if (!s) return nullptr;
  return {{"job_id", s->job_id},
          {"state", to_string(s->state)},
          {"status", s->status ? nlohmann::json(std::string(to_string(*s->status))) : nlohmann::json()},
          {"reason", repair_utf8(s->reason)},
          {"latency_median_ms", opt_json(s->median_ms)},
          {"latency_samples", s->samples_ms.size()},
          {"nmse", opt_json(s->nmse)},
          {"cosine", opt_json(s->cosine)},
          {"top1_agreement", opt_json(s->top1_agreement)},
          {"process_cpu_s", opt_json(s->cpu_s)},
          {"process_wall_s", opt_json(s->wall_s)},
          {"threads", opt_json(s->threads)}};
}

}  // namespace

bool JobKey::operator<(const JobKey& o) const {
  return std::tie(model, backend, hardware_class, precision, command, batch, seq_len) <
         std::tie(o.model, o.backend, o.hardware_class, o.precision, o.command, o.batch, o.seq_len);
}
bool JobKey::operator==(const JobKey& o) const { return !(*this < o) && !(o < *this); }

std::string_view to_string(LatencyVerdict v) {
  switch (v) {
    case LatencyVerdict::kNotCompared: return "not_compared";
    case LatencyVerdict::kSame: return "same";
    case LatencyVerdict::kSlower: return "slower";
    case LatencyVerdict::kFaster: return "faster";
  }
  return "not_compared";
}

std::string_view to_string(StatusChange c) {
  switch (c) {
    case StatusChange::kNone: return "none";
    case StatusChange::kBroke: return "broke";
    case StatusChange::kFixed: return "fixed";
    case StatusChange::kNewUnsupported: return "new_unsupported";
    case StatusChange::kNowSupported: return "now_supported";
    case StatusChange::kChanged: return "changed";
    case StatusChange::kUnfinished: return "unfinished";
    case StatusChange::kNewJob: return "new_job";
    case StatusChange::kMissingJob: return "missing_job";
  }
  return "none";
}

Result<Comparison> compare_runs(const CompareSide& base, const CompareSide& fresh, const CompareOptions& options) {
  if (!(options.alpha > 0.0 && options.alpha <= 0.5)) {
    return invalid_argument("--alpha must be a number above 0 and at most 0.5 (got " + std::to_string(options.alpha) + ")");
  }
  if (!(std::isfinite(options.threshold_pct) && options.threshold_pct >= 0.0)) {
    return invalid_argument("--fail-on-regression: the percentage must be a finite number >= 0");
  }
  if (options.min_samples < 2) return invalid_argument("compare: min_samples must be at least 2");

  Comparison c;
  c.base_db = base.db;
  c.new_db = fresh.db;
  c.base_run = base.run;
  c.new_run = fresh.run;
  c.base_jobs = static_cast<int>(base.rows.size());
  c.new_jobs = static_cast<int>(fresh.rows.size());
  c.options = options;

  // (key, occurrence) -> index into fresh.rows.
  std::map<std::pair<JobKey, int>, std::size_t> new_index;
  {
    std::map<JobKey, int> seen;
    for (std::size_t i = 0; i < fresh.rows.size(); ++i) {
      const JobKey k = key_of(fresh.rows[i]);
      new_index.emplace(std::make_pair(k, seen[k]++), i);
    }
  }
  std::vector<bool> new_used(fresh.rows.size(), false);
  std::map<JobKey, int> seen;
  for (const ReportRow& br : base.rows) {
    ComparedJob j;
    j.key = key_of(br);
    j.occurrence = seen[j.key]++;
    std::string base_note, new_note;
    j.base = side_of(br, &base_note);
    auto it = new_index.find({j.key, j.occurrence});
    if (it == new_index.end()) {
      j.status_change = StatusChange::kMissingJob;
      j.latency_note = "missing in the new run";
      c.jobs.push_back(std::move(j));
      continue;
    }
    new_used[it->second] = true;
    j.fresh = side_of(fresh.rows[it->second], &new_note);
    j.status_change = classify(*j.base, *j.fresh);
    const std::size_t bi = static_cast<std::size_t>(&br - base.rows.data());
    j.spec_changes = spec_changes_of(base, bi, fresh, it->second);
    compare_latency(j, base_note, new_note, options);
    c.jobs.push_back(std::move(j));
  }
  {
    std::map<JobKey, int> seen_new;
    for (std::size_t i = 0; i < fresh.rows.size(); ++i) {
      const JobKey k = key_of(fresh.rows[i]);
      const int occurrence = seen_new[k]++;
      if (new_used[i]) continue;
      ComparedJob j;
      j.key = k;
      j.occurrence = occurrence;
      std::string note;
      j.fresh = side_of(fresh.rows[i], &note);
      j.status_change = StatusChange::kNewJob;
      j.latency_note = "new in this run";
      c.jobs.push_back(std::move(j));
    }
  }

  // Holm over every pair that has a p-value: the family is "all latencies compared here".
  std::vector<std::size_t> tested;
  std::vector<double> p;
  for (std::size_t i = 0; i < c.jobs.size(); ++i) {
    if (c.jobs[i].p_value) {
      tested.push_back(i);
      p.push_back(*c.jobs[i].p_value);
    }
  }
  AM_ASSIGN_OR_RETURN(std::vector<double> adjusted, stats::holm_adjust(p));
  for (std::size_t t = 0; t < tested.size(); ++t) {
    ComparedJob& j = c.jobs[tested[t]];
    j.p_holm = adjusted[t];
    if (adjusted[t] < options.alpha) {
      j.verdict = *j.effect > 0.5 ? LatencyVerdict::kSlower : LatencyVerdict::kFaster;
      if (*j.effect == 0.5) j.verdict = LatencyVerdict::kSame;
    }
  }

  const double limit = 1.0 + options.threshold_pct / 100.0;
  CompareSummary& s = c.summary;
  for (ComparedJob& j : c.jobs) {
    // Beyond PCT with confidence: the whole bootstrap interval of the ratio clears the limit, not
    // just the point estimate (two identical runs on a 2-core VM differed by 17% with p < 1e-4).
    if (j.verdict == LatencyVerdict::kSlower && j.ci && j.ci->low >= limit) {
      j.regression = true;
      ++s.slowdown_regressions;
    }
    if (j.status_change == StatusChange::kBroke) j.regression = true;
    if (j.base && j.fresh) ++s.matched;
    if (j.verdict != LatencyVerdict::kNotCompared) ++s.compared;
    if (j.verdict == LatencyVerdict::kSlower) ++s.slower;
    if (j.verdict == LatencyVerdict::kFaster) ++s.faster;
    if (j.verdict == LatencyVerdict::kSame) ++s.same;
    switch (j.status_change) {
      case StatusChange::kBroke: ++s.broke; break;
      case StatusChange::kFixed: ++s.fixed; break;
      case StatusChange::kNewUnsupported: ++s.new_unsupported; break;
      case StatusChange::kNowSupported: ++s.now_supported; break;
      case StatusChange::kChanged: ++s.changed; break;
      case StatusChange::kUnfinished: ++s.unfinished; break;
      case StatusChange::kNewJob: ++s.new_jobs; break;
      case StatusChange::kMissingJob: ++s.missing_jobs; break;
      case StatusChange::kNone: break;
    }
    c.regression = c.regression || j.regression;
  }
  return c;
}

std::string render_compare_markdown(const Comparison& c) {
  const CompareOptions& o = c.options;
  const CompareSummary& s = c.summary;
  std::ostringstream out;
  out << "# accelmatrix compare\n\n";
  out << "- **base**: " << run_line(c.base_db, c.base_run, c.base_jobs) << "\n";
  out << "- **new**: " << run_line(c.new_db, c.new_run, c.new_jobs) << "\n\n";

  const std::string threshold = fmt::format("{}%", format_number(o.threshold_pct));
  if (c.regression) {
    out << fmt::format("**Verdict: REGRESSION** — {} significant slowdown(s) of at least {}, {} job(s) pass→fail.\n\n",
                       s.slowdown_regressions, threshold, s.broke);
  } else {
    out << fmt::format("**Verdict: no regression** — no significant slowdown of at least {}, no job pass→fail.\n\n",
                       threshold);
  }
  out << fmt::format(
      "Method: two-sided Mann–Whitney U test on each job's raw latency samples (normal approximation with "
      "tie and continuity corrections), Holm-adjusted over the {} compared job(s), α = {}. A job is slower "
      "or faster when its adjusted p < α; a slowdown is a regression from {} when the whole {}% "
      "percentile-bootstrap interval of the ratio median(new) / median(base) ({} resamples) is ≥ {}. "
      "Latency is compared when both jobs stored at least {} samples.{}\n\n",
      s.compared, format_number(o.alpha), threshold, format_number(o.bootstrap.confidence * 100.0),
      o.bootstrap.resamples, format_fixed(1.0 + o.threshold_pct / 100.0, 3), o.min_samples,
      o.gate ? "" : " No gate was asked for (`--fail-on-regression PCT`): the exit code is 0.");

  // Counts that are always shown, then only the kinds of change that occurred.
  struct Line {
    std::string what;
    int count;
    bool always;
  };
  const std::vector<Line> lines = {
      {"matched jobs", s.matched, true},
      {"latency compared", s.compared, true},
      {"slower (significant)", s.slower, false},
      {"slower by at least " + threshold + " (regression)", s.slowdown_regressions, true},
      {"faster (significant)", s.faster, false},
      {"no significant change", s.same, false},
      {"pass→fail (regression)", s.broke, true},
      {"fail→pass", s.fixed, false},
      {"newly unsupported", s.new_unsupported, false},
      {"newly supported", s.now_supported, false},
      {"other status changes", s.changed, false},
      {"not finished on a side", s.unfinished, false},
      {"new jobs", s.new_jobs, false},
      {"missing jobs", s.missing_jobs, false},
  };
  out << "## Summary\n\n| | jobs |\n|---|---:|\n";
  for (const Line& l : lines) {
    if (l.always || l.count > 0) out << "| " << l.what << " | " << l.count << " |\n";
  }
  out << "\n";

  out << "## Latency (new / base)\n\n";
  out << "| model | backend | precision | shape | hardware class | base ms | new ms | ratio | "
         "95% CI | p | p (Holm) | verdict | settings changed |\n";
  out << "|---|---|---|---|---|---:|---:|---:|---|---:|---:|---|---|\n";
  for (const ComparedJob& j : c.jobs) {
    if (!j.base || !j.fresh) continue;
    const std::string ci = j.ci ? fmt::format("{:.3f}–{:.3f}", j.ci->low, j.ci->high) : std::string(kMissing);
    out << "| " << cell(j.key.model) << " | " << cell(j.key.backend) << " | " << precision_cell(j.key)
        << " | " << shape_text(j.key) << " | " << (j.key.hardware_class.empty() ? std::string(kMissing) : code(j.key.hardware_class))
        << " | " << ms(j.base->median_ms) << " | " << ms(j.fresh->median_ms) << " | " << ratio_text(j.ratio)
        << " | " << ci << " | " << p_text(j.p_value) << " | " << p_text(j.p_holm) << " | "
        << cell(verdict_text(j)) << " | " << (j.spec_changes.empty() ? std::string(kMissing) : cell(spec_change_text(j.spec_changes)))
        << " |\n";
  }
  out << "\n";

  bool any_status = false;
  for (const ComparedJob& j : c.jobs) any_status = any_status || j.status_change != StatusChange::kNone;
  out << "## Status changes\n\n";
  if (!any_status) {
    out << "None: every job has the same status in both runs.\n\n";
  } else {
    out << "| model | backend | precision | shape | base | new | change | reason (new, else base) |\n";
    out << "|---|---|---|---|---|---|---|---|\n";
    for (const ComparedJob& j : c.jobs) {
      if (j.status_change == StatusChange::kNone) continue;
      std::string change(to_string(j.status_change));
      if (j.status_change == StatusChange::kBroke) change = "**pass→fail: REGRESSION**";
      const std::string reason = j.fresh && !j.fresh->reason.empty() ? j.fresh->reason
                                 : j.base ? j.base->reason : std::string();
      out << "| " << cell(j.key.model) << " | " << cell(j.key.backend) << " | " << precision_cell(j.key)
          << " | " << shape_text(j.key) << " | " << status_text(j.base) << " | " << status_text(j.fresh) << " | "
          << change << " | " << (reason.empty() ? std::string(kMissing) : cell(reason)) << " |\n";
    }
    out << "\n";
  }

  bool any_accuracy = false;
  for (const ComparedJob& j : c.jobs) {
    if (j.base && j.fresh && (j.base->nmse || j.fresh->nmse || j.base->cosine || j.fresh->cosine)) any_accuracy = true;
  }
  if (any_accuracy) {
    out << "## Accuracy (against the f32 cpu reference)\n\n";
    out << "| model | backend | precision | shape | NMSE base | NMSE new | cosine base | cosine new | top-1 base | top-1 new |\n";
    out << "|---|---|---|---|---:|---:|---:|---:|---:|---:|\n";
    for (const ComparedJob& j : c.jobs) {
      if (!j.base || !j.fresh) continue;
      if (!(j.base->nmse || j.fresh->nmse || j.base->cosine || j.fresh->cosine)) continue;
      auto fixed6 = [](std::optional<double> v) { return v ? fmt::format("{:.6f}", *v) : std::string(kMissing); };
      out << "| " << cell(j.key.model) << " | " << cell(j.key.backend) << " | " << precision_cell(j.key)
          << " | " << shape_text(j.key) << " | " << sci(j.base->nmse) << " | " << sci(j.fresh->nmse) << " | "
          << fixed6(j.base->cosine) << " | " << fixed6(j.fresh->cosine) << " | " << fixed6(j.base->top1_agreement)
          << " | " << fixed6(j.fresh->top1_agreement) << " |\n";
    }
    out << "\n";
  }
  return out.str();
}

namespace {

// Everything but "jobs".
nlohmann::json compare_head_json(const Comparison& c) {
  const CompareOptions& o = c.options;
  const CompareSummary& s = c.summary;
  auto run_json = [](const std::string& db, const RunRecord& r, int jobs) {
    return nlohmann::json{{"db", db},
                          {"run_id", r.run_id},
                          {"plan", r.plan_name},
                          {"created_at", format_utc(r.created_at_ms)},
                          {"finished_at", r.finished_at_ms ? nlohmann::json(format_utc(r.finished_at_ms)) : nlohmann::json()},
                          {"jobs", jobs}};
  };
  nlohmann::json doc;
  doc["schema"] = kCompareJsonSchema;
  doc["kind"] = "accelmatrix-compare";
  doc["base"] = run_json(c.base_db, c.base_run, c.base_jobs);
  doc["new"] = run_json(c.new_db, c.new_run, c.new_jobs);
  doc["method"] = {{"test", "mann-whitney-u"},
                   {"alternative", "two-sided"},
                   {"approximation", "normal, tie-corrected variance, continuity correction 0.5"},
                   {"correction", "holm"},
                   {"alpha", o.alpha},
                   {"min_samples", o.min_samples},
                   {"ratio", "median(new samples) / median(base samples)"},
                   {"interval", {{"method", "percentile bootstrap"},
                                 {"confidence", o.bootstrap.confidence},
                                 {"resamples", o.bootstrap.resamples},
                                 {"seed", o.bootstrap.seed}}}};
  doc["gate"] = {{"fail_on_regression_pct", o.gate ? nlohmann::json(o.threshold_pct) : nlohmann::json()},
                 {"threshold_pct", o.threshold_pct}};
  doc["regression"] = c.regression;
  doc["summary"] = {{"matched", s.matched},         {"compared", s.compared},
                    {"slower", s.slower},           {"faster", s.faster},
                    {"same", s.same},               {"slowdown_regressions", s.slowdown_regressions},
                    {"broke", s.broke},             {"fixed", s.fixed},
                    {"new_unsupported", s.new_unsupported}, {"now_supported", s.now_supported},
                    {"changed", s.changed},         {"unfinished", s.unfinished},
                    {"new_jobs", s.new_jobs},       {"missing_jobs", s.missing_jobs}};
  return doc;
}

nlohmann::json compared_job_json(const ComparedJob& j) {
  nlohmann::json changes = nlohmann::json::array();
  for (const SpecChange& sc : j.spec_changes) changes.push_back({{"field", sc.field}, {"base", sc.base}, {"new", sc.fresh}});
  return nlohmann::json{{"model", j.key.model},
                        {"backend", j.key.backend},
                        {"hardware_class", j.key.hardware_class},
                        {"precision", std::string(jobs::to_string(j.key.precision))},
                        {"command", j.key.command},
                        {"batch", j.key.batch},
                        {"seq_len", j.key.seq_len},
                        {"occurrence", j.occurrence},
                        {"base", side_json(j.base)},
                        {"new", side_json(j.fresh)},
                        {"latency", {{"verdict", std::string(to_string(j.verdict))},
                                     {"note", j.latency_note},
                                     {"ratio", opt_json(j.ratio)},
                                     {"ci_low", j.ci ? nlohmann::json(j.ci->low) : nlohmann::json()},
                                     {"ci_high", j.ci ? nlohmann::json(j.ci->high) : nlohmann::json()},
                                     {"p_value", opt_json(j.p_value)},
                                     {"p_holm", opt_json(j.p_holm)},
                                     {"prob_new_slower", opt_json(j.effect)}}},
                        {"status_change", std::string(to_string(j.status_change))},
                        {"regression", j.regression},
                        {"spec_changes", changes}};
}

}  // namespace

nlohmann::json render_compare_json(const Comparison& c) {
  nlohmann::json doc = compare_head_json(c);
  nlohmann::json jobs = nlohmann::json::array();
  for (const ComparedJob& j : c.jobs) jobs.push_back(compared_job_json(j));
  doc["jobs"] = std::move(jobs);
  return doc;
}

std::string render_compare_json_text(const Comparison& c) {
  // The head as dump(2) lays it out, then "jobs" last, one job per line: no tree of every job.
  constexpr auto kReplace = nlohmann::json::error_handler_t::replace;
  std::string out = compare_head_json(c).dump(2, ' ', false, kReplace);
  out.resize(out.size() - 2);   // the closing "\n}"
  out += ",\n  \"jobs\": [";
  for (std::size_t i = 0; i < c.jobs.size(); ++i) {
    out += i == 0 ? "\n    " : ",\n    ";
    out += compared_job_json(c.jobs[i]).dump(-1, ' ', false, kReplace);
  }
  out += c.jobs.empty() ? "]\n}\n" : "\n  ]\n}\n";
  return out;
}

ReportDocumentKeys compare_document_keys() {
  static const std::vector<std::string_view> spec{"batch", "seq_len", "command"};
  static const std::vector<std::string_view> metrics{
      "latency_ms.samples", "accuracy.nmse",     "accuracy.cosine", "accuracy.top1_agreement",
      "process.cpu_user_s", "process.cpu_sys_s", "process.wall_s",  "threads"};
  return ReportDocumentKeys{&spec, &metrics};
}

}  // namespace am::coord
