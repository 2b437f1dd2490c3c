// ChildProcess: one spawned program in its own process group, with its stdout and stderr merged
// into a single pipe the parent reads.
//
// Contract:
// - spawn() uses posix_spawn (never a bare fork: the parent may hold a ZeroMQ context and
//   threads). The child gets stdin from /dev/null, stdout and stderr on one pipe, no other open
//   file descriptors (every fd >= 3 is closed in the child, whatever its CLOEXEC flag), default
//   signal dispositions, an empty signal mask, and a new process group whose id is its pid, so
//   signal_group() reaches it and everything it started.
// - The parent's end of the pipe is O_CLOEXEC (a child spawned concurrently by another thread
//   never inherits it) and O_NONBLOCK.
// - The destructor of a child that has not been reaped kills its group with SIGKILL and reaps
//   it: no zombies, no orphans, whatever path the owner took.
// - exited() detects exit without reaping, so the group id stays reserved (the zombie leader
//   holds it) and signal_group() can never hit an unrelated process group; wait() reaps.
// - Move-only. One ChildProcess is used from one thread; different ones from different threads.
#pragma once

#include <sys/resource.h>
#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace am::worker {

// Owns a file descriptor.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release();
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

struct ExitInfo {
  bool exited = false;   // exited normally: `code` is valid
  int code = -1;
  int signal = 0;        // killed by this signal
  rusage usage{};        // the child's resource usage (ru_maxrss in KiB)
};

class ChildProcess {
 public:
  // argv[0] is the program path (not searched in PATH).
  static Result<ChildProcess> spawn(const std::vector<std::string>& argv);

  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&&) = delete;
  ChildProcess(const ChildProcess&) = delete;
  ~ChildProcess();

  pid_t pid() const { return pid_; }

  // Read end of the output pipe; -1 once read_output() saw end of file.
  int output_fd() const { return out_.get(); }

  // Appends everything readable now to `sink` without blocking. Returns false at end of file
  // (every writer — the child and anything it started — closed the pipe), after which the
  // pipe is closed. EINTR-safe.
  bool read_output(std::string& sink);

  // Sends `sig` to the child's whole process group. No-op once reaped.
  void signal_group(int sig);

  // True when the child has terminated (not yet reaped). Non-blocking.
  bool exited();

  // Reaps the child, blocking until it terminates. Call once.
  Result<ExitInfo> wait();

 private:
  ChildProcess(pid_t pid, UniqueFd out) : pid_(pid), out_(std::move(out)) {}
  pid_t pid_ = -1;       // -1 once reaped (or moved from)
  UniqueFd out_;
};

// "SIGSEGV" for 11; "signal 99" for unknown numbers.
std::string signal_name(int sig);

}  // namespace am::worker
