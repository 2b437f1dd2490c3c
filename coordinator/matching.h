// Matching jobs to devices, from the capability records workers advertise.
//
// Contract: pure functions, no I/O. A job is eligible on a device when the device's backend is
// the job's backend and the device lists the job's precision. When no registered device is
// eligible, settle_ineligible() says how the job is settled:
//   - "skipped"     no registered device has the job's backend at all ("no eligible hardware");
//   - "unsupported" a device has the backend but none supports the precision (the reason names
//                   the precision and what the devices do support).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "jobs/job_spec.h"

namespace am::coord {

struct DeviceInfo {
  std::string key;              // "cpu:0"
  std::string backend;
  std::string name;
  std::string hardware_class;
  std::vector<std::string> precisions;
  int64_t memory_bytes = 0;
  bool software = false;
};

// Devices of a capability record; malformed entries are skipped.
std::vector<DeviceInfo> devices_from_capabilities(const nlohmann::json& capabilities);

bool device_can_run(const DeviceInfo& device, const jobs::JobSpec& spec);

struct Settlement {
  std::string status;   // skipped | unsupported
  std::string reason;
};

// std::nullopt when some device in `devices` can run the job.
std::optional<Settlement> settle_ineligible(const jobs::JobSpec& spec,
                                            const std::vector<DeviceInfo>& devices);

}  // namespace am::coord
