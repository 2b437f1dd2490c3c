#include "worker/probe_devices.h"

#include <algorithm>
#include <cctype>

#include "worker/capability.h"
#include "worker/probe_json.h"

namespace am::worker {

std::string add_device(nlohmann::json& record, nlohmann::json device) {
  nlohmann::json& devices = record["devices"];
  if (!devices.is_array()) devices = nlohmann::json::array();
  const std::string backend = json_string(device, "backend");
  int index = 0;
  for (const auto& d : devices) index += json_string(d, "backend") == backend ? 1 : 0;
  const std::string key = backend + ":" + std::to_string(index);
  device["key"] = key;
  const nlohmann::json& cpu = json_object(record, "cpu");
  // A software device's memory is the host's. Drivers report a share of it that moves with what
  // is free at start-up (PoCL), which would split one box into several classes; the host's figure
  // does not move.
  nlohmann::json fingerprinted = device;
  if (json_bool(device, "software", false)) {
    if (auto host = json_u64(json_object(record, "topology"), "memory_limit_bytes")) {
      fingerprinted["memory_bytes"] = *host;
    }
  }
  device["hardware_class"] = hardware_class_id(fingerprinted, cpu);
  // A software device (PoCL, lavapipe) computes on the host's cores: a perf job there and a job
  // on the cpu device disturb each other (docs/PROTOCOL.md §5.12).
  device["host_cores"] = backend == "cpu" || json_bool(device, "software", false);
  devices.push_back(std::move(device));
  return key;
}

void set_runtime(nlohmann::json& record, std::string_view name, nlohmann::json entry) {
  nlohmann::json& runtimes = record["runtimes"];
  if (!runtimes.is_object()) runtimes = nlohmann::json::object();
  runtimes[std::string(name)] = std::move(entry);
}

nlohmann::json absent_runtime() { return {{"present", false}}; }

bool is_software_renderer_name(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (std::string_view marker : {"llvmpipe", "lavapipe", "softpipe", "swiftshader"}) {
    if (lower.find(marker) != std::string::npos) return true;
  }
  return false;
}

std::string cuda_version_string(int packed) {
  // CUDA packs 12.4 as 12040: major * 1000 + minor * 10.
  constexpr int kMajorScale = 1000;
  constexpr int kMinorScale = 10;
  return std::to_string(packed / kMajorScale) + "." + std::to_string((packed % kMajorScale) / kMinorScale);
}

}  // namespace am::worker
