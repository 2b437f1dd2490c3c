// Issue 13, items 2, 5 and 9 against real processes over loopback TCP:
// - exit codes CI can trust: 0 accepted, 1 failed jobs (--fail-on chooses), 2 usage (CLI11's
//   codes and unknown subcommands), 3 interrupted, 4 lost jobs or infrastructure;
// - endpoints validated on run, serve and the worker (which exits 2 instead of retrying forever);
// - one coordinator per database: a second one is refused at once, naming the holder; a dead
//   holder is taken over; `report` reads while a coordinator holds the database.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <thread>

#include "tests/integration/run_helpers.h"

namespace am::testing {
namespace {

// How long a command that must be refused before it starts anything may take (process start,
// plan load; generous for a loaded 2-core machine).
constexpr auto kPromptExit = 15s;

bool has(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

// Runs argv to completion; returns the exit code, with stdout+stderr in *log.
int run_logged(const ScratchDir& dir, const std::string& name, const std::vector<std::string>& argv, std::string* log,
               std::chrono::milliseconds timeout = kPromptExit) {
  Process p(argv, dir / (name + ".log"));
  const int code = p.wait(timeout);
  *log = p.log();
  return code;
}

std::vector<std::string> with(std::vector<std::string> argv, const std::vector<std::string>& more) {
  argv.insert(argv.end(), more.begin(), more.end());
  return argv;
}

// Two bert-tiny jobs that measure for 60 s under a 1 s time limit: they end `timeout`, a test
// failure (is_test_failure), deterministically and without diagnostic models (plans do not
// accept them). (A memory limit is no substitute: under a 16 MiB limit a job sometimes ends
// `oom` at once and sometimes hangs until its time limit.)
std::filesystem::path write_failing_plan(const ScratchDir& dir, const std::string& name) {
  return write_bert_plan(dir / (name + ".toml"), name, 60.0, "[16, 24]", "[\"f32\"]", "perf",
                         "timeout_s = 1\nthreads = 1\n");
}

// ---------------------------------------------------------------------------------------------
// Item 5: exit codes

TEST(RunExitCodes, RunWhoseJobsAllFailExitsOneAndFailOnChangesIt) {
  ScratchDir dir("exit-fail");
  const auto db = dir / "f.db";
  const auto plan = write_failing_plan(dir, "allfail");
  std::string log;
  const std::vector<std::string> run = {coordinator_binary().string(), "run", "--plan", plan.string(), "--db",
                                        db.string(), "--catalog", catalog_dir(), "--heartbeat-ms", "100"};
  ASSERT_EQ(run_logged(dir, "run1", run, &log, 120s), 1) << log;
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM jobs WHERE status = 'timeout'"), 2) << log;
  EXPECT_TRUE(has(log, "exit 1: a job ended in a --fail-on status")) << log;

  // The same finished run judged by another rule: nothing runs again, only the verdict changes.
  EXPECT_EQ(run_logged(dir, "run2", with(run, {"--fail-on", "fail"}), &log, 120s), 0) << log;
  EXPECT_EQ(run_logged(dir, "run3", with(run, {"--fail-on", "timeout"}), &log, 120s), 1) << log;
  // ... and says why, as the first run did.
  EXPECT_TRUE(has(log, "2 timeout; exit 1: a job ended in a --fail-on status (timeout)")) << log;
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM attempts"), 2);

  // A reader that stops early (`| head`, here `| true`, gone before the first write) is no
  // failure of the report: exit 0 and no error (was exit 4, "broken pipe").
  const std::string pipeline = "set -o pipefail; '" + coordinator_binary().string() + "' report --db '" + db.string() +
                               "' --format html | true";
  EXPECT_EQ(run_logged(dir, "piped", {"/bin/bash", "-c", pipeline}, &log), 0) << log;
  EXPECT_FALSE(has(log, "error:")) << log;
  // The same through `-o /dev/stdout` (written straight through to the pipe): exit 0 (was 4).
  const std::string through = "set -o pipefail; '" + coordinator_binary().string() + "' report --db '" +
                              db.string() + "' --format html -o /dev/stdout | true";
  EXPECT_EQ(run_logged(dir, "piped-o", {"/bin/bash", "-c", through}, &log), 0) << log;
  EXPECT_FALSE(has(log, "error:")) << log;
  // A full device is still an error.
  EXPECT_EQ(run_logged(dir, "full", {coordinator_binary().string(), "report", "--db", db.string(), "--format", "html",
                                     "-o", "/dev/full"}, &log),
            4) << log;
}

TEST(RunExitCodes, ServeExitWhenDoneFollowsTheSameRule) {
  ScratchDir dir("exit-serve");
  const auto db = dir / "s.db";
  const auto plan = write_failing_plan(dir, "servefail");
  Process serve(serve_args(plan, db, "tcp://127.0.0.1:*", dir / "ep"), dir / "serve.log");
  const std::string ep = wait_for_endpoint(dir / "ep");
  ASSERT_FALSE(ep.empty()) << serve.log();
  Process worker(worker_args(ep, "w", dir), dir / "w.log");
  ASSERT_EQ(serve.wait(120s), 1) << serve.log();
  EXPECT_EQ(worker.wait(15s), 0) << worker.log();

  std::string log;
  EXPECT_EQ(run_logged(dir, "again", with(serve_args(plan, db, "tcp://127.0.0.1:*", dir / "ep2"),
                                          {"--fail-on", "fail,crash"}), &log),
            0) << log;
}

TEST(RunExitCodes, AnUnknownFailOnStatusIsAUsageErrorBeforeAnythingStarts) {
  ScratchDir dir("exit-failon");
  const auto db = dir / "u.db";
  const auto plan = write_failing_plan(dir, "failon");
  std::string log;
  EXPECT_EQ(run_logged(dir, "serve", with(serve_args(plan, db, "tcp://127.0.0.1:*", dir / "ep"),
                                          {"--fail-on", "fail,bogus"}), &log),
            2) << log;
  EXPECT_TRUE(has(log, "unknown status 'bogus'")) << log;
  EXPECT_TRUE(has(log, "pass, degraded, fail")) << log;
  EXPECT_FALSE(std::filesystem::exists(db)) << "nothing may start on a usage error";
  // An empty list is not the default list said another way (it was taken silently).
  EXPECT_EQ(run_logged(dir, "empty", with(serve_args(plan, db, "tcp://127.0.0.1:*", dir / "ep"), {"--fail-on", ""}), &log),
            2) << log;
  EXPECT_TRUE(has(log, "--fail-on: an empty list")) << log;
  EXPECT_FALSE(std::filesystem::exists(db));
}

TEST(RunExitCodes, AStoppedServeExitsThree) {
  ScratchDir dir("exit-stop");
  const auto db = dir / "i.db";
  const auto plan = write_failing_plan(dir, "stopped");
  Process serve(serve_args(plan, db, "tcp://127.0.0.1:*", dir / "ep"), dir / "serve.log");
  ASSERT_FALSE(wait_for_endpoint(dir / "ep").empty()) << serve.log();
  serve.terminate();
  EXPECT_EQ(serve.wait(kPromptExit), 3) << serve.log();
  EXPECT_TRUE(has(serve.log(), "serve stopped before the run was complete (0 of ")) << serve.log();
  EXPECT_TRUE(has(serve.log(), "again to resume")) << serve.log();
}

TEST(RunExitCodes, ALostJobExitsFour) {
  ScratchDir dir("exit-lost");
  const auto db = dir / "l.db";
  // One job of about 20 s; a job is lost after its lease failed on one worker.
  const auto plan = write_bert_plan(dir / "lost.toml", "lost", 20.0, "[16]", "[\"f32\"]", "perf");
  Process serve(with(serve_args(plan, db, "tcp://127.0.0.1:*", dir / "ep"), {"--max-attempts", "1"}),
                dir / "serve.log");
  const std::string ep = wait_for_endpoint(dir / "ep");
  ASSERT_FALSE(ep.empty()) << serve.log();
  const auto vlog = dir / "victim.log";
  auto victim = std::make_unique<Process>(worker_args(ep, "victim", dir), vlog);
  // Killed only once it answered the lease (its "started" PROGRESS is sent before it logs
  // "running"): a lease the worker never answered costs the worker, not the job (PROTOCOL §5.5),
  // and would leave the job queued instead of lost.
  ASSERT_TRUE(wait_until([&] {
    for (const auto& row : sql_rows(db, "SELECT job_id, attempt FROM attempts WHERE state = 'leased'")) {
      if (read_file(vlog).find("running " + row[0] + "#" + row[1]) != std::string::npos) return true;
    }
    return false;
  }, 60s)) << serve.log();
  std::this_thread::sleep_for(300ms);   // the PROGRESS has reached the coordinator by now
  victim->kill_hard();
  EXPECT_EQ(serve.wait(60s), 4) << serve.log();
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM jobs WHERE status = 'lost'"), 1) << serve.log();
  EXPECT_TRUE(has(serve.log(), "exit 4: a job was lost")) << serve.log();
}

TEST(RunExitCodes, UnknownSubcommandIsNamedAndExitsTwo) {
  ScratchDir dir("exit-usage");
  std::string log;
  EXPECT_EQ(run_logged(dir, "frob", {coordinator_binary().string(), "frobnicate"}, &log), 2) << log;
  EXPECT_TRUE(has(log, "unknown subcommand 'frobnicate'")) << log;
  EXPECT_TRUE(has(log, "run, serve, report, compare, plan, keys")) << log;
  EXPECT_FALSE(has(log, "A subcommand is required")) << log;

  EXPECT_EQ(run_logged(dir, "serv", {coordinator_binary().string(), "serv", "--plan", "x"}, &log), 2) << log;
  EXPECT_TRUE(has(log, "did you mean 'serve'")) << log;
}

TEST(RunExitCodes, CliParseErrorsExitTwoNotCli11Codes) {
  ScratchDir dir("exit-cli11");
  const std::string am = coordinator_binary().string();
  std::string log;
  // Before: 106 (required), 105 (validation), 109 (extras), 114 (argument mismatch).
  EXPECT_EQ(run_logged(dir, "required", {am, "report"}, &log), 2) << log;
  EXPECT_EQ(run_logged(dir, "validation", {am, "run", "--workers", "0"}, &log), 2) << log;
  EXPECT_EQ(run_logged(dir, "extras", {am, "plan", "a.toml", "b.toml"}, &log), 2) << log;
  EXPECT_EQ(run_logged(dir, "mismatch", {am, "run", "--workers"}, &log), 2) << log;
  EXPECT_EQ(run_logged(dir, "subless", {am}, &log), 2) << log;
  EXPECT_EQ(run_logged(dir, "worker", {worker_binary().string(), "--slots", "0"}, &log), 2) << log;
  EXPECT_TRUE(has(log, "error: accelmatrix-worker: --slots")) << log;

  // A mistyped option is named, with the option meant and where the help is.
  EXPECT_EQ(run_logged(dir, "typo", {am, "run", "--plna", "x.toml"}, &log), 2) << log;
  EXPECT_TRUE(has(log, "error: accelmatrix run: unknown option '--plna' (did you mean '--plan'?)")) << log;
  EXPECT_TRUE(has(log, "see 'accelmatrix run --help'")) << log;
  EXPECT_EQ(run_logged(dir, "wtypo", {worker_binary().string(), "--slotz", "2"}, &log), 2) << log;
  EXPECT_TRUE(has(log, "unknown option '--slotz' (did you mean '--slots'?)")) << log;
  EXPECT_EQ(run_logged(dir, "emptyrun", {am, "plan", "x.toml", "--run", ""}, &log), 2) << log;
  EXPECT_TRUE(has(log, "--run: an empty run id")) << log;
  EXPECT_EQ(run_logged(dir, "badrun", {am, "run", "--run", "a b", "--plan", "x.toml"}, &log), 2) << log;
  EXPECT_TRUE(has(log, "run id 'a b' is not valid")) << log;
  EXPECT_EQ(run_logged(dir, "required2", {am, "report"}, &log), 2) << log;
  EXPECT_TRUE(has(log, "error: accelmatrix report: --db is required")) << log;

  EXPECT_EQ(run_logged(dir, "help", {am, "--help"}, &log), 0) << log;
  EXPECT_TRUE(has(log, "Exit codes")) << log;
  EXPECT_TRUE(has(log, "4  a job was lost")) << log;
  EXPECT_EQ(run_logged(dir, "runhelp", {am, "run", "--help"}, &log), 0) << log;
  EXPECT_TRUE(has(log, "--fail-on")) << log;
  EXPECT_TRUE(has(log, "Exit codes")) << log;
}

// ---------------------------------------------------------------------------------------------
// Item 9: endpoints

TEST(Endpoints, ServeAndRunRefuseAPortOutOfRangeAtOnce) {
  ScratchDir dir("ep-bind");
  const auto plan = write_failing_plan(dir, "badbind");
  std::string log;
  EXPECT_EQ(run_logged(dir, "serve", serve_args(plan, dir / "a.db", "tcp://127.0.0.1:99999", dir / "ep"), &log), 2)
      << log;
  EXPECT_TRUE(has(log, "port 99999 is outside 1-65535")) << log;
  EXPECT_TRUE(has(log, "expected tcp://HOST:PORT")) << log;
  EXPECT_FALSE(std::filesystem::exists(dir / "ep"));

  EXPECT_EQ(run_logged(dir, "run", {coordinator_binary().string(), "run", "--plan", plan.string(), "--db",
                                    (dir / "b.db").string(), "--catalog", catalog_dir(), "--bind", "garbage"},
                       &log),
            2) << log;
  EXPECT_TRUE(has(log, "'garbage'")) << log;
  EXPECT_TRUE(has(log, "expected tcp://HOST:PORT")) << log;
}

TEST(Endpoints, APortInUseExitsFourAndLeavesNoNewDatabaseBehind) {
  ScratchDir dir("ep-busy");
  const auto plan = write_failing_plan(dir, "busy");
  // A listening socket of this test holds the port.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const std::string bind = "tcp://127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  std::string log;
  EXPECT_EQ(run_logged(dir, "serve", serve_args(plan, dir / "a.db", bind, dir / "ep"), &log), 4) << log;
  ::close(fd);
  EXPECT_TRUE(has(log, "binding " + bind)) << log;
  EXPECT_FALSE(std::filesystem::exists(dir / "a.db")) << log;
  EXPECT_FALSE(std::filesystem::exists(dir / "ep")) << log;
}

// libzmq aborts when it cannot make a descriptor for itself: with `ulimit -n 12`, `run` died of
// SIGABRT (exit 134). Now the coordinator and the worker say so and exit 4, before any socket.
TEST(Endpoints, TooFewOpenFilesAllowedExitsFourSayingSoInsteadOfAborting) {
  ScratchDir dir("few-fds");
  const auto plan = write_failing_plan(dir, "fds");
  const std::string limit = "ulimit -n 12 && exec \"$0\" \"$@\"";
  std::string log;
  EXPECT_EQ(run_logged(dir, "run", {"/bin/sh", "-c", limit, coordinator_binary().string(), "run", "--plan",
                                    plan.string(), "--db", (dir / "a.db").string(), "--catalog", catalog_dir(), "-q"},
                       &log),
            4)
      << log;
  EXPECT_TRUE(has(log, "may open only 12 files")) << log;
  EXPECT_EQ(run_logged(dir, "worker", {"/bin/sh", "-c", limit, worker_binary().string(), "--coordinator",
                                       "tcp://127.0.0.1:9", "--state-dir", (dir / "state").string()},
                       &log),
            4)
      << log;
  EXPECT_TRUE(has(log, "may open only 12 files")) << log;
}

// Two workers on one state dir took one id and replaced each other's session over and over
// (jobs ran twice). Started together on a new dir they end with one id, and one of them stops.
TEST(WorkerIdentity, TwoWorkersOfOneStateDirMakeOneIdAndTheSecondStops) {
  ScratchDir dir("worker-twins");
  const auto state = dir / "shared";
  // Nothing listens there: both keep retrying until stopped.
  const std::vector<std::string> args = {worker_binary().string(), "--coordinator", "tcp://127.0.0.1:9",
                                         "--state-dir", state.string()};
  Process a(args, dir / "a.log");
  Process b(args, dir / "b.log");
  ASSERT_TRUE(wait_until([&] { return !a.running() || !b.running(); }, 20s)) << a.log() << b.log();
  std::this_thread::sleep_for(300ms);
  Process& stopped = a.running() ? b : a;
  Process& kept = a.running() ? a : b;
  EXPECT_TRUE(kept.running()) << a.log() << b.log();
  EXPECT_EQ(stopped.wait(5s), 2) << stopped.log();
  EXPECT_TRUE(has(stopped.log(), "is already running from state dir")) << stopped.log();
  EXPECT_TRUE(has(stopped.log(), "give each worker its own --state-dir")) << stopped.log();
  const std::string id = read_file(state / "worker-id");
  ASSERT_FALSE(id.empty());
  EXPECT_TRUE(has(stopped.log(), "worker '" + id.substr(0, id.size() - 1) + "'")) << id << stopped.log();
  // A third, later, the same; with an id of its own it may share the dir.
  std::string log;
  EXPECT_EQ(run_logged(dir, "third", args, &log, 20s), 2) << log;
  // A worker-id that is no file (a directory) makes the state dir unusable: exit 4.
  std::filesystem::create_directories(dir / "odd" / "worker-id");
  EXPECT_EQ(run_logged(dir, "odd", {worker_binary().string(), "--coordinator", "tcp://127.0.0.1:9", "--state-dir",
                                    (dir / "odd").string()}, &log, 20s), 4) << log;
  EXPECT_TRUE(has(log, "not a regular file")) << log;
  Process other(with(args, {"--id", "other"}), dir / "other.log");
  std::this_thread::sleep_for(500ms);
  EXPECT_TRUE(other.running()) << other.log();
  other.terminate();
  kept.terminate();
  EXPECT_EQ(kept.wait(10s), 0) << kept.log();
}

// An id or tag the coordinator drops as malformed made the worker reconnect for ever (and name
// files after it in its state dir); an id with '/' exited 4 as if the state dir were unusable.
TEST(WorkerIdentity, AnIdOrTagTheProtocolRefusesIsAUsageErrorNamingTheFlag) {
  ScratchDir dir("worker-bad-id");
  const std::vector<std::string> base = {worker_binary().string(), "--coordinator", "tcp://127.0.0.1:9",
                                         "--state-dir", (dir / "state").string()};
  const std::pair<std::vector<std::string>, std::string> cases[] = {
      {{"--id", " "}, "--id ' ': must be printable ASCII without whitespace"},
      {{"--id", "\xc3\xa9"}, "must be printable ASCII without whitespace"},
      {{"--id", std::string(200, 'y')}, "id of 200 bytes exceeds the limit of 128"},
      {{"--id", "a/b"}, "--id 'a/b': must not contain '/'"},
      {{"--tag", "a b=c"}, "--tag 'a b=c': its key must be printable ASCII without whitespace"},
      {{"--tag", "k=\xff"}, "its value is not valid UTF-8"},
  };
  for (const auto& [flags, expected] : cases) {
    std::string log;
    EXPECT_EQ(run_logged(dir, "w", with(base, flags), &log, 20s), 2) << flags[1] << "\n" << log;
    EXPECT_TRUE(has(log, expected)) << log;
  }
  // Nothing was named after a refused id.
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir / "state", ec)) {
    ADD_FAILURE() << "left in the state dir: " << entry.path();
  }
}

// A plan's names are quoted in its errors: an escape sequence in one reached the terminal of
// whoever checked the plan (clear the screen, recolour, retitle).
TEST(RunExitCodes, APlansEscapeSequencesReachNoTerminalThroughItsErrors) {
  ScratchDir dir("plan-escapes");
  const auto plan = write_file(dir / "esc.toml",
                               "[plan]\nname = \"esc\"\n[[models]]\nname = \"bert-tiny\\u001b[2J\"\n"
                               "tags = { \"gpu\\u001b[31m\" = \"a\" }\n");
  std::string log;
  EXPECT_EQ(run_logged(dir, "plan", {coordinator_binary().string(), "plan", plan.string(), "--catalog", catalog_dir()},
                       &log),
            2)
      << log;
  EXPECT_TRUE(has(log, "unknown model 'bert-tiny")) << log;
  EXPECT_EQ(log.find('\x1b'), std::string::npos) << log;
  EXPECT_EQ(run_logged(dir, "arg", {coordinator_binary().string(), "plan", "--frob\x1b[2J"}, &log), 2) << log;
  EXPECT_EQ(log.find('\x1b'), std::string::npos) << log;
}

TEST(Endpoints, AWorkerGivenAnEndpointThatCanNeverWorkExitsTwoInsteadOfRetrying) {
  ScratchDir dir("ep-worker");
  for (const std::string bad : {"tcp://127.0.0.1:99999", "garbage", "tcp://:80", "tcp://host:0"}) {
    std::string log;
    EXPECT_EQ(run_logged(dir, "w", worker_args(bad, "w", dir), &log), 2) << bad << "\n" << log;
    EXPECT_TRUE(has(log, "expected tcp://HOST:PORT")) << log;
  }
}

TEST(Endpoints, AWorkerReachesACoordinatorOverIpv6Loopback) {
  if (read_file("/proc/net/if_inet6").find(" lo\n") == std::string::npos) GTEST_SKIP() << "no IPv6 loopback";
  ScratchDir dir("ep-ipv6");
  const auto db = dir / "v6.db";
  const auto plan = write_bert_plan(dir / "v6.toml", "v6", 0.05, "[16]", "[\"f32\"]", "accuracy");
  Process serve(serve_args(plan, db, "tcp://[::1]:*", dir / "ep"), dir / "serve.log");
  const std::string ep = wait_for_endpoint(dir / "ep");
  ASSERT_TRUE(has(ep, "tcp://[::1]:")) << ep << serve.log();
  Process worker(worker_args(ep, "v6w", dir), dir / "w.log");
  EXPECT_EQ(serve.wait(120s), 0) << serve.log();
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM jobs WHERE status = 'pass'"), 1);
}

// ---------------------------------------------------------------------------------------------
// Item 2: one coordinator per database

TEST(OneCoordinatorPerDatabase, ASecondServeIsRefusedAtOnceNamingTheHolder) {
  ScratchDir dir("lock-two");
  const auto db = dir / "two.db";
  const auto plan = write_failing_plan(dir, "two");
  Process first(serve_args(plan, db, "tcp://127.0.0.1:*", dir / "ep1"), dir / "first.log");
  const std::string ep = wait_for_endpoint(dir / "ep1");
  ASSERT_FALSE(ep.empty()) << first.log();

  std::string log;
  const auto started = std::chrono::steady_clock::now();
  EXPECT_EQ(run_logged(dir, "second", serve_args(plan, db, "tcp://127.0.0.1:*", dir / "ep2"), &log), 4) << log;
  EXPECT_LT(std::chrono::steady_clock::now() - started, kPromptExit);
  EXPECT_TRUE(has(log, "in use by another coordinator")) << log;
  EXPECT_TRUE(has(log, "pid " + std::to_string(first.pid()))) << log;
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  EXPECT_TRUE(has(log, std::string("on host ") + host)) << log;
  EXPECT_TRUE(has(log, "endpoint " + ep)) << log;
  EXPECT_TRUE(has(log, "since ")) << log;
  EXPECT_FALSE(has(log, "never leased")) << log;
  EXPECT_FALSE(std::filesystem::exists(dir / "ep2"));

  // `run` on the same database is refused the same way.
  EXPECT_EQ(run_logged(dir, "run", {coordinator_binary().string(), "run", "--plan", plan.string(), "--db",
                                    db.string(), "--catalog", catalog_dir()}, &log),
            4) << log;
  EXPECT_TRUE(has(log, "pid " + std::to_string(first.pid()))) << log;

  // `report` only reads: it works while the coordinator holds the database.
  EXPECT_EQ(run_logged(dir, "report", {coordinator_binary().string(), "report", "--db", db.string(), "--format",
                                       "json"}, &log),
            0) << log;
  EXPECT_TRUE(first.running());
  first.terminate();
  EXPECT_EQ(first.wait(kPromptExit), 3) << first.log();
}

TEST(OneCoordinatorPerDatabase, ADeadHoldersDatabaseIsTakenOverWithALogLine) {
  ScratchDir dir("lock-stale");
  const auto db = dir / "stale.db";
  const auto plan = write_bert_plan(dir / "stale.toml", "stale", 0.05, "[16]", "[\"f32\"]", "accuracy");
  auto crashed = std::make_unique<Process>(serve_args(plan, db, "tcp://127.0.0.1:*", dir / "ep1"),
                                           dir / "crashed.log");
  ASSERT_FALSE(wait_for_endpoint(dir / "ep1").empty()) << crashed->log();
  const pid_t dead_pid = crashed->pid();
  crashed->kill_hard();

  Process next(serve_args(plan, db, "tcp://127.0.0.1:*", dir / "ep2"), dir / "next.log");
  const std::string ep = wait_for_endpoint(dir / "ep2");
  ASSERT_FALSE(ep.empty()) << next.log();
  EXPECT_TRUE(has(next.log(), "taking over from pid " + std::to_string(dead_pid))) << next.log();
  Process worker(worker_args(ep, "w", dir), dir / "w.log");
  EXPECT_EQ(next.wait(120s), 0) << next.log();

  // A clean exit leaves nothing to take over.
  Process third(serve_args(plan, db, "tcp://127.0.0.1:*", dir / "ep3"), dir / "third.log");
  EXPECT_EQ(third.wait(60s), 0) << third.log();
  EXPECT_FALSE(has(third.log(), "taking over")) << third.log();
}

}  // namespace
}  // namespace am::testing
