#include "coordinator/local_workers.h"

#include <chrono>
#include <cstring>
#include <csignal>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "common/log.h"

extern char** environ;

namespace am::coord {
namespace {

constexpr int64_t kStopGraceMs = 3000;   // SIGTERM → SIGKILL
constexpr int64_t kWaitPollMs = 20;

// Reaps `pid` if it has exited; returns its exit code (or 128+signal), or -1 if still running.
int try_reap(pid_t pid) {
  int status = 0;
  pid_t r = waitpid(pid, &status, WNOHANG);
  if (r != pid) return -1;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

std::filesystem::path sibling_worker_binary() {
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "accelmatrix-worker";
  return self.parent_path() / "accelmatrix-worker";
}

Result<LocalWorkers> LocalWorkers::start(const LocalWorkerOptions& o) {
  if (!std::filesystem::exists(o.worker_binary)) {
    return not_found("worker binary " + o.worker_binary.string() + " does not exist");
  }
  std::error_code ec;
  std::filesystem::create_directories(o.state_dir, ec);
  if (ec) return io_error("cannot create " + o.state_dir.string() + ": " + ec.message());
  LocalWorkers w;
  for (int i = 1; i <= o.count; ++i) {
    std::vector<std::string> args = {o.worker_binary.string(), "--coordinator", o.endpoint,
                                     "--id", o.id_prefix + "-" + std::to_string(i),
                                     "--state-dir", o.state_dir.string(),
                                     "--log-level", o.log_level};
    if (o.heartbeat_interval_ms > 0) {
      args.push_back("--heartbeat-ms");
      args.push_back(std::to_string(o.heartbeat_interval_ms));
    }
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);

    const auto log_path = o.state_dir / ("worker-" + std::to_string(i) + ".log");
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, log_path.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, STDOUT_FILENO, STDERR_FILENO);
    posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    pid_t pid = 0;
    int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
      return io_error("cannot start " + o.worker_binary.string() + ": " + std::strerror(rc));
    }
    w.pids_.push_back(pid);
    w.exit_codes_.push_back(-1);
  }
  return w;
}

LocalWorkers::LocalWorkers(LocalWorkers&& other) noexcept
    : pids_(std::move(other.pids_)), exit_codes_(std::move(other.exit_codes_)) {
  other.pids_.clear();
}

LocalWorkers::~LocalWorkers() { stop_all(); }

bool LocalWorkers::wait_all(int64_t timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (true) {
    bool all = true;
    for (std::size_t i = 0; i < pids_.size(); ++i) {
      if (pids_[i] <= 0) continue;
      int code = try_reap(pids_[i]);
      if (code >= 0) {
        exit_codes_[i] = code;
        pids_[i] = 0;
      } else {
        all = false;
      }
    }
    if (all) return true;
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(kWaitPollMs));
  }
  stop_all();
  return false;
}

void LocalWorkers::stop_all() {
  bool any = false;
  for (pid_t pid : pids_) {
    if (pid > 0) {
      kill(pid, SIGTERM);
      any = true;
    }
  }
  if (!any) return;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kStopGraceMs);
  for (auto& pid : pids_) {
    while (pid > 0) {
      if (try_reap(pid) >= 0) {
        pid = 0;
      } else if (std::chrono::steady_clock::now() >= deadline) {
        get_logger("coordinator/local")->warn("worker {} ignored SIGTERM; killing it", pid);
        kill(pid, SIGKILL);
        waitpid(pid, nullptr, 0);
        pid = 0;
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(kWaitPollMs));
      }
    }
  }
}

}  // namespace am::coord
