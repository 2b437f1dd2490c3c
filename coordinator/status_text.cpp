#include "coordinator/status_text.h"

#include <cmath>
#include <ctime>
#include <map>

#include <fmt/format.h>

#include "common/utf8.h"

namespace am::coord {
namespace {

using nlohmann::json;

// Workers choose much of this text (hostnames, device names and reasons): inert on a terminal
// (`status --watch` redraws one), one line each.
std::string str(const json& doc, const char* key) {
  auto it = doc.find(key);
  if (it == doc.end() || it->is_null()) return "?";
  if (it->is_string()) return terminal_safe(it->get<std::string>());
  return it->dump();
}

std::optional<double> num(const json& doc, const char* key) {
  auto it = doc.find(key);
  if (it == doc.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

bool flag(const json& doc, const char* key) {
  auto it = doc.find(key);
  return it != doc.end() && it->is_boolean() && it->get<bool>();
}

std::string counts_text(const json& by_status) {
  if (!by_status.is_object() || by_status.empty()) return "";
  std::string out;
  for (const auto& [status, n] : by_status.items()) {
    out += (out.empty() ? "" : ", ") + (n.is_number() ? std::to_string(n.get<int64_t>()) : std::string("?")) + " " + status;
  }
  return " (" + out + ")";
}

std::string when(int64_t epoch_ms) {
  if (epoch_ms <= 0) return "-";
  const std::time_t t = static_cast<std::time_t>(epoch_ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

}  // namespace

std::string human_duration(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  if (s < 1.0) return fmt::format("{} ms", static_cast<int64_t>(std::lround(s * 1000)));
  if (s < 60.0) return fmt::format("{:.1f} s", s);
  const int64_t total = static_cast<int64_t>(std::lround(s));
  if (total < 3600) return fmt::format("{}m{:02d}s", total / 60, static_cast<int>(total % 60));
  return fmt::format("{}h{:02d}m", total / 3600, static_cast<int>((total % 3600) / 60));
}

std::string render_status_text(const json& status) {
  std::string out;
  const json c = status.value("coordinator", json::object());
  out += fmt::format("coordinator pid {} on {} ({}), {}, up {}, database {}\n", str(c, "pid"), str(c, "host"),
                     str(c, "command"), str(c, "endpoint"), human_duration(num(c, "uptime_s").value_or(NAN)),
                     str(c, "database"));
  const json runs = status.value("runs", json::array());
  out += fmt::format("runs ({})\n", runs.is_array() ? runs.size() : 0);
  if (runs.is_array()) {
    for (const json& r : runs) {
      if (!r.is_object()) continue;
      std::string line = fmt::format("  {}  {}/{} done{}, {} running, {} queued", str(r, "run_id"), str(r, "done"),
                                     str(r, "total"), counts_text(r.value("by_status", json::object())),
                                     str(r, "running"), str(r, "queued"));
      if (auto e = num(r, "elapsed_s")) line += ", elapsed " + human_duration(*e);
      if (auto done = num(r, "done"), total = num(r, "total"); done && total && *done < *total) {
        auto eta = num(r, "eta_s");
        const std::string why = r.contains("eta_unknown_because") ? str(r, "eta_unknown_because") : "no job measured yet";
        line += eta ? ", ETA " + human_duration(*eta) : ", ETA unknown (" + why + ")";
      }
      out += line + "\n";
    }
  }
  const json workers = status.value("workers", json::array());
  out += fmt::format("workers ({})\n", workers.is_array() ? workers.size() : 0);
  if (workers.is_array()) {
    for (const json& w : workers) {
      if (!w.is_object()) continue;
      std::string line = fmt::format("  {}  host {}  slots {}  heard {} ago", str(w, "worker_id"), str(w, "host"),
                                     str(w, "slots"), human_duration(num(w, "last_heard_ms_ago").value_or(NAN) / 1000.0));
      if (flag(w, "draining")) line += "  DRAINING";
      if (flag(w, "quarantined")) {
        line += "  QUARANTINED " + human_duration(num(w, "quarantine_left_s").value_or(NAN)) + " more: " +
                str(w, "quarantine_reason");
      }
      out += line + "\n";
      for (const json& d : w.value("devices", json::array())) {
        if (!d.is_object()) continue;
        std::string dl = fmt::format("      {:<10} {:<7} {}  {}", str(d, "key"), str(d, "backend"), str(d, "name"),
                                     flag(d, "quarantined") ? "QUARANTINED" : str(d, "condition"));
        if (d.contains("reason")) dl += ": " + str(d, "reason");
        if (auto ago = num(d, "last_health_check_s_ago")) {
          dl += fmt::format("  (health check {} {} ago)", flag(d, "last_health_check_passed") ? "passed" : "failed",
                            human_duration(*ago));
        }
        if (flag(d, "health_check_running")) dl += "  (health check running)";
        out += dl + "\n";
      }
      for (const json& j : w.value("jobs", json::array())) {
        if (!j.is_object()) continue;
        if (j.contains("served") && !flag(j, "served")) {
          const std::string run = j.contains("run_id") ? str(j, "run_id") : std::string();
          out += fmt::format("      holds {} (attempt {}) of {}, not served here: its slot is taken until it ends\n",
                             str(j, "job_id"), str(j, "attempt"), run.empty() ? "a run unknown to this database" : "run " + run);
          continue;
        }
        std::string jl = fmt::format("      running {} {} {} {} on {} (attempt {}", str(j, "job_id"), str(j, "model"),
                                     j.contains("backend") ? str(j, "backend") : std::string(),
                                     j.contains("precision") ? str(j, "precision") : std::string(), str(j, "device"),
                                     str(j, "attempt"));
        if (auto s = num(j, "running_s")) jl += ", " + human_duration(*s);
        out += jl + ")\n";
      }
    }
  }
  return out;
}

std::string render_runs_text(const std::vector<RunRecord>& runs, const std::vector<RunCounts>& counts) {
  std::map<std::string, const RunCounts*> by_run;
  for (const RunCounts& c : counts) by_run[c.run_id] = &c;
  std::string out = fmt::format("{:<24} {:<24} {:<19} {:<19} {:>6}  {}\n", "run", "plan", "created (UTC)",
                                "finished (UTC)", "jobs", "status");
  for (const RunRecord& r : runs) {
    const RunCounts* c = by_run.count(r.run_id) ? by_run[r.run_id] : nullptr;
    std::string detail;
    if (c != nullptr) {
      for (const auto& [status, n] : c->by_status) detail += (detail.empty() ? "" : ", ") + std::to_string(n) + " " + status;
      if (c->leased > 0) detail += (detail.empty() ? "" : ", ") + std::to_string(c->leased) + " leased";
      if (c->queued > c->unplaced) detail += (detail.empty() ? "" : ", ") + std::to_string(c->queued - c->unplaced) + " queued";
      if (c->unplaced > 0) detail += (detail.empty() ? "" : ", ") + std::to_string(c->unplaced) + " not placed yet";
    }
    // Names from the database, which anyone who can write the file may have edited: one line
    // each, nothing a terminal acts on.
    out += fmt::format("{:<24} {:<24} {:<19} {:<19} {:>6}  {}\n", terminal_safe(r.run_id), terminal_safe(r.plan_name),
                       when(r.created_at_ms),
                       r.finished_at_ms > 0 ? when(r.finished_at_ms) : std::string("open"), c ? c->total : 0,
                       detail.empty() ? "no jobs" : detail);
  }
  return out;
}

json render_runs_json(const std::vector<RunRecord>& runs, const std::vector<RunCounts>& counts) {
  std::map<std::string, const RunCounts*> by_run;
  for (const RunCounts& c : counts) by_run[c.run_id] = &c;
  json out = json::array();
  for (const RunRecord& r : runs) {
    const RunCounts* c = by_run.count(r.run_id) ? by_run[r.run_id] : nullptr;
    out.push_back({{"run_id", r.run_id},
                   {"plan", r.plan_name},
                   {"plan_path", r.plan_path},
                   {"plan_hash", r.plan_hash},
                   {"created_at_ms", r.created_at_ms},
                   {"finished_at_ms", r.finished_at_ms > 0 ? json(r.finished_at_ms) : json(nullptr)},
                   {"jobs", c ? c->total : 0},
                   {"queued", c ? c->queued : 0},
                   {"leased", c ? c->leased : 0},
                   {"unplaced", c ? c->unplaced : 0},
                   {"by_status", c ? json(c->by_status) : json::object()}});
  }
  return out;
}

}  // namespace am::coord
