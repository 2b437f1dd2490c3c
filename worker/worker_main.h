// The worker's command line as a library function: accelmatrix-worker's main() is one call to it.
//
// Contract: worker_main() parses `argv` (CLI11), then probes, prints (--probe), runs one job
// (--run-job, the child-process mode the executor spawns with this same binary), or serves a
// coordinator until SIGINT/SIGTERM or DRAIN; it returns the process exit code (common/exit_codes.h)
// and installs signal handlers, so it is called once per process, from main().
//
// `hooks` exist for test binaries only: tests/integration/class_override_worker.cpp is a real
// worker that presents another hardware class (DECISIONS.md: such an override is compiled into
// test targets, never read from flags or the environment by a shipped binary). The shipped
// binary passes none.
#pragma once

#include <functional>

#include <nlohmann/json.hpp>

namespace am::worker {

struct WorkerMainHooks {
  // Called with the probed capability record before the worker registers with it.
  std::function<void(nlohmann::json& capabilities)> adjust_capabilities;
};

int worker_main(int argc, char** argv, const WorkerMainHooks& hooks = {});

}  // namespace am::worker
