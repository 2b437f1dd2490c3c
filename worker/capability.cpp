// probe_capabilities(): every probe in order over one record. A probe is a guest in the worker's
// start-up: whatever goes wrong inside it is logged and costs only its own part of the record.
#include "worker/capability.h"

#include <exception>

#include "common/log.h"
#include "worker/probe.h"

namespace am::worker {

inline constexpr int kCapabilitySchema = 2;

std::vector<std::unique_ptr<Probe>> default_probes(const ProbeOptions& options) {
  std::vector<std::unique_ptr<Probe>> probes;
  probes.push_back(make_host_probe(options));
  probes.push_back(make_cpu_isa_probe(options));
  probes.push_back(make_hwloc_probe(options));
  probes.push_back(make_os_memory_probe(options));
  probes.push_back(make_cpu_device_probe(options));  // reads cpu, topology and memory
  // Runtime probes come after "cpu": software devices take the CPU's ISA level into their class.
  probes.push_back(make_opencl_probe(options));
  probes.push_back(make_vulkan_probe(options));
  probes.push_back(make_cuda_probe(options));
  probes.push_back(make_rocm_probe(options));
  probes.push_back(make_openvino_probe(options));
  probes.push_back(make_qnn_probe(options));
  return probes;
}

nlohmann::json assemble_capabilities(const std::vector<std::unique_ptr<Probe>>& probes) {
  auto log = get_logger("worker/probe");
  nlohmann::json record = {{"schema", kCapabilitySchema},
                           {"runtimes", nlohmann::json::object()},
                           {"devices", nlohmann::json::array()}};
  for (const auto& probe : probes) {
    if (!probe || !probe->supports()) continue;
    // Each probe works on a copy, so a failure halfway leaves no half-written part behind.
    nlohmann::json draft = record;
    Status status;
    try {
      status = probe->run(draft);
    } catch (const std::exception& e) {
      // Probes promise not to throw; a library that does anyway must not take the worker down.
      status = internal_error(std::string("exception: ") + e.what());
    }
    if (status.ok()) {
      record = std::move(draft);
    } else {
      log->warn("probe '{}' failed and is skipped: {}", probe->name(), status.to_string());
    }
  }
  return record;
}

nlohmann::json probe_capabilities() { return assemble_capabilities(default_probes(ProbeOptions{})); }

}  // namespace am::worker
