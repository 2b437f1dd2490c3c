#include "coordinator/device_health.h"

#include <algorithm>

namespace am::coord {

std::string_view to_string(DeviceCondition c) {
  switch (c) {
    case DeviceCondition::kUnchecked: return "unchecked";
    case DeviceCondition::kHealthy: return "healthy";
    case DeviceCondition::kQuarantined: return "quarantined";
  }
  return "unknown";
}

void DeviceHealth::on_register(const std::string& worker, const std::string& device, int64_t now_ms,
                               bool checkable) {
  DeviceHealthEntry& e = devices_[{worker, device}];
  e.check_in_flight = false;
  if (e.condition == DeviceCondition::kQuarantined) return;   // a reconnect does not lift it
  e.checkable = checkable;
  if (checks_on() && checkable) {
    // A worker that registers again may have been restarted on other drivers: check it again.
    e.condition = DeviceCondition::kUnchecked;
    e.next_check_ms = now_ms;
  } else {
    e.condition = DeviceCondition::kHealthy;
  }
  e.since_ms = now_ms;
}

bool DeviceHealth::may_run_jobs(const std::string& worker, const std::string& device) const {
  const DeviceHealthEntry* e = find(worker, device);
  if (e == nullptr) return !checks_on();
  return e->condition == DeviceCondition::kHealthy;
}

bool DeviceHealth::health_due(const std::string& worker, const std::string& device, int64_t now_ms) const {
  if (!checks_on()) return false;
  const DeviceHealthEntry* e = find(worker, device);
  if (e == nullptr || e->check_in_flight || !e->checkable) return false;
  return e->condition == DeviceCondition::kUnchecked || now_ms >= e->next_check_ms;
}

void DeviceHealth::on_health_issued(const std::string& worker, const std::string& device) {
  devices_[{worker, device}].check_in_flight = true;
}

void DeviceHealth::on_health_abandoned(const std::string& worker, const std::string& device) {
  auto it = devices_.find({worker, device});
  if (it != devices_.end()) it->second.check_in_flight = false;
}

int64_t DeviceHealth::backoff_for(int quarantines) const {
  int64_t b = std::max<int64_t>(policy_.backoff_initial_ms, 1);
  for (int i = 1; i < quarantines && b < policy_.backoff_max_ms; ++i) b *= 2;
  return std::min(b, std::max(policy_.backoff_max_ms, policy_.backoff_initial_ms));
}

void DeviceHealth::quarantine(const Key& key, DeviceHealthEntry& e, const std::string& reason,
                              int64_t now_ms, std::vector<HealthEvent>& events) {
  ++e.quarantines;
  e.backoff_ms = backoff_for(e.quarantines);
  e.next_check_ms = now_ms + e.backoff_ms;
  e.reason = reason;
  e.streak.clear();
  if (e.condition != DeviceCondition::kQuarantined) {
    e.condition = DeviceCondition::kQuarantined;
    e.since_ms = now_ms;
    events.push_back({key.first, key.second, "quarantined", reason});
  }
}

std::vector<HealthEvent> DeviceHealth::on_health_result(const std::string& worker, const std::string& device,
                                                        bool passed, const std::string& detail,
                                                        int64_t now_ms) {
  std::vector<HealthEvent> events;
  auto it = devices_.find({worker, device});
  if (it == devices_.end()) return events;
  DeviceHealthEntry& e = it->second;
  e.check_in_flight = false;
  e.last_check_ms = now_ms;
  e.last_check_passed = passed;
  events.push_back({worker, device, passed ? "health_pass" : "health_fail", detail});
  if (passed) {
    if (e.condition == DeviceCondition::kQuarantined) {
      events.push_back({worker, device, "lifted", "health check passed after the quarantine (was: " + e.reason + ")"});
    }
    if (e.condition != DeviceCondition::kHealthy) e.since_ms = now_ms;
    e.condition = DeviceCondition::kHealthy;
    e.reason.clear();
    e.next_check_ms = now_ms + policy_.interval_ms;
    return events;
  }
  quarantine(it->first, e, "health check failed: " + detail, now_ms, events);
  return events;
}

std::vector<HealthEvent> DeviceHealth::on_job_outcome(const std::string& worker, const std::string& device,
                                                      const std::string& model, ResultStatus status,
                                                      int64_t now_ms) {
  std::vector<HealthEvent> events;
  auto it = devices_.find({worker, device});
  if (it == devices_.end() || policy_.quarantine_after <= 0) return events;
  DeviceHealthEntry& e = it->second;
  if (status == ResultStatus::kOom || is_infrastructure(status) || status == ResultStatus::kCancelled) {
    return events;   // says nothing about the device
  }
  if (status != ResultStatus::kCrash && status != ResultStatus::kTimeout) {
    e.streak.clear();
    return events;
  }
  e.streak.emplace_back(model, status);
  std::vector<std::string> models;
  for (const auto& [m, s] : e.streak) {
    if (std::find(models.begin(), models.end(), m) == models.end()) models.push_back(m);
  }
  if (static_cast<int>(models.size()) < policy_.quarantine_after || e.condition == DeviceCondition::kQuarantined) {
    return events;
  }
  std::string reason = std::to_string(e.streak.size()) + " crash/timeout outcomes in a row on " +
                       std::to_string(models.size()) + " models:";
  for (const auto& [m, s] : e.streak) reason += " " + m + " (" + std::string(to_string(s)) + ")";
  quarantine(it->first, e, reason, now_ms, events);
  return events;
}

std::vector<HealthEvent> DeviceHealth::release(const std::string& worker, const std::string& device,
                                               int64_t now_ms) {
  std::vector<HealthEvent> events;
  for (auto& [key, e] : devices_) {
    if (key.first != worker || (!device.empty() && key.second != device)) continue;
    // Only a quarantine is lifted: an unchecked device still owes its first health job.
    if (e.condition != DeviceCondition::kQuarantined) continue;
    e.condition = DeviceCondition::kHealthy;
    e.since_ms = now_ms;
    e.streak.clear();
    e.quarantines = 0;
    e.backoff_ms = 0;
    e.next_check_ms = now_ms + policy_.interval_ms;
    events.push_back({key.first, key.second, "released", "released by an administrator (was: " + e.reason + ")"});
    e.reason.clear();
  }
  return events;
}

bool DeviceHealth::known(const std::string& worker) const {
  auto it = devices_.lower_bound({worker, std::string()});
  return it != devices_.end() && it->first.first == worker;
}

const DeviceHealthEntry* DeviceHealth::find(const std::string& worker, const std::string& device) const {
  auto it = devices_.find({worker, device});
  return it == devices_.end() ? nullptr : &it->second;
}

}  // namespace am::coord
