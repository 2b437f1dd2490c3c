// ChildProcess: the one way accelmatrix starts another program (the worker's job processes,
// `accelmatrix run`'s local workers, the integration tests' coordinators and workers).
//
// Contract:
// - spawn() uses posix_spawn, never fork: the parent may hold a ZeroMQ context, a database and
//   threads. argv[0] is the program path (not searched in PATH).
// - The child gets stdin from /dev/null and stdout + stderr together on one destination
//   (SpawnOptions::output): a pipe the parent reads, a file opened in the child, or the parent's
//   own stdout/stderr. It inherits no other descriptor: every fd >= 3 is closed in the child,
//   whatever its CLOEXEC flag, so no ZeroMQ socket, database or other child's pipe leaks into it.
// - The child starts with an empty signal mask and every signal at its default disposition,
//   whatever the parent blocked or ignored (a SIGTERM must stop it).
// - With new_process_group (the default) the child leads a new process group whose id is its
//   pid, and signal() reaches the group: the child and everything it started.
// - The parent's end of an output pipe is O_CLOEXEC (a child spawned concurrently by another
//   thread never inherits it) and O_NONBLOCK.
// - The destructor of a child that has not been reaped sends SIGKILL (to its group when it has
//   one) and reaps it: no zombies, no orphans, whatever path the owner took.
// - exited() detects exit without reaping, so the pid and group id stay reserved (the zombie
//   holds them) and signal() can never hit an unrelated process; wait() and try_wait() reap.
// - Move-only. One ChildProcess is used from one thread; different ones from different threads.
#pragma once

#include <sys/resource.h>
#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/unique_fd.h"

namespace am {

struct ExitInfo {
  bool exited = false;   // exited normally: `code` is valid
  int code = -1;
  int signal = 0;        // killed by this signal
  rusage usage{};        // the child's resource usage (ru_maxrss in KiB)

  // The shell's convention: the exit code, or 128 + the signal that killed it.
  int shell_code() const { return exited ? code : 128 + signal; }
};

struct SpawnOptions {
  enum class Output {
    kPipe,     // one pipe for stdout and stderr; read it with read_output()
    kFile,     // `output_file`, created if missing (mode 0644), opened in the child
    kInherit,  // the parent's own stdout and stderr
  };
  Output output = Output::kPipe;
  std::filesystem::path output_file;   // kFile only
  bool append = false;                 // kFile: append instead of truncating
  bool new_process_group = true;
  // "NAME=value" entries added to the parent's environment (replacing a variable of that name).
  std::vector<std::string> env;
};

class ChildProcess {
 public:
  static Result<ChildProcess> spawn(const std::vector<std::string>& argv,
                                    const SpawnOptions& options = {});

  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&&) = delete;
  ChildProcess(const ChildProcess&) = delete;
  ~ChildProcess();

  // The child's pid; -1 once reaped (or moved from).
  pid_t pid() const { return pid_; }

  // Read end of the output pipe; -1 without a pipe or once read_output() saw end of file.
  int output_fd() const { return out_.get(); }

  // Appends everything readable now to `sink` without blocking. Returns false at end of file
  // (every writer — the child and anything it started — closed the pipe), after which the
  // pipe is closed. EINTR-safe. Returns false at once without a pipe.
  bool read_output(std::string& sink);

  // Sends `sig` to the child's process group (with new_process_group) or to the child alone.
  // No-op once reaped.
  void signal(int sig);

  // True when the child has terminated (not yet reaped). Non-blocking.
  bool exited();

  // Reaps the child, blocking until it terminates. Call once.
  Result<ExitInfo> wait();

  // Reaps the child if it has terminated; nullopt while it runs. Non-blocking. A child already
  // reaped, or a wait error (someone else reaped it), yields an ExitInfo with exited = false
  // and signal = 0.
  std::optional<ExitInfo> try_wait();

 private:
  ChildProcess(pid_t pid, UniqueFd out, bool group) : pid_(pid), out_(std::move(out)), group_(group) {}
  pid_t pid_ = -1;       // -1 once reaped (or moved from)
  UniqueFd out_;
  bool group_ = true;    // the child leads its own process group
};

// "SIGSEGV" for 11; "signal 99" for unknown numbers.
std::string signal_name(int sig);

}  // namespace am
