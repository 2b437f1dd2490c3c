// External command jobs ([[commands]], docs/PLANS.md) through the whole system: a real
// coordinator, a real worker started with --allow-commands, the commands run as real processes
// by the worker's job executor, results in the real store and the JSON report. And a worker
// without --allow-commands never receives one.
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>

#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/integration/harness.h"

namespace am::testing {
namespace {

using namespace std::chrono_literals;

std::string wait_endpoint(const std::filesystem::path& ep_file, Process& serve) {
  std::string ep;
  EXPECT_TRUE(wait_until([&] {
    ep = read_file(ep_file);
    while (!ep.empty() && (ep.back() == '\n' || ep.back() == '\r')) ep.pop_back();
    return !ep.empty();
  }, 20s)) << serve.log();
  return ep;
}

Process start_serve(const ScratchDir& dir, const std::filesystem::path& plan, const std::filesystem::path& db) {
  return Process({coordinator_binary().string(), "--log-level", "info", "serve", "--plan", plan.string(),
                  "--db", db.string(), "--bind", "tcp://127.0.0.1:*", "--catalog",
                  (source_dir() / "jobs/models").string(), "--exit-when-done", "--endpoint-file",
                  (dir / "endpoint").string(), "--expect-workers", "1", "--heartbeat-ms", "100",
                  "--liveness", "5"},
                 dir / "serve.log");
}

std::vector<std::string> worker_argv(const std::string& ep, const ScratchDir& dir, bool allow_commands) {
  std::vector<std::string> argv = {worker_binary().string(), "--coordinator", ep, "--id", "cmd-w",
                                   "--state-dir", (dir / "state").string(), "--heartbeat-ms", "100",
                                   "--liveness", "5", "--log-level", "info"};
  if (allow_commands) argv.push_back("--allow-commands");
  return argv;
}

// A script that checks its environment and working directory, then writes its result file.
constexpr const char* kPassScript = R"sh(#!/bin/sh
echo "bench starting in $(pwd)"
echo "this line is noise" >&2
if [ -n "$(ls -A)" ]; then echo "working dir not empty"; exit 7; fi
case "$ACCELMATRIX_JOB_ID" in ????????????????) ;; *) echo "bad job id"; exit 8 ;; esac
[ "$ACCELMATRIX_ATTEMPT" = 1 ] || exit 9
printf '{"status": "pass", "latency_ms": [2.5, 3.5, 3.0], "throughput": {"value": 120, "unit": "items/s"}, "notes": "device=%s"}\n' "$ACCELMATRIX_DEVICE" > "$ACCELMATRIX_RESULT_FILE"
)sh";

// The same schema printed on stdout by python3, after other output, holding 160 MiB meanwhile
// (its peak resident set is the command's, not the runner's: the worker reads it).
constexpr const char* kStdoutScript = R"py(import json, sys, time
ballast = b"\x01" * (160 << 20)
print("warm-up done")
sys.stdout.flush()
time.sleep(0.3)
print(json.dumps({"status": "pass", "latency_ms": [10.0, 12.0, 11.0], "accuracy": {"nmse": 1e-7, "cosine": 0.9999}}))
)py";

TEST(CommandRun, CommandJobsBecomeStoredResultsWithTheirStatus) {
  ScratchDir dir("command-run");
  const auto db = dir / "d.db";
  const auto pass_script = write_file(dir / "bench.sh", kPassScript);
  ::chmod(pass_script.c_str(), 0755);
  const auto py_script = write_file(dir / "bench.py", kStdoutScript);
  const std::string llama_sample = (source_dir() / "tests/data/commands/llama-bench-tinyllama-q4_0.json").string();
  const auto plan = write_file(dir / "cmd.toml",
      "[plan]\nname = \"cmdrun\"\nmode = \"perf\"\n\n"
      "[[commands]]\nname = \"sh-pass\"\nargv = [\"" + pass_script.string() + "\"]\nbackend = \"cpu\"\n"
      "model = \"ext-model\"\nprecision = \"f16\"\ntimeout_s = 30\n\n"
      "[[commands]]\nname = \"py-pass\"\nargv = [\"python3\", \"" + py_script.string() + "\"]\nbackend = \"cpu\"\n"
      "timeout_s = 30\n\n"
      // The same behind a shell: the 160 MiB are the shell's child's, not the command process's.
      "[[commands]]\nname = \"wrapped\"\nargv = [\"sh\", \"-c\", \"python3 " + py_script.string() + "; true\"]\n"
      "backend = \"cpu\"\ntimeout_s = 30\n\n"
      "[[commands]]\nname = \"segv\"\nargv = [\"sh\", \"-c\", \"kill -SEGV $$\"]\nbackend = \"cpu\"\ntimeout_s = 30\n\n"
      "[[commands]]\nname = \"hang\"\nargv = [\"sleep\", \"60\"]\nbackend = \"cpu\"\ntimeout_s = 1\n\n"
      "[[commands]]\nname = \"garbage\"\nargv = [\"sh\", \"-c\", \"echo all good, no JSON here\"]\nbackend = \"cpu\"\ntimeout_s = 30\n\n"
      "[[commands]]\nname = \"bad-schema\"\nargv = [\"sh\", \"-c\", \"echo '{\\\"status\\\": \\\"pass\\\", \\\"latency_ms\\\": [1, \\\"fast\\\"]}'\"]\n"
      "backend = \"cpu\"\ntimeout_s = 30\n\n"
      "[[commands]]\nname = \"exit3\"\nargv = [\"sh\", \"-c\", \"exit 3\"]\nbackend = \"cpu\"\ntimeout_s = 30\n\n"
      "[[commands]]\nname = \"missing\"\nargv = [\"/nonexistent/accelmatrix-bench\"]\nbackend = \"cpu\"\ntimeout_s = 30\n\n"
      "[[commands]]\nname = \"llama\"\nargv = [\"cat\", \"" + llama_sample + "\"]\nbackend = \"cpu\"\n"
      "output = \"llama-bench\"\nmodel = \"TinyLlama-1.1B\"\nprecision = \"q4_0\"\ntimeout_s = 30\n\n"
      // Exits at once with its result, leaving a child that holds its stdout: a pass at once,
      // not a timeout waiting for the pipe's end.
      R"toml([[commands]]
name = "bg-holds-stdout"
argv = ['sh', '-c', 'sleep 30 & echo "{\"status\": \"pass\", \"latency_ms\": [1.0]}"']
backend = "cpu"
timeout_s = 20

)toml"
      // Children that left the job's process group (a new session): they end with the job,
      // whether it passed or ran out of time.
      R"toml([[commands]]
name = "escape-pass"
argv = ['sh', '-c', 'setsid sleep @ESCAPE_PASS@ >/dev/null 2>&1 </dev/null & echo "{\"status\": \"pass\", \"latency_ms\": [1.0]}"']
backend = "cpu"
timeout_s = 20

[[commands]]
name = "escape-timeout"
argv = ['sh', '-c', 'setsid sleep @ESCAPE_TIMEOUT@ >/dev/null 2>&1 </dev/null & sleep 60']
backend = "cpu"
timeout_s = 1

[[commands]]
name = "term-flushes"
argv = ['sh', '-c', 'trap "echo flushed > @FLUSH_MARK@; exit 0" TERM; sleep 60 & wait']
backend = "cpu"
timeout_s = 1

)toml"
      // 17 MiB of output and its result in the result file: the file stands.
      R"toml([[commands]]
name = "loud-file"
argv = ['sh', '-c', 'head -c 17000000 /dev/zero | tr "\0" x; echo "{\"status\": \"pass\", \"latency_ms\": [2.0]}" > "$ACCELMATRIX_RESULT_FILE"']
backend = "cpu"
timeout_s = 30
)toml");

  // Numbers of this test process for the escaping sleeps (a concurrent run of this test by
  // another build has its own), and where the trapping command says it was let finish.
  const std::string escape_pass = std::to_string(40000 + (::getpid() % 20000) * 2);
  const std::string escape_timeout = std::to_string(40001 + (::getpid() % 20000) * 2);
  const auto flush_mark = dir / "flushed";
  {
    std::string text = read_file(plan);
    for (const auto& [from, to] : {std::pair<std::string, std::string>{"@ESCAPE_PASS@", escape_pass},
                                   {"@ESCAPE_TIMEOUT@", escape_timeout},
                                   {"@FLUSH_MARK@", flush_mark.string()}}) {
      for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
        text.replace(at, from.size(), to);
      }
    }
    write_file(plan, text);
  }
  Process serve = start_serve(dir, plan, db);
  const std::string ep = wait_endpoint(dir / "endpoint", serve);
  ASSERT_FALSE(ep.empty());
  Process worker(worker_argv(ep, dir, /*allow_commands=*/true), dir / "worker.log");

  const int code = serve.wait(120s);
  ASSERT_GE(code, 0) << "coordinator did not finish\n" << serve.log() << worker.log();
  EXPECT_EQ(code, 1) << "crash/timeout/error jobs make exit code 1\n" << serve.log();

  std::map<std::string, std::vector<std::string>> by_model;
  for (auto& r : sql_rows(db, "SELECT model, status, reason, backend, precision, job_id FROM jobs")) {
    by_model[r[0]] = r;
  }
  ASSERT_EQ(by_model.size(), 15u) << serve.log();
  EXPECT_EQ(by_model["ext-model"][1], "pass") << by_model["ext-model"][2] << "\n" << worker.log();
  EXPECT_EQ(by_model["ext-model"][3], "cpu");
  EXPECT_EQ(by_model["ext-model"][4], "f16");
  EXPECT_EQ(by_model["py-pass"][1], "pass") << by_model["py-pass"][2];
  EXPECT_EQ(by_model["py-pass"][4], "external");
  EXPECT_EQ(by_model["segv"][1], "crash");
  EXPECT_NE(by_model["segv"][2].find("SIGSEGV"), std::string::npos) << by_model["segv"][2];
  EXPECT_EQ(by_model["hang"][1], "timeout") << by_model["hang"][2];
  EXPECT_EQ(by_model["garbage"][1], "error");
  EXPECT_NE(by_model["garbage"][2].find("no line of its stdout starts with '{'"), std::string::npos)
      << by_model["garbage"][2];
  EXPECT_EQ(by_model["bad-schema"][1], "error");
  EXPECT_NE(by_model["bad-schema"][2].find("latency_ms[1]: expected a finite number > 0"), std::string::npos)
      << by_model["bad-schema"][2];
  EXPECT_EQ(by_model["exit3"][1], "error");
  EXPECT_NE(by_model["exit3"][2].find("command exited with code 3"), std::string::npos) << by_model["exit3"][2];
  EXPECT_EQ(by_model["missing"][1], "error");
  EXPECT_NE(by_model["missing"][2].find("cannot start"), std::string::npos) << by_model["missing"][2];
  EXPECT_EQ(by_model["TinyLlama-1.1B"][1], "pass") << by_model["TinyLlama-1.1B"][2];
  EXPECT_EQ(by_model["bg-holds-stdout"][1], "pass") << by_model["bg-holds-stdout"][2];
  EXPECT_EQ(by_model["loud-file"][1], "pass") << by_model["loud-file"][2];
  EXPECT_EQ(by_model["escape-pass"][1], "pass") << by_model["escape-pass"][2];
  EXPECT_EQ(by_model["escape-timeout"][1], "timeout") << by_model["escape-timeout"][2];
  for (const std::string& leftover : {escape_pass, escape_timeout}) {
    EXPECT_EQ(pid_with_argument("sleep " + leftover + " "), -1) << "sleep " << leftover << " outlived its job";
  }
  // The time limit's SIGTERM reaches the command, which gets its grace to finish.
  EXPECT_EQ(by_model["term-flushes"][1], "timeout") << by_model["term-flushes"][2];
  EXPECT_EQ(read_file(flush_mark), "flushed\n");

  // The stored metrics: the pass script's latency, throughput and what it saw of its device.
  const auto metrics_of = [&](const std::string& model) {
    auto rows = sql_rows(db, "SELECT a.metrics_json FROM attempts a JOIN jobs j ON a.job_id = j.job_id "
                             "WHERE j.model = '" + model + "'");
    return rows.empty() ? nlohmann::json() : nlohmann::json::parse(rows[0][0], nullptr, false);
  };
  const auto m = metrics_of("ext-model");
  ASSERT_TRUE(m.is_object()) << serve.log();
  EXPECT_DOUBLE_EQ(m["latency_ms"]["median"].get<double>(), 3.0);
  EXPECT_EQ(m["latency_ms"]["count"].get<int>(), 3);
  EXPECT_DOUBLE_EQ(m["throughput"]["samples_per_s"].get<double>(), 120.0);
  EXPECT_EQ(m["notes"], "device=cpu:0");
  EXPECT_EQ(m["command"]["name"], "sh-pass");
  EXPECT_DOUBLE_EQ(metrics_of("py-pass")["accuracy"]["nmse"].get<double>(), 1e-7);
  EXPECT_GE(metrics_of("py-pass")["memory"]["peak_rss_bytes"].get<int64_t>(), int64_t{160} << 20);
  EXPECT_GE(metrics_of("py-pass")["process"]["peak_rss_bytes"].get<int64_t>(), int64_t{160} << 20);
  EXPECT_EQ(by_model["wrapped"][1], "pass") << by_model["wrapped"][2];
  EXPECT_GE(metrics_of("wrapped")["memory"]["peak_rss_bytes"].get<int64_t>(), int64_t{160} << 20);
  // metrics.command on every command result, those the runner could not write included.
  EXPECT_EQ(metrics_of("hang")["command"]["name"], "hang") << metrics_of("hang").dump();
  EXPECT_FALSE(metrics_of("hang")["command"].contains("exit_code"));
  EXPECT_EQ(metrics_of("segv")["command"]["signal"], SIGSEGV) << metrics_of("segv").dump();
  EXPECT_LT(metrics_of("bg-holds-stdout")["process"]["wall_s"].get<double>(), 10.0);
  const auto llama = metrics_of("TinyLlama-1.1B");
  EXPECT_DOUBLE_EQ(llama["throughput"]["tokens_per_s"].get<double>(), 18710.96);
  EXPECT_EQ(llama["latency_ms"]["count"].get<int>(), 5);
  // The log tail keeps the command's stdout and stderr.
  auto tail = sql_rows(db, "SELECT a.log_tail FROM attempts a JOIN jobs j ON a.job_id = j.job_id WHERE j.model = 'ext-model'");
  ASSERT_FALSE(tail.empty());
  EXPECT_NE(tail[0][0].find("bench starting in"), std::string::npos) << tail[0][0];
  EXPECT_NE(tail[0][0].find("this line is noise"), std::string::npos) << tail[0][0];

  // The report: command cells under the backend they declared, with their latency and no
  // speed-up (no built-in cpu f32 job of their model ran).
  int rc = -1;
  const auto out = dir / "report.json";
  const std::string log = run_capture({coordinator_binary().string(), "report", "--db", db.string(),
                                       "--format", "json", "--output", out.string()}, &rc);
  ASSERT_EQ(rc, 0) << log;
  const auto report = nlohmann::json::parse(read_file(out), nullptr, false);
  ASSERT_TRUE(report.is_object());
  bool found = false;
  for (const auto& cell : report["matrix"]) {
    if (cell["model"] != "ext-model") continue;
    found = true;
    EXPECT_EQ(cell["backend"], "cpu");
    EXPECT_EQ(cell["precision"], "f16");
    EXPECT_EQ(cell["command"], "sh-pass");
    EXPECT_TRUE(cell["speedup"].is_null()) << cell.dump();
  }
  EXPECT_TRUE(found) << report.dump(1);
}

// A command job whose tree includes a process in a session of its own (setsid), run by a real
// worker; `kill_what` kills the worker or the job's runner in the middle of it. Neither the
// command's own process nor the escaped one may outlive that: the killed worker's runner gets
// SIGTERM from the kernel and ends the tree; a killed runner's orphans go to the worker, which
// ends them when it sees the job end.
void expect_no_command_process_outlives(const char* name, bool kill_runner) {
  ScratchDir dir(name);
  const auto db = dir / "d.db";
  // Numbers of this test process's sleeps, so that another build's run of the test has its own.
  const int base = 20000 + (((::getpid() % 5000) * 4) + (kill_runner ? 2 : 0));
  const std::string escaped = std::to_string(base);
  const std::string own = std::to_string(base + 1);
  const auto plan = write_file(dir / "cmd.toml",
      "[plan]\nname = \"cmd-killed\"\nmode = \"accuracy\"\n\n"
      "[[commands]]\nname = \"escapes\"\nargv = ['sh', '-c', 'setsid sleep " + escaped +
      " >/dev/null 2>&1 </dev/null & sleep " + own + "']\nbackend = \"cpu\"\ntimeout_s = 120\n");
  Process serve = start_serve(dir, plan, db);
  const std::string ep = wait_endpoint(dir / "endpoint", serve);
  ASSERT_FALSE(ep.empty());
  Process worker(worker_argv(ep, dir, /*allow_commands=*/true), dir / "worker.log");
  ASSERT_TRUE(wait_until([&] {
    return pid_with_argument("sleep " + escaped + " ") > 0 && pid_with_argument("sleep " + own + " ") > 0;
  }, 30s)) << worker.log();

  if (kill_runner) {
    const pid_t runner = pid_with_argument("--run-job " + (dir / "state").string());
    ASSERT_GT(runner, 0) << worker.log();
    ASSERT_EQ(::kill(runner, SIGKILL), 0);
  } else {
    worker.kill_hard();
  }
  EXPECT_TRUE(wait_until([&] {
    return pid_with_argument("sleep " + escaped + " ") < 0 && pid_with_argument("sleep " + own + " ") < 0;
  }, 10s)) << "still running: escaped " << pid_with_argument("sleep " + escaped + " ") << ", the command's own "
           << pid_with_argument("sleep " + own + " ") << "\n" << worker.log();
  if (kill_runner) {
    // The job ended as a killed process does, and the worker went on to stop cleanly with the run.
    EXPECT_TRUE(wait_until([&] { return !sql_rows(db, "SELECT 1 FROM attempts WHERE status = 'oom'").empty(); }, 10s))
        << worker.log();
    EXPECT_EQ(worker.wait(20s), 0) << worker.log();
  }
  serve.kill_hard();
  worker.kill_hard();
}

TEST(CommandRun, AWorkerKilledMidJobLeavesNoProcessOfItsCommandRunning) {
  expect_no_command_process_outlives("command-worker-killed", /*kill_runner=*/false);
}

TEST(CommandRun, ARunnerKilledMidJobLeavesNoProcessOfItsCommandRunning) {
  expect_no_command_process_outlives("command-runner-killed", /*kill_runner=*/true);
}

// A worker whose state dir cannot hold a job (here its scratch dir is a file; a full, read-only
// or deleted dir alike) stored every job it was given as `error`, for good, at the speed of the
// queue. It now reports none of them, stops with exit 4, and the job runs on another worker.
TEST(CommandRun, AStateDirThatCannotHoldAJobStopsTheWorkerAndTheJobRunsElsewhere) {
  ScratchDir dir("command-state-broken");
  const auto db = dir / "d.db";
  const auto plan = write_file(dir / "cmd.toml",
      "[plan]\nname = \"cmd-state\"\nmode = \"accuracy\"\n\n"
      "[[commands]]\nname = \"quick\"\nargv = ['sh', '-c', 'echo \"{\\\"status\\\": \\\"pass\\\"}\"']\n"
      "backend = \"cpu\"\ntimeout_s = 30\n");
  Process serve = start_serve(dir, plan, db);
  const std::string ep = wait_endpoint(dir / "endpoint", serve);
  ASSERT_FALSE(ep.empty());
  std::filesystem::create_directories(dir / "state");
  write_file(dir / "state" / "scratch-cmd-w", "a file where the worker keeps its jobs' files\n");
  Process broken(worker_argv(ep, dir, /*allow_commands=*/true), dir / "broken.log");
  EXPECT_EQ(broken.wait(30s), 4) << broken.log();
  EXPECT_NE(broken.log().find("cannot create scratch dir"), std::string::npos) << broken.log();
  EXPECT_EQ(sql_rows(db, "SELECT 1 FROM attempts WHERE status = 'error'").size(), 0u) << serve.log();

  Process good({worker_binary().string(), "--coordinator", ep, "--id", "good-w", "--state-dir",
                (dir / "good").string(), "--heartbeat-ms", "100", "--liveness", "5", "--allow-commands"},
               dir / "good.log");
  EXPECT_EQ(serve.wait(60s), 0) << serve.log() << good.log();
  const auto rows = sql_rows(db, "SELECT status FROM jobs WHERE model = 'quick'");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0][0], "pass") << serve.log();
  good.kill_hard();
}

// A command job skipped for want of a worker that runs commands stays skipped in that run; the
// rerun with --allow-commands said only "already done", and the skip's own advice seemed to do
// nothing. It now says how to run them.
TEST(CommandRun, ARerunOfARunWithSkippedCommandsSaysHowToRunThem) {
  ScratchDir dir("command-skipped-rerun");
  const auto db = dir / "d.db";
  const auto plan = write_file(dir / "cmd.toml",
      "[plan]\nname = \"cmd-skip\"\nmode = \"accuracy\"\n\n"
      "[[commands]]\nname = \"quick\"\nargv = ['true']\nbackend = \"cpu\"\ntimeout_s = 30\n");
  const std::vector<std::string> run = {coordinator_binary().string(), "run", "--plan", plan.string(), "--db",
                                        db.string(), "--heartbeat-ms", "100"};
  int code = -1;
  std::string out = run_capture(run, &code, 120s);
  ASSERT_EQ(code, 0) << out;
  EXPECT_NE(out.find("--allow-commands"), std::string::npos) << out;
  std::vector<std::string> again = run;
  again.push_back("--allow-commands");
  out = run_capture(again, &code, 120s);
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("1 job(s) stay skipped; to run them with other workers or flags, start a new run (--run NAME)"),
            std::string::npos)
      << out;
}

// A worker whose own binary is gone (an uninstall, a build dir cleaned under it) cannot start
// any job: it stopped with exit 4 once, then a fix for disk-filling jobs made it settle every
// job it could lease as `error` in milliseconds. It stops, and the jobs run elsewhere.
TEST(CommandRun, AWorkerThatCannotStartItsJobProcessStopsAndTheJobsRunElsewhere) {
  ScratchDir dir("worker-binary-gone");
  const auto db = dir / "d.db";
  const auto plan = write_file(dir / "p.toml", "[plan]\nname = \"gone\"\nmode = \"accuracy\"\n\n"
                                                "[[models]]\nname = \"selftest:pass\"\nbatch = [1, 2, 3]\n");
  Process serve = start_serve(dir, plan, db);
  const std::string ep = wait_endpoint(dir / "endpoint", serve);
  ASSERT_FALSE(ep.empty());
  const auto copy = dir / "amw";
  std::filesystem::copy_file(worker_binary(), copy);
  std::vector<std::string> argv = worker_argv(ep, dir, /*allow_commands=*/false);
  argv[0] = copy.string();
  Process doomed(argv, dir / "doomed.log");
  // Removed once it runs from it (the process keeps its image; its job processes cannot start).
  ASSERT_TRUE(wait_until([&] {
    std::error_code ec;
    return std::filesystem::read_symlink("/proc/" + std::to_string(doomed.pid()) + "/exe", ec).string().find("amw") !=
           std::string::npos;
  }, 20s));
  std::filesystem::remove(copy);
  EXPECT_EQ(doomed.wait(60s), 4) << doomed.log();
  EXPECT_EQ(sql_rows(db, "SELECT 1 FROM attempts WHERE status = 'error'").size(), 0u) << doomed.log();
  Process good({worker_binary().string(), "--coordinator", ep, "--id", "good-w", "--state-dir",
                (dir / "good").string(), "--heartbeat-ms", "100", "--liveness", "5"},
               dir / "good.log");
  EXPECT_EQ(serve.wait(60s), 0) << serve.log() << good.log();
  EXPECT_EQ(sql_rows(db, "SELECT 1 FROM jobs WHERE status = 'pass'").size(), 3u) << serve.log();
  good.kill_hard();
}

TEST(CommandRun, AWorkerWithoutAllowCommandsNeverGetsOne) {
  ScratchDir dir("command-refused");
  const auto db = dir / "d.db";
  const auto plan = write_file(dir / "cmd.toml",
      "[plan]\nname = \"cmdref\"\nmode = \"accuracy\"\n\n"
      "[[models]]\nname = \"selftest:pass\"\ntimeout_s = 30\n\n"
      "[[commands]]\nname = \"touch\"\nargv = [\"touch\", \"" + (dir / "ran").string() + "\"]\nbackend = \"cpu\"\ntimeout_s = 30\n");
  Process serve = start_serve(dir, plan, db);
  const std::string ep = wait_endpoint(dir / "endpoint", serve);
  ASSERT_FALSE(ep.empty());
  Process worker(worker_argv(ep, dir, /*allow_commands=*/false), dir / "worker.log");

  const int code = serve.wait(120s);
  ASSERT_GE(code, 0) << serve.log();
  EXPECT_EQ(code, 0) << "a skipped job is a finding, not a failure\n" << serve.log();
  auto rows = sql_rows(db, "SELECT status, reason, attempts FROM jobs WHERE model = 'touch'");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0][0], "skipped");
  EXPECT_NE(rows[0][1].find("--allow-commands"), std::string::npos) << rows[0][1];
  EXPECT_EQ(rows[0][2], "0");
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM attempts a JOIN jobs j ON a.job_id = j.job_id WHERE j.model = 'touch'"), 0);
  EXPECT_FALSE(std::filesystem::exists(dir / "ran"));
  EXPECT_EQ(sql_rows(db, "SELECT status FROM jobs WHERE model = 'selftest:pass'")[0][0], "pass");
}

}  // namespace
}  // namespace am::testing
