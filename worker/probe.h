// Hardware probes: one small component per source of facts (hwloc, cpuid, the OS's memory
// accounting, the cpu device entry), each behind the same interface.
//
// Contract:
// - supports() answers "can this probe run here at all?" (e.g. cpuid only on x86-64). A probe
//   that does not support the machine is skipped silently.
// - run() adds its facts to the capability record (see worker/capability.h for the shape) and
//   returns a non-OK Status when it failed; assemble_capabilities() then logs it and carries on
//   with the next probe. Each probe runs on a copy of the record that is kept only when it
//   succeeds, so a failing probe leaves nothing half-written behind.
// - Probes run in order; a later probe may read what an earlier one wrote (the cpu device entry
//   reads "cpu" and "topology") and must cope with it being absent.
// - Every file a probe reads goes through ProbeOptions::root ("/" on a live machine, a directory
//   holding a recorded machine's /proc and /sys files in tests). hwloc can likewise load a
//   recorded topology from an XML export instead of the live machine.
// - Not thread-safe: run a probe list from one thread. Probes never throw.
#pragma once

#include <filesystem>
#include <memory>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace am::worker {

struct ProbeOptions {
  std::filesystem::path root = "/";   // prefix for /proc, /sys and /etc files
  std::filesystem::path hwloc_xml;    // empty: discover the live machine
};

class Probe {
 public:
  virtual ~Probe() = default;
  virtual std::string_view name() const = 0;
  virtual bool supports() const = 0;
  virtual Status run(nlohmann::json& record) = 0;
};

// Each probe, also usable alone (tests, `--probe` diagnostics).
std::unique_ptr<Probe> make_cpu_isa_probe();
std::unique_ptr<Probe> make_hwloc_probe(const ProbeOptions& options);
std::unique_ptr<Probe> make_os_memory_probe(const ProbeOptions& options);
std::unique_ptr<Probe> make_host_probe(const ProbeOptions& options);
std::unique_ptr<Probe> make_cpu_device_probe();

// The probes probe_capabilities() runs, in order.
std::vector<std::unique_ptr<Probe>> default_probes(const ProbeOptions& options);

// Runs `probes` in order over a fresh record {"schema": 1, "devices": []} and returns it.
// Unsupported probes are skipped; failing ones are logged (logger "worker/probe") and skipped.
nlohmann::json assemble_capabilities(const std::vector<std::unique_ptr<Probe>>& probes);

}  // namespace am::worker
