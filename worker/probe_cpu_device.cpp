// The cpu device probe (logger "worker/probe/cpu"): turns what the cpuid, hwloc and memory
// probes found into the "cpu:0" entry of "devices" — the unit the coordinator schedules on.
// It runs last and copes with any of the earlier probes having failed: then it falls back to
// what the C library reports (sched_getaffinity, sysconf), which is coarser but never absent.
#include <sched.h>
#include <unistd.h>

#include <cstdint>
#include <string>

#include "common/log.h"
#include "worker/capability.h"
#include "worker/cpu_device.h"
#include "worker/probe.h"

namespace am::worker {
namespace {

const nlohmann::json* object_at(const nlohmann::json& doc, const char* key) {
  auto it = doc.find(key);
  return it != doc.end() && it->is_object() ? &*it : nullptr;
}

int64_t positive_int(const nlohmann::json* doc, const char* key) {
  if (doc == nullptr) return 0;
  auto it = doc->find(key);
  if (it == doc->end() || !it->is_number_integer()) return 0;
  const int64_t v = it->get<int64_t>();
  return v > 0 ? v : 0;
}

int64_t affinity_cpu_count() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set);
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  return online > 0 ? online : 1;
}

int64_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGESIZE);
  return pages > 0 && page_size > 0 ? int64_t{pages} * page_size : 0;
}

class CpuDeviceProbe final : public Probe {
 public:
  std::string_view name() const override { return "cpu-device"; }
  bool supports() const override { return true; }

  Status run(nlohmann::json& record) override {
    auto log = get_logger("worker/probe/cpu");
    const nlohmann::json* cpu = object_at(record, "cpu");
    const nlohmann::json* topology = object_at(record, "topology");

    int64_t cores = positive_int(topology, "cores");
    if (cores == 0) {
      cores = affinity_cpu_count();
      log->debug("no topology; {} CPUs from the affinity mask", cores);
    }
    int64_t memory = positive_int(topology, "memory_limit_bytes");
    if (memory == 0) memory = positive_int(topology, "memory_bytes_hwloc");
    if (memory == 0) memory = physical_memory_bytes();
    if (memory == 0) return not_found("no memory size from any source");

    const nlohmann::json empty = nlohmann::json::object();
    const nlohmann::json& cpu_doc = cpu != nullptr ? *cpu : empty;
    nlohmann::json device = {
        {"key", std::string(kCpuDeviceKey)},
        {"backend", "cpu"},
        {"name", cpu_doc.value("model", std::string("unknown cpu"))},
        {"vendor", cpu_doc.value("vendor", std::string("unknown"))},
        {"software", false},
        {"compute_units", cores},
        {"memory_bytes", memory},
        {"precisions", nlohmann::json::array()},
    };
    for (std::string_view p : kCpuPrecisions) device["precisions"].push_back(std::string(p));
    device["hardware_class"] = hardware_class_id(device, cpu_doc);

    nlohmann::json& devices = record["devices"];
    if (!devices.is_array()) devices = nlohmann::json::array();
    devices.push_back(std::move(device));
    return Status::Ok();
  }
};

}  // namespace

std::unique_ptr<Probe> make_cpu_device_probe() { return std::make_unique<CpuDeviceProbe>(); }

}  // namespace am::worker
