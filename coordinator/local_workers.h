// Local worker processes for `accelmatrix run`: the embedded coordinator's workers are real
// accelmatrix-worker processes on this machine, talking to it over tcp loopback.
//
// Contract: start() spawns `count` workers (posix_spawn, never fork) connected to `endpoint`,
// with ids "<prefix>-1".."<prefix>-N" and state under `state_dir`; their output goes to
// `<state_dir>/worker-N.log`. The destructor stops what is still running (SIGTERM, then SIGKILL
// after a grace). wait_all() waits up to `timeout_ms` for all to exit by themselves.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <sys/types.h>
#include <vector>

#include "common/status.h"

namespace am::coord {

struct LocalWorkerOptions {
  std::filesystem::path worker_binary;
  std::string endpoint;
  int count = 1;
  std::string id_prefix = "local";
  std::filesystem::path state_dir;
  std::string log_level = "info";
  int64_t heartbeat_interval_ms = 0;   // 0 = worker default
};

class LocalWorkers {
 public:
  static Result<LocalWorkers> start(const LocalWorkerOptions& options);
  LocalWorkers(LocalWorkers&& other) noexcept;
  LocalWorkers& operator=(LocalWorkers&&) = delete;
  LocalWorkers(const LocalWorkers&) = delete;
  ~LocalWorkers();

  // True when every worker exited by itself within the timeout; survivors are then stopped.
  bool wait_all(int64_t timeout_ms);
  // Exit codes of the workers that exited (-1 = killed or still running).
  const std::vector<int>& exit_codes() const { return exit_codes_; }

 private:
  LocalWorkers() = default;
  void stop_all();
  std::vector<pid_t> pids_;
  std::vector<int> exit_codes_;
};

// The accelmatrix-worker binary beside the running executable.
std::filesystem::path sibling_worker_binary();

}  // namespace am::coord
