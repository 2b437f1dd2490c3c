// Local worker processes for `accelmatrix run`: the embedded coordinator's workers are real
// accelmatrix-worker processes on this machine, talking to it over tcp loopback.
//
// Contract: start() spawns `count` workers (common/spawn.h: posix_spawn, no inherited
// descriptors, default signals; they stay in our process group so a Ctrl-C reaches them too)
// connected to `endpoint`,
// with ids "<prefix>-1".."<prefix>-N" and state under `state_dir`; their output goes to
// `<state_dir>/worker-N.log`. The destructor stops what is still running (SIGTERM, then SIGKILL
// after a grace). wait_all() waits up to `timeout_ms` for all to exit by themselves.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string_view>
#include <string>
#include <vector>

#include "common/spawn.h"
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
  bool allow_commands = false;         // pass --allow-commands (run --allow-commands)
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
  // Stops every worker still running now: SIGTERM (a worker then cancels its jobs and says BYE),
  // SIGKILL after a grace.
  void stop() { stop_all(); }
  // Exit codes of the workers that exited (-1 = killed or still running).
  const std::vector<int>& exit_codes() const { return exit_codes_; }

 private:
  LocalWorkers() = default;
  void stop_all();
  // Reaps the workers that have exited, recording their exit codes; true when none is left.
  bool reap_exited();
  std::vector<ChildProcess> children_;   // reaped ones stay, with pid() == -1
  std::vector<int> exit_codes_;
};

// The worker id `accelmatrix run` gives its i-th local worker: "local-<pid of run>-<i>".
std::string local_worker_id(int64_t run_pid, int index);
// The pid of the `run` that started the local worker `worker_id`; nullopt for any other id.
std::optional<int64_t> local_worker_run_pid(std::string_view worker_id);

// The accelmatrix-worker binary beside the running executable.
std::filesystem::path sibling_worker_binary();

}  // namespace am::coord
