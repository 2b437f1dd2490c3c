// Helpers for integration tests: real accelmatrix processes, a scratch directory, and direct
// SQLite queries against the coordinator's database.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

#include "common/spawn.h"

namespace am::testing {

std::filesystem::path build_dir();
std::filesystem::path source_dir();
std::filesystem::path coordinator_binary();   // build/accelmatrix
std::filesystem::path worker_binary();        // build/accelmatrix-worker

// A fresh directory under the system temp dir, removed when the object dies (kept on failure
// when ACCELMATRIX_KEEP_TEST_DIRS is set).
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& name);
  ~ScratchDir();
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& leaf) const { return path_ / leaf; }

 private:
  std::filesystem::path path_;
};

// A child process (common/spawn.h) with stdout+stderr appended to a log file. Killed (SIGKILL)
// on destruction if alive. Throws std::runtime_error when it cannot be started.
class Process {
 public:
  Process(const std::vector<std::string>& argv, const std::filesystem::path& log_file);
  ~Process();
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  pid_t pid() const;                           // -1 once reaped
  bool running();
  void kill_hard();                            // SIGKILL and reap
  void terminate();                            // SIGTERM (no wait)
  void signal(int sig);                        // any signal (SIGSTOP, SIGCONT, ...), no wait
  // Waits for exit; returns the exit code, 128+signal, or -1 on timeout.
  int wait(std::chrono::milliseconds timeout);
  std::string log() const;

 private:
  std::optional<ChildProcess> child_;
  int exit_code_ = -1;
  std::filesystem::path log_file_;
};

// Polls `pred` every 20 ms until true or the timeout passes.
bool wait_until(const std::function<bool()>& pred, std::chrono::milliseconds timeout);

// Runs a query returning one integer (0 when no row).
int64_t sql_int(const std::filesystem::path& db, const std::string& query);
// Runs statements that change the database (a test corrupting what a process stored); returns
// "" or SQLite's error.
std::string sql_exec(const std::filesystem::path& db, const std::string& statements);
// Runs a query and returns every row as strings (NULL -> "").
std::vector<std::vector<std::string>> sql_rows(const std::filesystem::path& db,
                                               const std::string& query);

// Writes a plan for bert-tiny with the given body appended to a [plan] header.
std::filesystem::path write_file(const std::filesystem::path& path, const std::string& text);
std::string read_file(const std::filesystem::path& path);
// The pid of a process whose command line (arguments joined by spaces, with one after the last)
// holds `needle`, or -1.
pid_t pid_with_argument(const std::string& needle);

// Runs a command to completion and returns its stdout; exit code in *exit_code.
std::string run_capture(const std::vector<std::string>& argv, int* exit_code,
                        std::chrono::milliseconds timeout = std::chrono::seconds(60));

}  // namespace am::testing
