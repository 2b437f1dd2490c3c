// Test stand-in for `accelmatrix-worker` in job mode: the same four flags, the same library
// call and the same tie to its parent (worker_main.cpp). Lets the executor be tested without
// the worker's client (and its ZeroMQ context).
#include <sys/prctl.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "worker/executor.h"

int main(int argc, char** argv) {
  std::string spec, result;
  long long memory_limit_mb = 0;
  long long parent = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view flag = argv[i];
    if (flag == "--run-job") spec = argv[i + 1];
    else if (flag == "--result-file") result = argv[i + 1];
    else if (flag == "--memory-limit-mb") memory_limit_mb = std::atoll(argv[i + 1]);
    else if (flag == "--exit-with-parent") parent = std::atoll(argv[i + 1]);
    else {
      std::fprintf(stderr, "job_mode_host: unknown flag %s\n", argv[i]);
      return 2;
    }
  }
  if (spec.empty() || result.empty()) {
    std::fprintf(stderr, "usage: job_mode_host --run-job SPEC --result-file OUT [--memory-limit-mb N] [--exit-with-parent PID]\n");
    return 2;
  }
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (parent > 0 && static_cast<long long>(getppid()) != parent) return 4;
  std::_Exit(am::worker::run_job_mode(spec, result, memory_limit_mb));   // as accelmatrix-worker does
}
