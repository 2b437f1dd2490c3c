// The worker's command line (docs: README "accelmatrix-worker"), behind accelmatrix-worker's main.
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <sys/prctl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>

#include "common/build_info.h"
#include "common/curve_files.h"
#include "common/endpoint.h"
#include "common/exit_codes.h"
#include "common/log.h"
#include "common/protocol.h"
#include "common/reliability.h"
#include "common/transport.h"
#include "common/utf8.h"
#include "jobs/usage_error_cli11.h"
#include "worker/capability.h"
#include "worker/client.h"
#include "worker/descendants.h"
#include "worker/executor.h"
#include "worker/probe.h"
#include "worker/recording.h"
#include "worker/worker_id_lock.h"
#include "worker/worker_main.h"

namespace am::worker {
namespace {

std::atomic<bool> g_stop{false};

void on_signal(int) { g_stop.store(true); }

// `--probe [--record DIR | --replay DIR]`: prints the capability record; with --record also
// saves what the probes read as a machine recording, with --replay rebuilds the record from one.
int run_probe(const std::string& record_dir, const std::string& replay_dir) {
  am::worker::ProbeOptions options;
  std::shared_ptr<am::worker::Recorder> recorder;
  if (!replay_dir.empty()) {
    auto recording = am::worker::Recording::open(replay_dir);
    if (!recording.ok()) {
      std::cerr << "error: --replay: " << recording.status().message() << "\n";
      return am::exit_code_for_error(recording.status());
    }
    options = am::worker::replay_options(*recording);
  } else if (!record_dir.empty()) {
    auto created = am::worker::Recorder::create(record_dir);
    if (!created.ok()) {
      std::cerr << "error: --record: " << created.status().message() << "\n";
      return am::exit_code_for_error(created.status());
    }
    recorder = *created;
    options.recorder = recorder;
  }
  const nlohmann::json record = am::worker::assemble_capabilities(am::worker::default_probes(options));
  if (recorder) {
    const std::string host = record.contains("host") ? record["host"].value("hostname", std::string()) : "";
    am::Status st = recorder->finish("recorded with accelmatrix-worker --probe --record on " + host);
    if (!st.ok()) {
      std::cerr << "error: --record: " << st.message() << "\n";
      return am::exit_code_for_error(st);
    }
  }
  // A driver's string that is not valid UTF-8 is replaced rather than failing the print.
  std::cout << record.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  return am::kExitOk;
}

std::filesystem::path default_state_dir() {
  if (const char* d = std::getenv("ACCELMATRIX_STATE_DIR"); d && *d) return d;
  if (const char* d = std::getenv("XDG_STATE_HOME"); d && *d) return std::filesystem::path(d) / "accelmatrix";
  if (const char* h = std::getenv("HOME"); h && *h) return std::filesystem::path(h) / ".local/state/accelmatrix";
  return "/tmp/accelmatrix-state";
}

}  // namespace

int worker_main(int argc, char** argv, const WorkerMainHooks& hooks) {
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
  std::string curve_key_file, curve_server_file;
  std::string run_job_spec, result_file;
  int64_t memory_limit_mb = 0;
  bool allow_commands = false;
  int64_t exit_with_parent = 0;
  am::worker::CommandContext command_ctx;

  app.add_option("--coordinator", coordinator, "Coordinator endpoint: " + am::expected_endpoint_forms(am::EndpointUse::kConnect));
  app.add_flag("--probe", probe, "Print this machine's capability record as JSON and exit");
  std::string record_dir, replay_dir;
  auto* record_opt = app.add_option("--record", record_dir,
                                    "With --probe: also save what the probes read to DIR (a machine recording)")
                        ->type_name("DIR");
  app.add_option("--replay", replay_dir,
                 "With --probe: rebuild the record from the machine recording in DIR, not this machine")
      ->type_name("DIR")
      ->excludes(record_opt);
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
  app.add_option("--curve-key", curve_key_file, "CURVE: this worker's .key file (accelmatrix keys)");
  app.add_option("--curve-server", curve_server_file, "CURVE: the coordinator's .pub file");
  // Job mode: how the worker runs each job in a fresh child process of itself.
  app.add_option("--run-job", run_job_spec, "(internal) run the job spec in FILE and exit")->group("");
  app.add_option("--result-file", result_file, "(internal) where job mode writes its result")->group("");
  app.add_option("--memory-limit-mb", memory_limit_mb, "(internal) job memory limit")->group("");
  app.add_option("--job-id", command_ctx.job_id, "(internal) the job's id, for command jobs")->group("");
  app.add_option("--attempt", command_ctx.attempt, "(internal) the attempt, for command jobs")->group("");
  app.add_option("--device", command_ctx.device, "(internal) the device key, for command jobs")->group("");
  app.add_option("--work-dir", command_ctx.work_dir, "(internal) a command job's working directory")->group("");
  app.add_option("--exit-with-parent", exit_with_parent,
                 "(internal) stop when process PID, this worker's parent, exits (accelmatrix run's workers)")
      ->group("");
  app.add_flag("--allow-commands", allow_commands,
               "Run external command jobs ([[commands]] in a plan): programs the plan names, run as this user. "
               "Without it the coordinator never sends this worker a command job");

  app.footer("Exit codes: 0 stopped cleanly (SIGINT, SIGTERM, or drained by the coordinator); 2 usage error\n"
             "(bad flag, an endpoint that can never be valid, refused by the coordinator); 4 infrastructure\n"
             "(state dir unwritable).");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help/--version exit 0; every parse error is a usage error, not CLI11's own code.
    if (e.get_exit_code() == 0) return app.exit(e) == 0 ? am::kExitOk : am::kExitUsage;
    std::cerr << am::terminal_safe(am::jobs::usage_error_text(e.what(), am::jobs::usage_command_of(app, "accelmatrix-worker"),
                                                              std::vector<std::string>(argv + 1, argv + argc)),
                                  true)
              << "\n";
    return am::kExitUsage;
  }

  if (!run_job_spec.empty()) {
    // A job must not outlive its worker: if the worker is killed, the kernel kills the job. A
    // worker killed before this line ran is seen by its pid (executor.cpp passes it): such
    // orphans of killed test workers were found still running a hang job 38 minutes later.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (exit_with_parent > 0 && static_cast<int64_t>(getppid()) != exit_with_parent) return am::kExitInfrastructure;
    if (result_file.empty()) {
      std::cerr << "--run-job needs --result-file\n";
      return am::kExitUsage;
    }
    command_ctx.parent_pid = exit_with_parent;
    const int code = am::worker::run_job_mode(run_job_spec, result_file, memory_limit_mb, command_ctx);
    // The job is complete, its result file closed and its output flushed: leave without the
    // libraries' exit handlers. OpenBLAS's joins its threads, and past a memory limit one of
    // them loops for ever on a malloc that fails: a job over its limit ran out its whole time
    // limit and came back `timeout` instead of `oom`.
    std::_Exit(code);
  }

  if (exit_with_parent > 0) {
    // `accelmatrix run` started this worker: it must not outlive the run. A run killed with
    // SIGKILL left its workers reconnecting to the dead endpoint for good. The kernel sends
    // SIGTERM (a clean stop, below) when the parent dies; a parent gone already is seen here.
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (static_cast<int64_t>(getppid()) != exit_with_parent) {
      std::cerr << "accelmatrix-worker: parent " << exit_with_parent << " is gone; not starting\n";
      return am::kExitOk;
    }
  }

  if (am::Status st = am::set_log_level(log_level); !st.ok()) {
    std::cerr << "error: --log-level: " << st.message() << "\n";
    return am::kExitUsage;
  }
  if ((!record_dir.empty() || !replay_dir.empty()) && !probe) {
    std::cerr << "error: --record and --replay go with --probe\n";
    return am::kExitUsage;
  }
  if (probe) return run_probe(record_dir, replay_dir);
  if (coordinator.empty()) {
    std::cerr << "error: --coordinator ENDPOINT is required (or --probe)\n";
    return am::kExitUsage;
  }
  // An endpoint that can never be valid is refused now rather than retried forever.
  if (am::Status st = am::validate_endpoint(coordinator, am::EndpointUse::kConnect); !st.ok()) {
    std::cerr << "error: --coordinator: " << st.message() << "\n";
    return am::kExitUsage;
  }

  // Said now, once: the connection would otherwise fail the same way every reconnect for good.
  if (am::Status fds = am::check_descriptor_limit(); !fds.ok()) {
    std::cerr << "error: " << fds.message() << "\n";
    return am::kExitInfrastructure;
  }

  // What a command job's tree leaves when its runner is SIGKILLed (the OOM killer) becomes this
  // worker's, which ends it when the job ends (executor.cpp). Model jobs start no processes.
  if (allow_commands) am::worker::become_subreaper();

  am::worker::ClientOptions opt;
  opt.coordinator = coordinator;
  opt.slots = slots;
  opt.allow_commands = allow_commands;
  opt.heartbeat_interval_ms = heartbeat_ms;
  opt.heartbeat_liveness = liveness;
  opt.reconnect_max_ms = reconnect_max_ms;
  // What the coordinator would refuse in HELLO is refused here, as a usage error: a worker
  // would otherwise reconnect for ever with a HELLO dropped as malformed.
  for (const auto& t : tags) {
    auto eq = t.find('=');
    if (eq == std::string::npos || eq == 0) {
      std::cerr << "error: --tag '" << am::terminal_safe(t) << "': expected KEY=VALUE\n";
      return am::kExitUsage;
    }
    const std::string key = t.substr(0, eq);
    std::string problem;
    if (std::string key_problem = am::proto::id_problem(key); !key_problem.empty()) {
      problem = "its key " + key_problem;
    } else if (t.size() - eq - 1 > am::proto::kMaxStringBytes) {
      problem = "its value exceeds " + std::to_string(am::proto::kMaxStringBytes) + " bytes";
    } else if (!am::is_valid_utf8(t.substr(eq + 1))) {
      problem = "its value is not valid UTF-8";
    }
    if (!problem.empty()) {
      std::cerr << "error: --tag '" << am::terminal_safe(t.substr(0, 200)) << "': " << problem << "\n";
      return am::kExitUsage;
    }
    opt.tags[key] = t.substr(eq + 1);
  }
  if (!worker_id.empty()) {
    std::string problem = am::proto::id_problem(worker_id);
    // The id also names files in the state dir (its lock, its secret).
    if (problem.empty() && worker_id.find('/') != std::string::npos) problem = "must not contain '/'";
    if (!problem.empty()) {
      std::cerr << "error: --id '" << am::terminal_safe(worker_id.substr(0, 200)) << "': " << problem << "\n";
      return am::kExitUsage;
    }
  }
  if (worker_id.empty()) {
    auto id = am::worker::load_or_create_worker_id(state_dir);
    if (!id.ok()) {
      std::cerr << "error: " << id.status().message() << "\n";
      return am::exit_code_for_error(id.status());
    }
    worker_id = *id;
  }
  opt.worker_id = worker_id;
  std::error_code made;
  std::filesystem::create_directories(state_dir, made);
  if (made) {
    std::cerr << "error: cannot create state dir " << state_dir << ": " << made.message() << "\n";
    return am::kExitInfrastructure;
  }
  // Held until exit: a second worker of this id and state dir stops here (worker_id_lock.h).
  auto id_lock = am::worker::WorkerIdLock::acquire(state_dir, worker_id);
  if (!id_lock.ok()) {
    std::cerr << "error: " << id_lock.status().message() << "\n";
    return am::exit_code_for_error(id_lock.status());
  }
  auto secret = am::worker::load_or_create_worker_secret(state_dir, worker_id);
  if (!secret.ok()) {
    std::cerr << "error: " << secret.status().message() << "\n";
    return am::exit_code_for_error(secret.status());
  }
  opt.secret = *secret;
  if (!curve_key_file.empty() || !curve_server_file.empty()) {
    if (curve_key_file.empty() || curve_server_file.empty()) {
      std::cerr << "error: --curve-key and --curve-server go together\n";
      return am::kExitUsage;
    }
    auto pair = am::load_curve_keypair(curve_key_file);
    auto server_key = am::load_curve_public_key(curve_server_file);
    if (!pair.ok() || !server_key.ok()) {
      std::cerr << "error: " << (!pair.ok() ? pair.status() : server_key.status()).message() << "\n";
      return am::kExitUsage;
    }
    opt.curve = am::CurveClientConfig{*server_key, pair->public_key, pair->secret_key};
  }
  std::error_code ec;
  opt.worker_binary = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) opt.worker_binary = std::filesystem::absolute(argv[0]);
  opt.scratch_dir = std::filesystem::path(state_dir) / ("scratch-" + worker_id);
  opt.capabilities = am::worker::probe_capabilities();
  if (hooks.adjust_capabilities) hooks.adjust_capabilities(opt.capabilities);

  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  am::Status st;
  {
    am::worker::WorkerClient client(std::move(opt));
    st = client.run(g_stop);
  }
  // The BYE that ends a session was only queued; without this the process could exit before
  // ZeroMQ sent it, and the coordinator would wait out the worker's liveness instead.
  if (!am::finish_pending_sends(am::reliability::kLastMessagesFlushMs + 500)) {
    am::get_logger("worker")->warn("the last messages to the coordinator may not have been sent");
  }
  if (!st.ok()) {
    am::get_logger("worker")->error("{}", st.to_string());
    return am::exit_code_for_error(st);   // refused by the coordinator (retry false): 2
  }
  return am::kExitOk;
}

}  // namespace am::worker
