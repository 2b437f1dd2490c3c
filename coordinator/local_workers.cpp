#include "coordinator/local_workers.h"

#include <csignal>
#include <unistd.h>
#include <thread>

#include "common/clock.h"
#include "common/log.h"

namespace am::coord {
namespace {

constexpr int64_t kStopGraceMs = 3000;   // SIGTERM → SIGKILL
constexpr int64_t kWaitPollMs = 20;

}  // namespace

std::string local_worker_id(int64_t run_pid, int index) {
  return "local-" + std::to_string(run_pid) + "-" + std::to_string(index);
}

std::optional<int64_t> local_worker_run_pid(std::string_view id) {
  constexpr std::string_view kPrefix = "local-";
  if (id.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  id.remove_prefix(kPrefix.size());
  const std::size_t dash = id.find('-');
  if (dash == std::string_view::npos || dash == 0 || dash + 1 == id.size()) return std::nullopt;
  auto digits = [](std::string_view s) {
    return !s.empty() && s.size() <= 18 && s.find_first_not_of("0123456789") == std::string_view::npos;
  };
  const std::string_view pid = id.substr(0, dash);
  if (!digits(pid) || !digits(id.substr(dash + 1))) return std::nullopt;
  const int64_t value = std::stoll(std::string(pid));
  if (value <= 0) return std::nullopt;
  return value;
}

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
                                     "--log-level", o.log_level,
                                     // Not outliving this process, even when it is killed (the
                                     // kernel's parent-death signal follows the spawning thread:
                                     // `run` starts its workers from its main thread).
                                     "--exit-with-parent", std::to_string(getpid())};
    if (o.heartbeat_interval_ms > 0) {
      args.push_back("--heartbeat-ms");
      args.push_back(std::to_string(o.heartbeat_interval_ms));
    }
    if (o.allow_commands) {
      args.push_back("--allow-commands");
    }
    SpawnOptions spawn;
    spawn.output = SpawnOptions::Output::kFile;
    spawn.output_file = o.state_dir / ("worker-" + std::to_string(i) + ".log");
    // Same process group as `accelmatrix run`: a Ctrl-C in the terminal stops them with it.
    spawn.new_process_group = false;
    AM_ASSIGN_OR_RETURN(ChildProcess child, ChildProcess::spawn(args, spawn));
    w.children_.push_back(std::move(child));
    w.exit_codes_.push_back(-1);
  }
  return w;
}

LocalWorkers::LocalWorkers(LocalWorkers&& other) noexcept
    : children_(std::move(other.children_)), exit_codes_(std::move(other.exit_codes_)) {
  other.children_.clear();
}

LocalWorkers::~LocalWorkers() { stop_all(); }

bool LocalWorkers::reap_exited() {
  bool all = true;
  for (std::size_t i = 0; i < children_.size(); ++i) {
    if (children_[i].pid() <= 0) continue;
    if (auto exit = children_[i].try_wait()) {
      exit_codes_[i] = exit->shell_code();
    } else {
      all = false;
    }
  }
  return all;
}

bool LocalWorkers::wait_all(int64_t timeout_ms) {
  const int64_t deadline = steady_ms() + timeout_ms;
  while (!reap_exited()) {
    if (steady_ms() >= deadline) {
      stop_all();
      return false;
    }
    std::this_thread::sleep_for(Millis(kWaitPollMs));
  }
  return true;
}

void LocalWorkers::stop_all() {
  bool any = false;
  for (ChildProcess& child : children_) {
    if (child.pid() > 0) {
      child.signal(SIGTERM);
      any = true;
    }
  }
  if (!any) return;
  const int64_t deadline = steady_ms() + kStopGraceMs;
  while (!reap_exited() && steady_ms() < deadline) std::this_thread::sleep_for(Millis(kWaitPollMs));
  for (ChildProcess& child : children_) {
    if (child.pid() <= 0) continue;
    get_logger("coordinator/local")->warn("worker {} ignored SIGTERM; killing it", child.pid());
    child.signal(SIGKILL);
    (void)child.wait();
  }
}

}  // namespace am::coord
