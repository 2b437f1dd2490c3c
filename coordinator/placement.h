// Placement on the coordinator's side (docs/PLANS.md "Placement", docs/PROTOCOL.md §5.12): which
// plan jobs a registered device takes, the job made for it, and which devices may run that job.
//
// Contract: pure functions, no I/O, thread-compatible.
//   - placement_for(): a plan job (its spec carries the placement) and a device of a worker give
//     the target the device's share is made under, or nothing when the job is not for that device
//     at all — another backend, a required tag the worker lacks, a command job on a worker that
//     does not run commands — or the job's placement is `any` (one job, made at submission).
//     Whether the device can *run* it (precision, memory, schedulable) is not asked here: a
//     class that cannot is a matrix finding, settled for that class (matching.h).
//   - A job made for a class is run by any device of that class; one made for a device only by
//     that device of that worker (admits()).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "coordinator/matching.h"
#include "jobs/job_spec.h"

namespace am::coord {

struct PlacedTarget {
  jobs::Placement placement = jobs::Placement::kAny;
  std::string target;            // jobs/placement.h form; "" for any
  std::string hardware_class;    // the class the job is for ("" for any)
  std::string worker_id;         // each-device only
  std::string device_key;        // each-device only
};

std::optional<PlacedTarget> placement_for(const jobs::JobSpec& spec, const std::string& worker_id,
                                          const DeviceInfo& device);

// The target of a stored job read back; `hardware_class` is the stored jobs.hardware_class.
// nullopt for a target no build writes.
std::optional<PlacedTarget> placed_target(std::string_view target, std::string_view hardware_class);

// Whether the device `device` of worker `worker_id` is one the job was made for.
bool admits(const PlacedTarget& target, const std::string& worker_id, const DeviceInfo& device);

// A job that measures speed (mode perf or both): it runs alone on its hardware (exclusivity.h).
bool measures_speed(const jobs::JobSpec& spec);

}  // namespace am::coord
