// accelmatrix-worker: one per hardware box. Thin: parses flags and calls the worker library.
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <sys/prctl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>

#include "common/build_info.h"
#include "common/log.h"
#include "worker/capability.h"
#include "worker/client.h"
#include "worker/executor.h"

namespace {

std::atomic<bool> g_stop{false};

void on_signal(int) { g_stop.store(true); }

std::filesystem::path default_state_dir() {
  if (const char* d = std::getenv("ACCELMATRIX_STATE_DIR"); d && *d) return d;
  if (const char* d = std::getenv("XDG_STATE_HOME"); d && *d) return std::filesystem::path(d) / "accelmatrix";
  if (const char* h = std::getenv("HOME"); h && *h) return std::filesystem::path(h) / ".local/state/accelmatrix";
  return "/tmp/accelmatrix-state";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"accelmatrix-worker: probes this machine's hardware and runs accelmatrix jobs"};
  app.set_version_flag("--version", am::build_string());

  std::string coordinator;
  bool probe = false;
  std::string worker_id;
  std::string state_dir = default_state_dir().string();
  int slots = 1;
  std::vector<std::string> tags;
  int64_t heartbeat_ms = am::reliability::kHeartbeatIntervalMs;
  int liveness = am::reliability::kHeartbeatLiveness;
  int64_t reconnect_max_ms = am::reliability::kReconnectMaxMs;
  std::string log_level = "info";
  std::string run_job_spec, result_file;
  int64_t memory_limit_mb = 0;

  app.add_option("--coordinator", coordinator, "Coordinator endpoint, e.g. tcp://HOST:7450");
  app.add_flag("--probe", probe, "Print this machine's capability record as JSON and exit");
  app.add_option("--id", worker_id, "Worker id (default: kept in STATE_DIR/worker-id)");
  app.add_option("--state-dir", state_dir, "Where the worker keeps its id and scratch files")
      ->capture_default_str();
  app.add_option("--slots", slots, "Jobs run at once")->check(CLI::Range(1, 256))->capture_default_str();
  app.add_option("--tag", tags, "Tag KEY=VALUE advertised to the coordinator (repeatable)");
  app.add_option("--heartbeat-ms", heartbeat_ms, "Heartbeat interval until the coordinator states its own")
      ->check(CLI::Range(int64_t{10}, int64_t{600000}))->capture_default_str();
  app.add_option("--liveness", liveness, "Missed heartbeats before the coordinator is presumed dead")
      ->check(CLI::Range(1, 1000))->capture_default_str();
  app.add_option("--reconnect-max-ms", reconnect_max_ms, "Cap of the reconnect backoff")
      ->check(CLI::Range(int64_t{10}, int64_t{600000}))->capture_default_str();
  app.add_option("--log-level", log_level, "trace|debug|info|warn|error|off")->capture_default_str();
  // Job mode: how the worker runs each job in a fresh child process of itself.
  app.add_option("--run-job", run_job_spec, "(internal) run the job spec in FILE and exit")->group("");
  app.add_option("--result-file", result_file, "(internal) where job mode writes its result")->group("");
  app.add_option("--memory-limit-mb", memory_limit_mb, "(internal) job memory limit")->group("");

  CLI11_PARSE(app, argc, argv);

  if (!run_job_spec.empty()) {
    // A job must not outlive its worker: if the worker is killed, the kernel kills the job.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (result_file.empty()) {
      std::cerr << "--run-job needs --result-file\n";
      return 2;
    }
    return am::worker::run_job_mode(run_job_spec, result_file, memory_limit_mb);
  }

  if (am::Status st = am::set_log_level(log_level); !st.ok()) {
    std::cerr << "error: --log-level: " << st.message() << "\n";
    return 2;
  }
  if (probe) {
    std::cout << am::worker::probe_capabilities().dump(2) << "\n";
    return 0;
  }
  if (coordinator.empty()) {
    std::cerr << "error: --coordinator ENDPOINT is required (or --probe)\n";
    return 2;
  }

  am::worker::ClientOptions opt;
  opt.coordinator = coordinator;
  opt.slots = slots;
  opt.heartbeat_interval_ms = heartbeat_ms;
  opt.heartbeat_liveness = liveness;
  opt.reconnect_max_ms = reconnect_max_ms;
  for (const auto& t : tags) {
    auto eq = t.find('=');
    if (eq == std::string::npos || eq == 0) {
      std::cerr << "error: --tag '" << t << "': expected KEY=VALUE\n";
      return 2;
    }
    opt.tags[t.substr(0, eq)] = t.substr(eq + 1);
  }
  if (worker_id.empty()) {
    auto id = am::worker::load_or_create_worker_id(state_dir);
    if (!id.ok()) {
      std::cerr << "error: " << id.status().message() << "\n";
      return 1;
    }
    worker_id = *id;
  }
  opt.worker_id = worker_id;
  std::error_code ec;
  opt.worker_binary = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) opt.worker_binary = std::filesystem::absolute(argv[0]);
  opt.scratch_dir = std::filesystem::path(state_dir) / ("scratch-" + worker_id);
  opt.capabilities = am::worker::probe_capabilities();

  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  am::worker::WorkerClient client(std::move(opt));
  am::Status st = client.run(g_stop);
  if (!st.ok()) {
    am::get_logger("worker")->error("{}", st.to_string());
    return 1;
  }
  return 0;
}
