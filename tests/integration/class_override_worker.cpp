// A real accelmatrix worker that presents another hardware class — for the placement tests only
// (issue 11 item 5; DECISIONS.md: the class override is compiled into test targets, never read
// from flags or the environment by a shipped binary).
//
//   am_class_override_worker --test-class LABEL <accelmatrix-worker arguments...>
//
// The worker probes this machine as accelmatrix-worker does, then marks every device and the CPU
// model with "(test class LABEL)" and fingerprints the devices again, so two of these on one box
// register as two hardware classes. Everything else is the shipped worker: it registers, takes
// leases and runs each job in a child process of itself (job mode, worker/worker_main.h) with the
// real inference core. It is not a replayed recording: the jobs run on this machine's hardware,
// only the class they are filed under differs.
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "worker/capability.h"
#include "worker/worker_main.h"

int main(int argc, char** argv) {
  std::string label;
  std::vector<char*> rest{argv[0]};
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--test-class") == 0 && i + 1 < argc) {
      label = argv[++i];
    } else {
      rest.push_back(argv[i]);
    }
  }
  am::worker::WorkerMainHooks hooks;
  if (!label.empty()) {
    const std::string mark = " (test class " + label + ")";
    hooks.adjust_capabilities = [mark](nlohmann::json& record) {
      nlohmann::json& cpu = record["cpu"];
      if (cpu.is_object()) cpu["model"] = cpu.value("model", std::string("cpu")) + mark;
      nlohmann::json& devices = record["devices"];
      if (!devices.is_array()) return;
      for (nlohmann::json& device : devices) {
        device["name"] = device.value("name", std::string("device")) + mark;
        device["hardware_class"] = am::worker::hardware_class_id(device, cpu);
      }
    };
  }
  rest.push_back(nullptr);
  return am::worker::worker_main(static_cast<int>(rest.size()) - 1, rest.data(), hooks);
}
