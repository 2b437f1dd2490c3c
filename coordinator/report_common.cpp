#include "coordinator/report_common.h"

#include <algorithm>
#include <cstdio>
#include <ctime>

#include <fmt/format.h>

#include "common/check.h"
#include "common/json_text.h"
#include "coordinator/hardware_label.h"

namespace am::coord {
namespace {

void remember(std::vector<std::string>& order, const std::string& name) {
  if (!name.empty() && std::find(order.begin(), order.end(), name) == order.end()) {
    order.push_back(name);
  }
}

}  // namespace

void RunSummaryBuilder::add(const ReportRow& row) {
  RunSummary& s = summary_;
  ++s.total;
  if (row.status) {
    ++s.terminal;
    ++s.by_status[*row.status];
  } else {
    ++s.by_state[row.state];
  }
  remember(s.hardware_classes, row.hardware_class);
  remember(s.builds, row.build);
  if (row.worker_id.empty()) return;
  auto [at, inserted] = worker_index_.emplace(row.worker_id, s.workers.size());
  if (inserted) {
    WorkerSummary w;
    w.worker_id = row.worker_id;
    s.workers.push_back(std::move(w));
  }
  WorkerSummary& w = s.workers[at->second];
  if (w.hostname.empty()) w.hostname = row.hostname;
  if (w.build.empty()) w.build = row.build;
  remember(w.hardware_classes, row.hardware_class);
  remember(w.devices, row.device);
  ++w.jobs;
}

RunSummary RunSummaryBuilder::finish() {
  RunSummary out = std::move(summary_);
  summary_ = RunSummary{};
  worker_index_.clear();
  return out;
}

RunSummary summarize_run(const std::vector<ReportRow>& rows) {
  RunSummaryBuilder builder;
  for (const ReportRow& row : rows) builder.add(row);
  return builder.finish();
}

ReportRowSource rows_in_memory(const std::vector<ReportRow>& rows) {
  return [&rows](const ReportDocumentKeys&, const ReportRowVisitor& visit) -> Status {
    std::string spec, metrics;
    for (const ReportRow& row : rows) {
      spec = row.spec.is_object() ? to_json_text(row.spec) : "{}";
      metrics = row.metrics.is_object() ? to_json_text(row.metrics) : "{}";
      AM_RETURN_IF_ERROR(visit(row, ReportRowTexts{spec, metrics}));
    }
    return Status::Ok();
  };
}

std::map<std::string, ClassInfo> hardware_class_info(const std::vector<WorkerRecord>& workers) {
  std::map<std::string, ClassInfo> out;
  for (const WorkerRecord& w : workers) {
    const nlohmann::json& caps = w.capabilities;
    if (!caps.is_object() || !caps.contains("devices") || !caps["devices"].is_array()) continue;
    const nlohmann::json empty = nlohmann::json::object();
    const nlohmann::json& cpu = caps.contains("cpu") ? caps["cpu"] : empty;
    const nlohmann::json& topology = caps.contains("topology") ? caps["topology"] : empty;
    for (const nlohmann::json& d : caps["devices"]) {
      if (!d.is_object() || !d.contains("hardware_class") || !d["hardware_class"].is_string()) continue;
      const std::string id = d["hardware_class"].get<std::string>();
      if (id.empty() || out.count(id)) continue;
      ClassInfo info;
      info.label = repair_utf8(hardware_class_label(d, cpu, topology));
      info.software = d.contains("software") && d["software"].is_boolean() && d["software"].get<bool>();
      out.emplace(id, std::move(info));
    }
  }
  return out;
}

std::string column_heading(const std::string& backend, const std::string& hardware_class,
                           const std::map<std::string, ClassInfo>& classes) {
  if (hardware_class.empty()) return backend + " · unplaced";
  auto it = classes.find(hardware_class);
  if (it == classes.end() || it->second.label.empty()) return backend + " · " + hardware_class;
  return backend + " · " + it->second.label + (it->second.software ? " · software" : "");
}

std::string format_utc(int64_t epoch_ms) {
  if (epoch_ms == 0) return "";
  const auto seconds = static_cast<std::time_t>(epoch_ms / 1000);
  const int millis = static_cast<int>(((epoch_ms % 1000) + 1000) % 1000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  return fmt::format("{:04d}-{:02d}-{:02d}T{:02d}:{:02d}:{:02d}.{:03d}Z", tm.tm_year + 1900,
                     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, millis);
}

std::string collect_text(const std::function<Status(const TextSink&)>& write) {
  std::string text;
  const Status st = write([&](std::string_view piece) {
    text.append(piece);
    return Status::Ok();
  });
  AM_CHECK(st.ok(), st.message().c_str());
  return text;
}

std::optional<CommandIdentity> command_identity(const nlohmann::json& spec) {
  if (!spec.is_object()) return std::nullopt;
  auto c = spec.find("command");
  if (c == spec.end() || !c->is_object()) return std::nullopt;
  const auto text = [&](const char* field) {
    auto v = c->find(field);
    return v != c->end() && v->is_string() ? v->get<std::string>() : std::string();
  };
  CommandIdentity id{text("name"), text("precision_label")};
  if (id.name.empty()) id.name = "?";
  return id;
}

std::string command_key(const nlohmann::json& spec) {
  const std::optional<CommandIdentity> id = command_identity(spec);
  if (!id) return "";
  return id->label.empty() ? id->name : id->name + " " + id->label;
}

}  // namespace am::coord
