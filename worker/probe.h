// Hardware probes: one small component per source of facts (hwloc, cpuid, the OS's memory
// accounting, the cpu device entry, each GPU/NPU runtime), each behind the same interface.
//
// Contract:
// - supports() answers "can this probe run here at all?". A probe that does not support the
//   machine is skipped silently. Runtime probes (OpenCL, Vulkan, CUDA, ROCm, OpenVINO, QNN)
//   always support it: a runtime that is not installed is a fact to report ({"present": false}
//   under "runtimes"), never an error.
// - run() adds its facts to the capability record (see worker/capability.h for the shape) and
//   returns a non-OK Status when it failed; assemble_capabilities() then logs it and carries on
//   with the next probe. Each probe runs on a copy of the record that is kept only when it
//   succeeds, so a failing probe leaves nothing half-written behind. A single failing device
//   inside a runtime is skipped and logged by its probe; the other devices still appear.
// - Probes run in order; a later probe may read what an earlier one wrote (the cpu device entry
//   reads "cpu" and "topology"; software OpenCL/Vulkan devices take the CPU's ISA level into their
//   hardware class) and must cope with it being absent.
// - Where the facts come from (ProbeOptions):
//     live      every file a probe reads goes through `root` ("/" on a live machine), hwloc
//               discovers the machine (or loads `hwloc_xml`), libraries are opened with dlopen;
//     record    as live, and everything read is also written to `recorder` (worker/recording.h);
//     replay    `replay` is set: files, topology and every library's answers come from the
//               recording and nothing of the machine the probe runs on is consulted.
// - Not thread-safe: run a probe list from one thread. Probes never throw.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "jobs/precision.h"

namespace am::worker {

class Recording;
class Recorder;

struct ProbeOptions {
  std::filesystem::path root = "/";   // prefix for /proc, /sys and /etc files
  std::filesystem::path hwloc_xml;    // empty: discover the live machine (unless replaying)
  std::shared_ptr<const Recording> replay;  // set: answer everything from this recording
  std::shared_ptr<Recorder> recorder;       // set: also save what the live machine answered
};

// Options replaying `recording`: root = its files, hwloc_xml = its topology, replay = it.
ProbeOptions replay_options(std::shared_ptr<const Recording> recording);

class Probe {
 public:
  virtual ~Probe() = default;
  virtual std::string_view name() const = 0;
  virtual bool supports() const = 0;
  virtual Status run(nlohmann::json& record) = 0;
};

// Each probe, also usable alone (tests, `--probe` diagnostics). The overloads without options
// probe the live machine.
std::unique_ptr<Probe> make_host_probe(const ProbeOptions& options);
std::unique_ptr<Probe> make_cpu_isa_probe();
std::unique_ptr<Probe> make_cpu_isa_probe(const ProbeOptions& options);
std::unique_ptr<Probe> make_hwloc_probe(const ProbeOptions& options);
std::unique_ptr<Probe> make_os_memory_probe(const ProbeOptions& options);
std::unique_ptr<Probe> make_cpu_device_probe();
std::unique_ptr<Probe> make_cpu_device_probe(const ProbeOptions& options);
std::unique_ptr<Probe> make_opencl_probe(const ProbeOptions& options);
std::unique_ptr<Probe> make_vulkan_probe(const ProbeOptions& options);
// The precisions the Vulkan backend runs on a device named `name`, as its own supports()
// answers them (kernels::VulkanBackend::supports_on); empty in a build without the Vulkan
// backend (no glslc at configure time).
std::vector<jobs::Precision> vulkan_precisions(const std::string& name);
std::unique_ptr<Probe> make_cuda_probe(const ProbeOptions& options);
std::unique_ptr<Probe> make_rocm_probe(const ProbeOptions& options);
std::unique_ptr<Probe> make_openvino_probe(const ProbeOptions& options);
std::unique_ptr<Probe> make_qnn_probe(const ProbeOptions& options);

// The probes probe_capabilities() runs, in order: host, cpuid, hwloc, memory, cpu device,
// opencl, vulkan, cuda, rocm, openvino, qnn.
std::vector<std::unique_ptr<Probe>> default_probes(const ProbeOptions& options);

// Runs `probes` in order over a fresh record {"schema": 2, "runtimes": {}, "devices": []} and
// returns it. Unsupported probes are skipped; failing ones are logged (logger "worker/probe")
// and skipped.
nlohmann::json assemble_capabilities(const std::vector<std::unique_ptr<Probe>>& probes);

}  // namespace am::worker
