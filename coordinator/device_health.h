// The coordinator's view of each device's health: whether it may run jobs, when its next
// health job is due, and why it is quarantined (docs/PROTOCOL.md §5.11, DECISIONS.md "Health,
// quarantine and silent peers").
//
// Contract:
// - A device is identified by (worker id, device key). on_register() is called for each
//   schedulable device when its worker registers (again). With health checks on
//   (HealthPolicy::interval_ms > 0) a device is `unchecked` until its first health job passes
//   and gets no run jobs meanwhile; with them off it is `healthy` at once.
// - health_due() says a health job should be issued now: unchecked, healthy with the interval
//   elapsed, or quarantined with the backoff elapsed — never while one is in flight.
// - on_health_result(): a pass makes the device healthy (lifting a quarantine); a failure
//   quarantines it (or extends the quarantine, doubling the backoff).
// - on_job_outcome(): crash and timeout extend the device's failure streak, which remembers the
//   models; when it holds `quarantine_after` different models the device is quarantined. OOM
//   changes nothing (a model too large for a device is a finding, not a sickness); any other
//   status ends the streak. quarantine_after = 0 turns this cause off.
// - A quarantine lasts backoff_initial_ms × 2^(earlier quarantines of the device), doubling with
//   each failed re-check, capped at backoff_max_ms. With health checks off it lifts only by
//   release().
// - release() (`accelmatrix release`) makes a quarantined device healthy at once and forgets its
//   backoff doubling; a device that is not quarantined is left as it is (an unchecked one still
//   owes its first health job).
// - Every state change returns the events to record (device_events table), oldest first.
// - Times are steady-clock milliseconds from the caller; pure bookkeeping, no I/O, not
//   thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/result_status.h"

namespace am::coord {

struct HealthPolicy {
  int64_t interval_ms = 0;          // 0: no health jobs at all
  int quarantine_after = 0;         // crash/timeout streak on this many models; 0: never
  int64_t backoff_initial_ms = 0;
  int64_t backoff_max_ms = 0;
};

enum class DeviceCondition { kUnchecked, kHealthy, kQuarantined };
std::string_view to_string(DeviceCondition c);   // "unchecked", "healthy", "quarantined"

struct HealthEvent {
  std::string worker_id;
  std::string device;
  std::string event;                // health_pass | health_fail | quarantined | lifted | released
  std::string reason;
};

struct DeviceHealthEntry {
  DeviceCondition condition = DeviceCondition::kUnchecked;
  std::string reason;               // why quarantined (or the last check's failure)
  int64_t since_ms = 0;             // when the condition began
  int64_t next_check_ms = 0;        // when a health job is next due
  int64_t last_check_ms = 0;        // 0: never checked
  bool last_check_passed = false;
  bool check_in_flight = false;
  bool checkable = true;            // the device can run the health job
  int quarantines = 0;              // quarantines so far (backoff doubling)
  int64_t backoff_ms = 0;           // the current quarantine's length
  std::vector<std::pair<std::string, ResultStatus>> streak;   // crash/timeout outcomes in a row
};

class DeviceHealth {
 public:
  explicit DeviceHealth(HealthPolicy policy) : policy_(policy) {}

  const HealthPolicy& policy() const { return policy_; }
  bool checks_on() const { return policy_.interval_ms > 0; }

  // `checkable`: the device can run the health job; one that cannot is healthy at once (it is
  // judged by its jobs' outcomes only).
  void on_register(const std::string& worker, const std::string& device, int64_t now_ms, bool checkable = true);
  bool may_run_jobs(const std::string& worker, const std::string& device) const;
  bool health_due(const std::string& worker, const std::string& device, int64_t now_ms) const;
  void on_health_issued(const std::string& worker, const std::string& device);
  // The health job ended without a verdict (its worker left): due again at once.
  void on_health_abandoned(const std::string& worker, const std::string& device);
  std::vector<HealthEvent> on_health_result(const std::string& worker, const std::string& device,
                                            bool passed, const std::string& detail, int64_t now_ms);
  std::vector<HealthEvent> on_job_outcome(const std::string& worker, const std::string& device,
                                          const std::string& model, ResultStatus status, int64_t now_ms);
  // `device` empty: every quarantined device of the worker. Returns one `released` event per
  // device lifted; none when nothing was quarantined.
  std::vector<HealthEvent> release(const std::string& worker, const std::string& device, int64_t now_ms);

  bool known(const std::string& worker) const;
  const DeviceHealthEntry* find(const std::string& worker, const std::string& device) const;

 private:
  using Key = std::pair<std::string, std::string>;
  void quarantine(const Key& key, DeviceHealthEntry& e, const std::string& reason, int64_t now_ms,
                  std::vector<HealthEvent>& events);
  int64_t backoff_for(int quarantines) const;

  HealthPolicy policy_;
  std::map<Key, DeviceHealthEntry> devices_;
};

}  // namespace am::coord
