// Matching jobs to devices, from the capability records workers advertise (worker/capability.h).
//
// Contract: pure functions, no I/O, thread-compatible. A job is eligible on a device when
//   1. the device is schedulable (records mark probed-only devices, e.g. Vulkan and CUDA before
//      accelmatrix has backends for them, "schedulable": false; schema-1 records have no such
//      field and their devices are schedulable),
//   2. the device's backend is the job's backend,
//   3. the device's worker carries every required tag (key=value, as given to --tag),
//   4. the device lists the job's precision,
//   5. the device's memory is at least the job's estimated memory (estimated_job_bytes), when
//      both are known.
// An external command job (spec.command) is matched differently: the device's worker must run
// commands (HELLO.commands, --allow-commands), the backend must be the job's, the worker must
// carry the required tags; the device need not be schedulable by our own backends (a probed
// CUDA GPU runs a command that brings its own runtime), and precision and memory are labels the
// command declares, not requirements we can check.
// When no registered device is eligible, settle_ineligible() says how the job is settled:
//   - "skipped"     no eligible hardware: no registered device has the job's backend, or those
//                   that do are not schedulable, or none of their workers has the required tags;
//   - "unsupported" devices with the backend (and tags) exist but none supports the precision
//                   (the reason names the devices and what they do support), or none has enough
//                   memory for the job (the reason names the estimate and the largest device).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result_status.h"

#include "common/status.h"
#include "jobs/job_spec.h"

namespace am::coord {

// Operator labels: a worker's HELLO tags, or a job's required tags.
using Tags = std::map<std::string, std::string>;

struct DeviceInfo {
  std::string key;              // "cpu:0"
  std::string backend;
  std::string name;
  std::string hardware_class;
  std::vector<jobs::Precision> precisions;   // names this build does not know are dropped
  int64_t memory_bytes = 0;     // 0: unknown (never limits matching)
  bool software = false;        // runs on the CPU (PoCL, lavapipe): not a GPU
  bool host_cores = false;      // computes on the host's CPU cores (cpu, software devices)
  bool schedulable = true;
  Tags worker_tags;             // the tags of the worker the device belongs to
  bool runs_commands = false;   // its worker announced --allow-commands (HELLO.commands)
};

// Devices of a capability record, each carrying `worker_tags`; malformed entries are skipped.
std::vector<DeviceInfo> devices_from_capabilities(const nlohmann::json& capabilities,
                                                  const Tags& worker_tags = {},
                                                  bool runs_commands = false);

// The device memory the job needs, in bytes, or std::nullopt when its architecture or
// model_config is not understood — then memory does not limit matching. Delegates to
// jobs::estimate_job_bytes() (weights at the job's precision, activations, KV cache/state).
std::optional<int64_t> estimated_job_bytes(const jobs::JobSpec& spec);

// Why `device` cannot run the job, or std::nullopt when it can (checks 1-5 above, in order).
// The job's required tags are spec.required_tags (plan key `tags`).
std::optional<std::string> ineligibility(const DeviceInfo& device, const jobs::JobSpec& spec);

bool device_can_run(const DeviceInfo& device, const jobs::JobSpec& spec);

// The scheduler's hot path, split so that it builds no reason string and estimates a job's memory
// once: device_can_run(d, s) == device_admits_kind(d, s) && (s.command || fits_memory(d,
// estimated_job_bytes(s).value_or(-1))). device_admits_kind() depends only on the spec's backend,
// precision, required tags and command flag, so it holds for every job of a scheduler queue.
bool device_admits_kind(const DeviceInfo& device, const jobs::JobSpec& spec);
// `need_bytes` < 0 (not estimated) or an unknown device memory (0) always fits.
bool fits_memory(const DeviceInfo& device, int64_t need_bytes);

// Whether the device's worker carries every tag in `required`.
bool has_tags(const DeviceInfo& device, const Tags& required);

struct Settlement {
  ResultStatus status;  // skipped | unsupported
  std::string reason;
};

// std::nullopt when some device in `devices` can run the job.
std::optional<Settlement> settle_ineligible(const jobs::JobSpec& spec,
                                            const std::vector<DeviceInfo>& devices);

// "key=value" items (as given to --tag) as Tags; invalid_argument names the first bad item
// (no '=', empty key, or a key given twice with different values).
Result<Tags> parse_tags(const std::vector<std::string>& items);

}  // namespace am::coord
