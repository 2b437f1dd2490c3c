// The cpu device probe (logger "worker/probe/cpu"): turns what the cpuid, hwloc and memory
// probes found into the "cpu:0" entry of "devices" — the unit the coordinator schedules on.
// It runs after them and copes with any of them having failed: then it falls back to what the C
// library reports (sched_getaffinity, sysconf), which is coarser but never absent. Those figures
// are the probe's "sysconf" answers ({"affinity_cpus", "physical_memory_bytes"}), recorded and
// replayed like every other answer.
#include <sched.h>
#include <unistd.h>

#include <cstdint>
#include <string>

#include "common/log.h"
#include "worker/capability.h"
#include "kernels/cpu/cpu_backend.h"
#include "worker/cpu_device.h"
#include "worker/probe.h"
#include "worker/probe_files.h"
#include "worker/probe_json.h"

namespace am::worker {

std::vector<jobs::Precision> cpu_precisions() {
  const kernels::CpuBackend backend(kernels::ExecContext{});
  return kernels::supported_precisions(
      [&](kernels::Op op, kernels::WeightFormat f) { return backend.supports(op, f); });
}
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

bool isa_flag(const nlohmann::json& cpu, const char* name) {
  auto isa = cpu.find("isa");
  return isa != cpu.end() && json_bool(*isa, name, false);
}

// The device-level features every device entry carries, from the CPU's ISA flags: what the
// inference core's kernels can use for half precision and integer dot products. "fp16" means
// half-precision arithmetic, as for the other backends; F16C only converts.
nlohmann::json cpu_features(const nlohmann::json& cpu) {
  return {
      {"fp16", isa_flag(cpu, "avx512_fp16") || isa_flag(cpu, "fp16")},
      {"fp16_conversion", isa_flag(cpu, "f16c") || isa_flag(cpu, "fp16")},
      {"bf16", isa_flag(cpu, "avx512_bf16") || isa_flag(cpu, "amx_bf16") || isa_flag(cpu, "bf16")},
      {"int_dot_product",
       isa_flag(cpu, "avx512_vnni") || isa_flag(cpu, "avx_vnni") || isa_flag(cpu, "dotprod")},
      {"int8_matmul", isa_flag(cpu, "amx_int8") || isa_flag(cpu, "i8mm")},
  };
}

nlohmann::json gather_sysconf() {
  return {{"affinity_cpus", affinity_cpu_count()}, {"physical_memory_bytes", physical_memory_bytes()}};
}

class CpuDeviceProbe final : public Probe {
 public:
  explicit CpuDeviceProbe(ProbeOptions options) : options_(std::move(options)) {}

  std::string_view name() const override { return "cpu-device"; }
  bool supports() const override { return true; }

  Status run(nlohmann::json& record) override {
    auto log = get_logger("worker/probe/cpu");
    const nlohmann::json* cpu = object_at(record, "cpu");
    const nlohmann::json* topology = object_at(record, "topology");
    AM_ASSIGN_OR_RETURN(nlohmann::json sys, probe_answers(options_, "sysconf", gather_sysconf));

    int64_t cores = positive_int(topology, "cores");
    if (cores == 0) {
      cores = static_cast<int64_t>(json_u64(sys, "affinity_cpus").value_or(1));
      log->debug("no topology; {} CPUs from the affinity mask", cores);
    }
    int64_t memory = positive_int(topology, "memory_limit_bytes");
    if (memory == 0) memory = positive_int(topology, "memory_bytes_hwloc");
    if (memory == 0) memory = static_cast<int64_t>(json_u64(sys, "physical_memory_bytes").value_or(0));
    if (memory == 0) return not_found("no memory size from any source");

    const nlohmann::json empty = nlohmann::json::object();
    const nlohmann::json& cpu_doc = cpu != nullptr ? *cpu : empty;
    nlohmann::json device = {
        {"key", std::string(kCpuDeviceKey)},
        {"backend", "cpu"},
        {"name", cpu_doc.value("model", std::string("unknown cpu"))},
        {"vendor", cpu_doc.value("vendor", std::string("unknown"))},
        {"driver", ""},
        {"type", "cpu"},
        {"software", false},
        {"host_cores", true},     // the host's cores themselves (docs/PROTOCOL.md §5.12)
        {"schedulable", true},
        {"compute_units", cores},
        {"memory_bytes", memory},
        {"precisions", nlohmann::json::array()},
        {"features", cpu_features(cpu_doc)},
    };
    for (jobs::Precision p : cpu_precisions()) device["precisions"].push_back(jobs::to_string(p));
    device["hardware_class"] = hardware_class_id(device, cpu_doc);

    nlohmann::json& devices = record["devices"];
    if (!devices.is_array()) devices = nlohmann::json::array();
    devices.push_back(std::move(device));
    return Status::Ok();
  }

 private:
  ProbeOptions options_;
};

}  // namespace

std::unique_ptr<Probe> make_cpu_device_probe() { return make_cpu_device_probe(ProbeOptions{}); }

std::unique_ptr<Probe> make_cpu_device_probe(const ProbeOptions& options) {
  return std::make_unique<CpuDeviceProbe>(options);
}

}  // namespace am::worker
