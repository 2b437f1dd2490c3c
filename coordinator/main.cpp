// accelmatrix: the coordinator and the CLI. Thin: parses flags and calls coordinator/commands.
#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <deque>
#include <iostream>
#include <optional>
#include <vector>

#include <poll.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>

#include "common/build_info.h"
#include "common/exit_codes.h"
#include "common/log.h"
#include "common/utf8.h"
#include "coordinator/commands.h"
#include "jobs/plan.h"
#include "jobs/suggest.h"
#include "jobs/usage_error.h"
#include "jobs/usage_error_cli11.h"

namespace {

std::atomic<bool> g_stop{false};
void on_signal(int) { g_stop.store(true); }

// Whether standard output is a pipe or FIFO whose reader has gone (`| head` took what it
// wanted): poll reports POLLERR for the write end of such a pipe.
bool stdout_reader_gone() {
  pollfd p{STDOUT_FILENO, POLLOUT, 0};
  return ::poll(&p, 1, 0) == 1 && (p.revents & POLLERR) != 0;
}

// A command's output that could not be written (a full disk, `> /dev/full`) fails the command
// with exit 4 whatever it found, so a CI gate is never green on an empty comparison; a reader
// that left early does not. `report` writes its own standard output and says so itself.
int finish_standard_output(int code) {
  std::cout.flush();
  const bool flushed = std::fflush(stdout) == 0;
  const int error = errno;
  if (flushed && !std::cout.fail() && !std::ferror(stdout)) return code;
  if (stdout_reader_gone()) return code;
  std::cerr << "error: cannot write to standard output"
            << (flushed ? std::string() : std::string(": ") + std::strerror(error)) << "\n";
  return am::kExitInfrastructure;
}

// -q, -v and --log-level, accepted before the subcommand and after it: each app (the top one
// and every subcommand) gets its own copy, combined after parsing.
struct Verbosity {
  bool quiet = false;
  int verbose = 0;
  std::string log_level;
};

void add_verbosity_flags(CLI::App* app, Verbosity& v) {
  app->add_flag("-q,--quiet", v.quiet, "No progress display; log errors only");
  app->add_flag("-v,--verbose", v.verbose, "Log more: -v info, -vv debug");
  app->add_option("--log-level", v.log_level, "trace|debug|info|warn|error|off (default warn; wins over -q/-v)");
}

// The log level and quietness all the copies say together: an explicit --log-level wins (the
// one after the subcommand over the one before), then -q, then -v (counted over both places).
std::pair<std::string, bool> combine(const std::deque<Verbosity>& all) {
  bool quiet = false;
  int verbose = 0;
  std::string level;
  for (const Verbosity& v : all) {
    quiet = quiet || v.quiet;
    verbose += v.verbose;
    if (!v.log_level.empty()) level = v.log_level;
  }
  if (level.empty()) level = quiet ? "error" : verbose >= 2 ? "debug" : verbose == 1 ? "info" : "warn";
  return {level, quiet};
}

// `--run ""` is no run id (it read as "the plan's name"); the rest of the rule is checked where
// the id is used (jobs::run_id_problem).
const CLI::Validator kNonEmptyRunId(
    [](const std::string& v) { return v.empty() ? std::string("an empty run id (leave --run out for the plan's name)") : std::string(); },
    "RUN_ID");

// `-o ""` is no file (it read as "stdout" and exited 0).
const CLI::Validator kNonEmptyPath(
    [](const std::string& v) { return v.empty() ? std::string("an empty file name (leave -o out for stdout)") : std::string(); },
    "FILE");

// A percentage written as decimals ("10", "2.5"): strtod also read "0x10" as 16 and "inf".
const CLI::Validator kPercent(
    [](const std::string& v) {
      const std::size_t digits = v.find_first_not_of("0123456789");
      const bool ok = !v.empty() && std::isdigit(static_cast<unsigned char>(v[0])) &&
                      (digits == std::string::npos ||
                       (v[digits] == '.' && digits + 1 < v.size() &&
                        v.find_first_not_of("0123456789", digits + 1) == std::string::npos));
      return ok ? std::string() : "must be a percentage in decimal digits, e.g. 10 or 2.5 (got '" + v + "')";
    },
    "PCT");

// The family-wise level of `compare`: a probability above 0 and at most 0.5 (CLI::Range
// printed its lower bound 1e-9 as "0" and let NaN through to another message).
const CLI::Validator kAlpha(
    [](const std::string& v) {
      char* end = nullptr;
      const double a = std::strtod(v.c_str(), &end);
      const bool number = !v.empty() && end == v.c_str() + v.size();
      return number && a > 0.0 && a <= 0.5 ? std::string()
                                           : "must be a number above 0 and at most 0.5 (got '" + v + "')";
    },
    "ALPHA");

void add_server_flags(CLI::App* cmd, am::coord::ServeArgs& a) {
  auto& s = a.server;
  cmd->add_option("--db", s.db_path, "SQLite database file")->capture_default_str();
  cmd->add_option("--catalog", a.catalog_dir, "Model catalog directory (default: beside the plan)");
  cmd->add_option("--run", a.run_id, "Run id (default: the plan's name; same id resumes)")->check(kNonEmptyRunId);
  cmd->add_option("--heartbeat-ms", s.heartbeat_interval_ms, "Heartbeat interval")
      ->check(CLI::Range(int64_t{10}, int64_t{600000}))->capture_default_str();
  cmd->add_option("--liveness", s.heartbeat_liveness, "Missed heartbeats before a worker is dead")
      ->check(CLI::Range(1, 1000))->capture_default_str();
  cmd->add_option("--lease-grace-ms", s.lease_grace_ms, "Lease = job timeout + this grace")
      ->check(CLI::Range(int64_t{0}, int64_t{86400000}))->capture_default_str();
  cmd->add_option("--max-attempts", s.max_infra_attempts, "Distinct workers a job's leases may fail on (worker lost, lease expired) before it is 'lost'")
      ->check(CLI::Range(1, 100))->capture_default_str();
  cmd->add_option("--endpoint-file", a.endpoint_file, "Write the bound endpoint to this file");
  cmd->add_flag("--extend", a.extend,
                "Add this plan's jobs to the run even though it was made from another plan");
  cmd->add_option("--fail-on", a.fail_on,
                  "Statuses that make the run exit 1, comma-separated (default: fail,crash,timeout,oom,error)")
      ->type_name("STATUS,...")
      ->check(CLI::Validator(
          [](const std::string& v) {
            // An empty value was taken as "the default list" without a word.
            return v.empty() ? std::string("an empty list (leave --fail-on out for the default)") : std::string();
          },
          "STATUS,..."));
  cmd->add_option("--curve-key", a.curve_key_file, "CURVE: this coordinator's .key file (accelmatrix keys)");
  cmd->add_option("--curve-allow", a.curve_allow, "CURVE: worker .pub file, or a directory of them");
  cmd->add_option("--curve-admin", a.curve_admin,
                  "CURVE: admin .pub file, or a directory of them: the keys status/submit/cancel/drain/release accept");
  cmd->add_option_function<double>(
         "--health-interval",
         [&s](double v) { s.health_interval_ms = static_cast<int64_t>(v * 1000.0); },
         "Seconds between a device's health jobs (one also runs when its worker registers); 0 = no health jobs "
         "[default: 3600]")
      ->check(CLI::Range(0.0, 7.0 * 86400.0));
  cmd->add_option("--quarantine-after", s.quarantine_after,
                  "Quarantine a device after this many crash/timeout outcomes in a row on different models (0 = never)")
      ->check(CLI::Range(0, 1000))->capture_default_str();
  cmd->add_option_function<double>(
         "--quarantine-backoff",
         [&s](double v) { s.quarantine_backoff_ms = static_cast<int64_t>(v * 1000.0); },
         "Seconds a device's first quarantine lasts before a health job may lift it (doubles, capped at 1 h) "
         "[default: 300]")
      ->check(CLI::Range(0.001, 86400.0));
}

void add_target_flags(CLI::App* cmd, am::coord::ControlTarget& t) {
  cmd->add_option("--coordinator", t.coordinator,
                  "Coordinator endpoint, tcp://HOST:PORT or ipc://PATH (default: the one holding --db)")
      ->check([](const std::string& v) { return v.empty() ? std::string("must not be empty") : std::string(); });
  cmd->add_option("--db", t.db, "Database whose running coordinator to ask")->capture_default_str();
  cmd->add_option("--curve-key", t.curve_key, "CURVE: this admin's .key file");
  cmd->add_option("--curve-server", t.curve_server, "CURVE: the coordinator's .pub file");
  cmd->add_option("--timeout-ms", t.timeout_ms, "How long to wait for the coordinator's answer")
      ->check(CLI::Range(100, 600000))->capture_default_str();
}

// CLI11 reports "A subcommand is required" for `accelmatrix frobnicate`: the word it could not
// place is in remaining(). Names it, with the subcommands there are.
std::optional<std::string> unknown_subcommand(CLI::App& app, const std::vector<const CLI::App*>& subcommands) {
  if (!app.get_subcommands().empty()) return std::nullopt;
  for (const std::string& word : app.remaining()) {
    if (word.empty() || word.front() == '-') continue;
    std::vector<std::string> names;
    for (const CLI::App* sub : subcommands) names.push_back(sub->get_name());
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
    return "unknown subcommand '" + word + "'" + am::jobs::did_you_mean(word, names) + " (expected one of: " + list +
           "; see accelmatrix --help)";
  }
  return std::nullopt;
}

// The command a parse error belongs to: the subcommand named on the line (the first word that
// is not an option or --log-level's value), with the words given to it, or the program itself.
std::pair<am::jobs::UsageCommand, std::vector<std::string>> failed_command(
    const CLI::App& app, const std::vector<const CLI::App*>& subcommands, int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word == "--log-level") {
      ++i;
      continue;
    }
    if (word.empty() || word.front() == '-') continue;
    for (const CLI::App* sub : subcommands) {
      if (sub->get_name() != word) continue;
      return {am::jobs::usage_command_of(*sub, "accelmatrix " + word), std::vector<std::string>(argv + i + 1, argv + argc)};
    }
    break;
  }
  return {am::jobs::usage_command_of(app, "accelmatrix"), std::vector<std::string>(argv + 1, argv + argc)};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"accelmatrix: measures which models run at which precision on which hardware"};
  app.set_version_flag("--version", am::build_string());
  app.require_subcommand(1);
  app.footer(am::exit_code_help());
  std::deque<Verbosity> verbosity;   // a deque: add_flag keeps references into it
  add_verbosity_flags(&app, verbosity.emplace_back());

  am::coord::RunArgs run;
  run.serve.plan_file = (am::jobs::default_plans_dir() / "default.toml").string();
  run.serve.server.bind = "tcp://127.0.0.1:*";
  auto* run_cmd = app.add_subcommand("run", "Embedded coordinator + local workers; prints the matrix");
  run_cmd->add_option("--plan", run.serve.plan_file, "Plan file")->capture_default_str();
  run_cmd->add_option("--workers", run.workers, "Local worker processes")
      ->check(CLI::Range(1, 64))->capture_default_str();
  run_cmd->add_option("--bind", run.serve.server.bind, "Endpoint to bind")->capture_default_str();
  run_cmd->add_flag("--allow-commands", run.allow_commands,
                    "Let the local workers run the plan's [[commands]] (external programs)");
  add_server_flags(run_cmd, run.serve);
  run_cmd->footer(am::exit_code_help());

  am::coord::ServeArgs serve;
  auto* serve_cmd = app.add_subcommand("serve", "Run the coordinator for a plan");
  serve_cmd->add_option("--plan", serve.plan_file, "Plan file")->required();
  serve_cmd->add_option("--bind", serve.server.bind, "Endpoint to bind")->capture_default_str();
  serve_cmd->add_flag("--exit-when-done", serve.server.exit_when_done,
                      "Exit once every job is terminal (workers are drained)");
  serve_cmd->add_option("--expect-workers", serve.server.expect_workers,
                        "A run is complete only once this many workers with a device that can take a job "
                        "registered; jobs no device can run are settled then (0 = never settle them)")
      ->check(CLI::Range(0, 100000))->capture_default_str();
  serve_cmd->add_option("--expect-classes", serve.server.expect_classes,
                        "A run is complete only once this many hardware classes registered, and plan jobs "
                        "no class took are settled only then (docs/PLANS.md \"Placement\")")
      ->check(CLI::Range(0, 100000))->capture_default_str();
  add_server_flags(serve_cmd, serve);
  int64_t serve_exit_with_parent = 0;
  serve_cmd->add_option("--exit-with-parent", serve_exit_with_parent,
                        "(internal) stop cleanly when process PID, which started this one, ends")
      ->group("");
  serve_cmd->footer(am::exit_code_help());

  am::coord::ReportArgs report;
  auto* report_cmd = app.add_subcommand("report", "Export a run's results and matrix");
  report_cmd->add_option("--db", report.db, "SQLite database file")->required();
  report_cmd->add_option("--format", report.format,
                         "md | json | csv | junit | html (one self-contained dashboard file; docs/REPORTS.md)")
      ->check(CLI::IsMember({"md", "json", "csv", "junit", "html"}))->capture_default_str();
  report_cmd->add_option("--run", report.run_id, "Run id (default: newest)");
  report_cmd->add_option("-o,--output", report.output, "Write to FILE instead of stdout")->check(kNonEmptyPath);

  am::coord::CompareArgs compare;
  double fail_on_regression_pct = 0.0;
  auto* compare_cmd = app.add_subcommand(
      "compare", "Compare two runs job by job: latency ratios with a significance test, status and accuracy changes");
  compare_cmd->add_option("base_db", compare.base_db, "Database of the base run")->required();
  compare_cmd->add_option("new_db", compare.new_db, "Database of the new run (may be the same file)")->required();
  compare_cmd->add_option("--base-run", compare.base_run, "Base run id (default: the newest run)");
  compare_cmd->add_option("--new-run", compare.new_run, "New run id (default: the newest run)");
  compare_cmd->add_option("--format", compare.format, "md | json")
      ->check(CLI::IsMember({"md", "json"}))->capture_default_str();
  compare_cmd->add_option("-o,--output", compare.output, "Write to FILE instead of stdout")->check(kNonEmptyPath);
  auto* fail_on_regression = compare_cmd->add_option(
      "--fail-on-regression", fail_on_regression_pct,
      "Exit 1 when a job is significantly slower by at least PCT percent, or went pass->fail "
      "(without it: the verdict at 10%, exit 0)");
  fail_on_regression->check(kPercent);
  compare_cmd->add_option("--alpha", compare.alpha, "Family-wise significance level (Holm)")
      ->check(kAlpha)->capture_default_str();
  compare_cmd->footer("Exit codes: 0 no regression (or no --fail-on-regression), 1 regression, "
                      "2 bad input, 4 a database cannot be read.");

  am::coord::PlanArgs plan;
  auto* plan_cmd = app.add_subcommand("plan", "Validate a plan and list its jobs; runs nothing");
  plan_cmd->add_option("file", plan.plan_file, "Plan file")->required();
  plan_cmd->add_option("--catalog", plan.catalog_dir, "Model catalog directory");
  plan_cmd->add_option("--run", plan.run_id, "List the job ids of this run (default: the plan's name)")
      ->check(kNonEmptyRunId);
  plan_cmd->add_flag("--json", plan.json, "Print the expanded job specs as JSON");

  am::coord::KeysArgs keys;
  auto* keys_cmd = app.add_subcommand("keys", "Make a CURVE keypair: NAME.key (secret) and NAME.pub");
  keys_cmd->add_option("name", keys.name, "Key name, e.g. coordinator or the worker's host")->required();
  keys_cmd->add_option("--out", keys.out_dir, "Directory to write into")->capture_default_str();

  const char* control_footer =
      "Exit codes: 0 done; 2 bad argument, unknown run/job/worker, or refused (not an admin); 4 no coordinator "
      "answered.\nWithout CURVE, only status is answered to other hosts; under CURVE every request needs a key "
      "from the coordinator's --curve-admin list.";
  am::coord::ControlArgs status;
  auto* status_cmd = app.add_subcommand("status", "Show a running coordinator's runs, workers and devices");
  add_target_flags(status_cmd, status.target);
  status_cmd->add_flag("--json", status.json, "Print the coordinator's status document");
  status_cmd->add_option("--watch", status.watch_s, "Refresh every SECONDS until Ctrl-C")
      ->expected(0, 1)->default_str("2")->check(CLI::Range(0.1, 3600.0));
  status_cmd->footer(control_footer);

  am::coord::ControlArgs submit;
  auto* submit_cmd = app.add_subcommand("submit", "Add a plan to a running coordinator as a new run");
  submit_cmd->add_option("plan", submit.plan_file, "Plan file (read here, expanded by the coordinator)")->required();
  submit_cmd->add_option("--run", submit.run_id, "Run id (default: the plan's name)")->check(kNonEmptyRunId);
  submit_cmd->add_flag("--extend", submit.extend, "Add the plan's jobs to an existing run made from another plan");
  submit.target.timeout_ms = am::coord::kSubmitReplyTimeoutMs;   // it answers once the plan is stored
  add_target_flags(submit_cmd, submit.target);
  submit_cmd->footer(control_footer);

  am::coord::ControlArgs cancel;
  auto* cancel_cmd = app.add_subcommand("cancel", "Cancel a run or one job: queued jobs end cancelled, running ones are stopped");
  cancel_cmd->add_option("id", cancel.id, "Run id or job id")->required();
  add_target_flags(cancel_cmd, cancel.target);
  cancel_cmd->footer(control_footer);

  am::coord::ControlArgs drain;
  auto* drain_cmd = app.add_subcommand("drain", "Give a worker no new jobs; it finishes what it holds and exits");
  drain_cmd->add_option("worker", drain.id, "Worker id (see accelmatrix status)")->required();
  add_target_flags(drain_cmd, drain.target);
  drain_cmd->footer(control_footer);

  am::coord::ControlArgs release;
  auto* release_cmd = app.add_subcommand("release", "Lift a quarantine: every device of WORKER, or WORKER/DEVICE");
  release_cmd->add_option("target", release.id, "WORKER or WORKER/DEVICE (e.g. box1/opencl:0)")->required();
  add_target_flags(release_cmd, release.target);
  release_cmd->footer(control_footer);

  am::coord::RunsArgs runs;
  auto* runs_cmd = app.add_subcommand("runs", "List the runs in a database with their job counts");
  runs_cmd->add_option("--db", runs.db, "SQLite database file")->capture_default_str();
  runs_cmd->add_flag("--json", runs.json, "Print JSON");

  for (CLI::App* sub : {run_cmd, serve_cmd, report_cmd, compare_cmd, plan_cmd, keys_cmd, status_cmd, submit_cmd,
                        cancel_cmd, drain_cmd, release_cmd, runs_cmd}) {
    add_verbosity_flags(sub, verbosity.emplace_back());
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version end here with code 0; every parse error is a usage error (2), not
    // CLI11's own 105/106/109/114 (common/exit_codes.h).
    if (e.get_exit_code() == 0) return app.exit(e);
    const std::vector<const CLI::App*> subcommands{run_cmd,    serve_cmd,  report_cmd, compare_cmd,
                                                   plan_cmd,   keys_cmd,   status_cmd, submit_cmd,
                                                   cancel_cmd, drain_cmd,  release_cmd, runs_cmd};
    if (auto unknown = unknown_subcommand(app, subcommands)) {
      std::cerr << "error: " << am::terminal_safe(*unknown, true) << "\n";
      return am::kExitUsage;
    }
    const auto [command, words] = failed_command(app, subcommands, argc, argv);
    std::cerr << am::terminal_safe(am::jobs::usage_error_text(e.what(), command, words), true) << "\n";
    return am::kExitUsage;
  }
  const auto [log_level, quiet] = combine(verbosity);
  if (quiet) {
    run.serve.quiet = true;
    serve.quiet = true;
  }
  if (am::Status st = am::set_log_level(log_level); !st.ok()) {
    std::cerr << "error: --log-level: " << st.message() << "\n";
    return am::kExitUsage;
  }
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  // A command reports its failures as a Status; anything thrown past it (a library's exception
  // no one foresaw) still ends with a message and an exit code, not an abort.
  const auto dispatch = [&]() -> int {
    if (*run_cmd) return am::coord::cmd_run(run, g_stop);
    if (*serve_cmd) {
      if (serve_exit_with_parent > 0) {
        // Started by a bench or a script that must not leave it running: the kernel sends the
        // clean-stop signal when that parent ends, however it ends (SIGKILL, a timeout).
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (static_cast<int64_t>(getppid()) != serve_exit_with_parent) {
          std::cerr << "accelmatrix serve: parent " << serve_exit_with_parent << " is gone; not starting\n";
          return am::kExitInfrastructure;
        }
      }
      return am::coord::cmd_serve(serve, g_stop);
    }
    if (*report_cmd) return am::coord::cmd_report(report);
    if (*compare_cmd) {
      if (fail_on_regression->count() > 0) compare.fail_on_regression_pct = fail_on_regression_pct;
      return am::coord::cmd_compare(compare);
    }
    if (*plan_cmd) return am::coord::cmd_plan(plan);
    if (*keys_cmd) return am::coord::cmd_keys(keys);
    if (*status_cmd) return am::coord::cmd_status(status, g_stop);
    if (*submit_cmd) return am::coord::cmd_submit(submit);
    if (*cancel_cmd) return am::coord::cmd_cancel(cancel);
    if (*drain_cmd) return am::coord::cmd_drain(drain);
    if (*release_cmd) return am::coord::cmd_release(release);
    if (*runs_cmd) return am::coord::cmd_runs(runs);
    return am::kExitUsage;
  };
  try {
    return finish_standard_output(dispatch());
  } catch (const std::exception& e) {
    std::cerr << "error: unexpected failure: " << e.what() << "\n";
    return am::kExitInfrastructure;
  }
}
