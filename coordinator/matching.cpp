#include "coordinator/matching.h"

#include <algorithm>
#include <set>

namespace am::coord {

std::vector<DeviceInfo> devices_from_capabilities(const nlohmann::json& capabilities) {
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
    if (info.key.empty() || info.backend.empty()) continue;
    if (auto p = d.find("precisions"); p != d.end() && p->is_array()) {
      for (const auto& v : *p) {
        if (v.is_string()) info.precisions.push_back(v.get<std::string>());
      }
    }
    if (auto m = d.find("memory_bytes"); m != d.end() && m->is_number_integer()) {
      info.memory_bytes = m->get<int64_t>();
    }
    if (auto s = d.find("software"); s != d.end() && s->is_boolean()) info.software = s->get<bool>();
    out.push_back(std::move(info));
  }
  return out;
}

bool device_can_run(const DeviceInfo& device, const jobs::JobSpec& spec) {
  return device.backend == spec.backend &&
         std::find(device.precisions.begin(), device.precisions.end(), spec.precision) !=
             device.precisions.end();
}

std::optional<Settlement> settle_ineligible(const jobs::JobSpec& spec,
                                            const std::vector<DeviceInfo>& devices) {
  std::set<std::string> backend_precisions;
  std::set<std::string> backends;
  bool has_backend = false;
  for (const auto& d : devices) {
    if (device_can_run(d, spec)) return std::nullopt;
    backends.insert(d.backend);
    if (d.backend == spec.backend) {
      has_backend = true;
      backend_precisions.insert(d.precisions.begin(), d.precisions.end());
    }
  }
  auto join = [](const std::set<std::string>& s) {
    std::string out;
    for (const auto& x : s) out += (out.empty() ? "" : ", ") + x;
    return out.empty() ? std::string("none") : out;
  };
  if (!has_backend) {
    return Settlement{"skipped", "no eligible hardware: no registered device has backend '" +
                                     spec.backend + "' (registered backends: " + join(backends) +
                                     ")"};
  }
  return Settlement{"unsupported", "precision " + spec.precision + " is not supported by any " +
                                       spec.backend + " device (supported: " +
                                       join(backend_precisions) + ")"};
}

}  // namespace am::coord
