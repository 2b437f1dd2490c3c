#include "coordinator/matching.h"

#include <algorithm>
#include <limits>
#include <set>

#include "jobs/memory_estimate.h"

namespace am::coord {
namespace {

// How many devices a reason names before it summarizes the rest.
constexpr std::size_t kMaxDevicesNamed = 4;
constexpr int64_t kBytesPerMiB = int64_t{1} << 20;

std::string join(const std::set<std::string>& s) {
  std::string out;
  for (const auto& x : s) out += (out.empty() ? "" : ", ") + x;
  return out.empty() ? std::string("none") : out;
}

std::string join(const std::vector<jobs::Precision>& v) {
  std::string out;
  for (jobs::Precision p : v) out += (out.empty() ? "" : ", ") + std::string(jobs::to_string(p));
  return out.empty() ? std::string("none") : out;
}

std::string describe_tags(const Tags& tags) {
  std::string out;
  for (const auto& [k, v] : tags) out += (out.empty() ? "" : ", ") + k + "=" + v;
  return out;
}

// Whole MiB, rounded down, so that a device size is never overstated.
std::string mib(int64_t bytes) { return std::to_string(bytes / kBytesPerMiB) + " MiB"; }

// "opencl:0 NVIDIA GeForce RTX 4090 <suffix>; ..." for at most kMaxDevicesNamed devices.
template <typename Describe>
std::string name_devices(const std::vector<const DeviceInfo*>& devices, Describe describe) {
  std::string out;
  for (std::size_t i = 0; i < devices.size() && i < kMaxDevicesNamed; ++i) {
    out += (i == 0 ? "" : "; ") + devices[i]->key + " " + devices[i]->name + describe(*devices[i]);
  }
  if (devices.size() > kMaxDevicesNamed) {
    out += "; and " + std::to_string(devices.size() - kMaxDevicesNamed) + " more";
  }
  return out;
}

bool lists_precision(const DeviceInfo& device, jobs::Precision precision) {
  return std::find(device.precisions.begin(), device.precisions.end(), precision) != device.precisions.end();
}

}  // namespace

bool has_tags(const DeviceInfo& device, const Tags& required) {
  for (const auto& [k, v] : required) {
    auto it = device.worker_tags.find(k);
    if (it == device.worker_tags.end() || it->second != v) return false;
  }
  return true;
}

std::vector<DeviceInfo> devices_from_capabilities(const nlohmann::json& capabilities, const Tags& worker_tags,
                                                  bool runs_commands) {
  std::vector<DeviceInfo> out;
  if (!capabilities.is_object()) return out;
  auto it = capabilities.find("devices");
  if (it == capabilities.end() || !it->is_array()) return out;
  for (const auto& d : *it) {
    if (!d.is_object()) continue;
    auto str = [&](const char* k) {
      auto f = d.find(k);
      return f != d.end() && f->is_string() ? f->get<std::string>() : std::string();
    };
    DeviceInfo info;
    info.key = str("key");
    info.backend = str("backend");
    info.name = str("name");
    info.hardware_class = str("hardware_class");
    // Keys are "<backend>:<n>"; one with a '/' could not be told apart from its worker id in a
    // device target ("device:<worker>/<key>", jobs/placement.h).
    if (info.key.empty() || info.backend.empty() || info.key.find('/') != std::string::npos) continue;
    // A device without a fingerprint still has a column of its own, per backend.
    if (info.hardware_class.empty()) info.hardware_class = info.backend + "-unclassified";
    if (auto p = d.find("precisions"); p != d.end() && p->is_array()) {
      for (const auto& v : *p) {
        if (!v.is_string()) continue;
        if (std::optional<jobs::Precision> known = jobs::parse_precision(v.get<std::string>())) {
          info.precisions.push_back(*known);
        }
      }
    }
    if (auto m = d.find("memory_bytes"); m != d.end() && m->is_number_integer()) {
      // A (malformed) negative size counts as unknown.
      if (m->is_number_unsigned()) {
        const uint64_t u = m->get<uint64_t>();
        info.memory_bytes = u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())
                                ? std::numeric_limits<int64_t>::max()
                                : static_cast<int64_t>(u);
      } else {
        info.memory_bytes = std::max<int64_t>(0, m->get<int64_t>());
      }
    }
    if (auto s = d.find("software"); s != d.end() && s->is_boolean()) info.software = s->get<bool>();
    if (auto s = d.find("schedulable"); s != d.end() && s->is_boolean()) info.schedulable = s->get<bool>();
    // Records before host_cores (protocol < 1.5): the cpu and software devices are the host's cores.
    info.host_cores = info.backend == "cpu" || info.software;
    if (auto s = d.find("host_cores"); s != d.end() && s->is_boolean()) info.host_cores = s->get<bool>();
    info.worker_tags = worker_tags;
    info.runs_commands = runs_commands;
    out.push_back(std::move(info));
  }
  return out;
}

std::optional<int64_t> estimated_job_bytes(const jobs::JobSpec& spec) {
  // The seam to the architectures' own estimate (jobs/memory_estimate.h), kept here so that
  // matching has one place to change should the coordinator ever need a margin on top of it.
  return jobs::estimate_job_bytes(spec);
}

std::optional<std::string> ineligibility(const DeviceInfo& device, const jobs::JobSpec& spec) {
  const Tags& required_tags = spec.required_tags;
  if (spec.command) {
    if (!device.runs_commands) return "the worker of " + device.key + " does not run commands (--allow-commands)";
    if (device.backend != spec.backend) return "device " + device.key + " has backend " + device.backend;
    if (!has_tags(device, required_tags)) return "the worker of " + device.key + " lacks tags " + describe_tags(required_tags);
    return std::nullopt;
  }
  if (!device.schedulable) return "device " + device.key + " is not schedulable";
  if (device.backend != spec.backend) return "device " + device.key + " has backend " + device.backend;
  if (!has_tags(device, required_tags)) {
    return "the worker of " + device.key + " lacks tags " + describe_tags(required_tags);
  }
  if (!lists_precision(device, spec.precision)) {
    return "device " + device.key + " does not support precision " + std::string(jobs::to_string(spec.precision));
  }
  if (device.memory_bytes > 0) {
    if (auto need = estimated_job_bytes(spec); need && *need > device.memory_bytes) {
      return "device " + device.key + " has " + mib(device.memory_bytes) + ", the job needs about " + mib(*need);
    }
  }
  return std::nullopt;
}

bool device_can_run(const DeviceInfo& device, const jobs::JobSpec& spec) {
  return !ineligibility(device, spec).has_value();
}

bool device_admits_kind(const DeviceInfo& device, const jobs::JobSpec& spec) {
  if (spec.command) {
    return device.runs_commands && device.backend == spec.backend && has_tags(device, spec.required_tags);
  }
  return device.schedulable && device.backend == spec.backend && has_tags(device, spec.required_tags) &&
         lists_precision(device, spec.precision);
}

bool fits_memory(const DeviceInfo& device, int64_t need_bytes) {
  return need_bytes < 0 || device.memory_bytes <= 0 || need_bytes <= device.memory_bytes;
}

std::optional<Settlement> settle_ineligible(const jobs::JobSpec& spec, const std::vector<DeviceInfo>& devices) {
  const Tags& required_tags = spec.required_tags;
  std::set<std::string> backends;
  std::vector<const DeviceInfo*> with_backend, schedulable, tagged, with_precision;
  for (const auto& d : devices) {
    if (device_can_run(d, spec)) return std::nullopt;
    backends.insert(d.backend);
    if (d.backend != spec.backend) continue;
    with_backend.push_back(&d);
    if (!d.schedulable) continue;
    schedulable.push_back(&d);
    if (!has_tags(d, required_tags)) continue;
    tagged.push_back(&d);
    if (lists_precision(d, spec.precision)) with_precision.push_back(&d);
  }
  const auto nothing = [](const DeviceInfo&) { return std::string(); };
  if (spec.command) {
    // What a command needs that no registered worker offers, most fundamental first.
    bool any_commands = false;
    bool commands_with_backend = false;
    for (const auto& d : devices) {
      any_commands = any_commands || d.runs_commands;
      commands_with_backend = commands_with_backend || (d.runs_commands && d.backend == spec.backend);
    }
    std::string why;
    if (!any_commands) {
      why = "no registered worker runs commands (start one with accelmatrix-worker --allow-commands, or use accelmatrix run --allow-commands)";
    } else if (!commands_with_backend) {
      why = "no worker that runs commands has a '" + spec.backend + "' device (registered backends: " + join(backends) + ")";
    } else {
      why = "no worker that runs commands and has a '" + spec.backend + "' device has tags " + describe_tags(required_tags);
    }
    return Settlement{ResultStatus::kSkipped, "no eligible hardware: " + why};
  }
  if (with_backend.empty()) {
    return Settlement{ResultStatus::kSkipped, "no eligible hardware: no registered device has backend '" + spec.backend +
                                     "' (registered backends: " + join(backends) + ")"};
  }
  if (schedulable.empty()) {
    return Settlement{ResultStatus::kSkipped, "no eligible hardware: the registered " + spec.backend +
                                     " devices are probed but not schedulable (accelmatrix cannot run " +
                                     spec.backend + " jobs yet): " + name_devices(with_backend, nothing)};
  }
  if (tagged.empty()) {
    return Settlement{ResultStatus::kSkipped, "no eligible hardware: no worker with a " + spec.backend +
                                     " device has tags " + describe_tags(required_tags)};
  }
  if (with_precision.empty()) {
    return Settlement{ResultStatus::kUnsupported,
                      "precision " + std::string(jobs::to_string(spec.precision)) + " is not supported by any " + spec.backend + " device: " +
                          name_devices(tagged, [](const DeviceInfo& d) { return " supports " + join(d.precisions); })};
  }
  const DeviceInfo* largest = *std::max_element(
      with_precision.begin(), with_precision.end(),
      [](const DeviceInfo* a, const DeviceInfo* b) { return a->memory_bytes < b->memory_bytes; });
  const auto need = estimated_job_bytes(spec);
  return Settlement{ResultStatus::kUnsupported, "needs about " + (need ? mib(*need) : std::string("?")) +
                                       " of device memory for weights and activations; the largest " +
                                       spec.backend + " device supporting " + std::string(jobs::to_string(spec.precision)) + " has " +
                                       mib(largest->memory_bytes) + " (" + largest->key + " " + largest->name +
                                       ")"};
}

Result<Tags> parse_tags(const std::vector<std::string>& items) {
  Tags tags;
  for (const auto& item : items) {
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      return invalid_argument("tag '" + item + "': expected KEY=VALUE");
    }
    const std::string key = item.substr(0, eq);
    const std::string value = item.substr(eq + 1);
    auto [it, inserted] = tags.emplace(key, value);
    if (!inserted && it->second != value) {
      return invalid_argument("tag '" + key + "' given twice, as '" + it->second + "' and '" + value + "'");
    }
  }
  return tags;
}

}  // namespace am::coord
