// One running worker per worker id and state dir: `accelmatrix-worker` holds an exclusive lock on
// "<state-dir>/worker-<id>.lock" for its lifetime and writes its pid into it.
//
// Two workers started with one state dir (the default ~/.local/state/accelmatrix, a shared
// $HOME) took the same id: each registration replaced the other's session, leases were
// reclaimed from each in turn and jobs ran twice. The second one now stops at start.
//
// Contract: acquire() takes an open-file-description lock (fcntl F_OFD_SETLK) without waiting;
// held by another process it fails with kFailedPrecondition naming that process's pid and the
// way out (its own --state-dir or --id). The kernel releases the lock when the holder dies; the
// file is never unlinked (as coordinator/db_lock.h). O_CLOEXEC: job processes do not inherit it.
// Workers with distinct ids may share a state dir (`accelmatrix run` gives its local workers
// one). Move-only RAII.
#pragma once

#include <filesystem>
#include <string>

#include "common/status.h"
#include "common/unique_fd.h"

namespace am::worker {

class WorkerIdLock {
 public:
  static Result<WorkerIdLock> acquire(const std::filesystem::path& state_dir, const std::string& worker_id);
  const std::filesystem::path& path() const { return path_; }

 private:
  UniqueFd fd_;
  std::filesystem::path path_;
};

}  // namespace am::worker
