// Issue 13, items 3, 4, 6 and 8 against real processes over loopback TCP:
// - resume without waiting: a clean stop releases the leases of jobs in flight (attempts
//   `interrupted`); a restart reclaims at once the leases of a killed run's local workers; a rerun
//   with nothing to do returns at once and leaves the run's "finished" time alone;
// - a plan is a plan: another plan under the same run id is refused (exit 2) unless --extend;
// - progress: one updating line on a terminal (NO_COLOR honoured), plain lines elsewhere;
//   -q/-v/--log-level after the subcommand;
// - the plan's time_budget_s: when it runs out no new job starts, the rest is `skipped`;
// - a damaged stored job spec: named in the report (which still shows every job), and settled
//   `error` when an extended run must read it back; it never refuses the run.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <fstream>
#include <iterator>
#include <memory>

#include <nlohmann/json.hpp>

#include "jobs/plan.h"
#include "tests/integration/run_helpers.h"

namespace am::testing {
namespace {

using Clock = std::chrono::steady_clock;

bool has(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// `accelmatrix run` in a process group of its own, as a shell runs a foreground job: signal()
// reaches the coordinator and its local workers together, as Ctrl-C in a terminal does.
class RunGroup {
 public:
  RunGroup(const std::vector<std::string>& argv, const std::filesystem::path& log) : log_(log) {
    SpawnOptions o;
    o.output = SpawnOptions::Output::kFile;
    o.output_file = log;
    o.append = true;
    o.new_process_group = true;
    auto spawned = ChildProcess::spawn(argv, o);
    if (!spawned.ok()) throw std::runtime_error(spawned.status().message());
    child_.emplace(std::move(spawned).value());
  }
  void signal(int sig) { child_->signal(sig); }
  // The exit code (128 + signal when killed), or -1 on timeout.
  int wait(std::chrono::milliseconds timeout) {
    int code = -1;
    wait_until([&] {
      if (auto e = child_->try_wait()) {
        code = e->shell_code();
        return true;
      }
      return false;
    }, timeout);
    return code;
  }
  std::string log() const { return read_file(log_); }

 private:
  std::filesystem::path log_;
  std::optional<ChildProcess> child_;   // its destructor SIGKILLs the group if still there
};

std::vector<std::string> run_args(const std::filesystem::path& plan, const std::filesystem::path& db,
                                  const std::vector<std::string>& more = {}) {
  std::vector<std::string> a = {coordinator_binary().string(), "run", "--plan", plan.string(), "--db", db.string(),
                                "--catalog", catalog_dir(), "--heartbeat-ms", "100"};
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

int run_logged(const ScratchDir& dir, const std::string& name, const std::vector<std::string>& argv, std::string* log,
               std::chrono::milliseconds timeout = std::chrono::seconds(120)) {
  Process p(argv, dir / (name + ".log"));
  const int code = p.wait(timeout);
  *log = p.log();
  return code;
}

// Perf jobs of bert-tiny that each measure for `seconds`; their lease would last 60 s + 60 s of
// grace, far beyond any wait a test allows, so a rerun that finishes sooner did not wait for it.
std::filesystem::path write_slow_plan(const ScratchDir& dir, const std::string& name, double seconds,
                                      const std::string& seq_lens) {
  return write_bert_plan(dir / (name + ".toml"), name, seconds, seq_lens, "[\"f32\"]", "perf",
                         "timeout_s = 60\nthreads = 1\n");
}
const std::vector<std::string> kLongGrace = {"--lease-grace-ms", "60000"};

// ---------------------------------------------------------------------------------------------
// Item 3: resume without waiting

TEST(ResumeWithoutWaiting, CtrlCReleasesTheLeasesInFlightAndTheRerunStartsThemAtOnce) {
  ScratchDir dir("resume-ctrlc");
  const auto db = dir / "r.db";
  const auto plan = write_slow_plan(dir, "ctrlc", 3.0, "[16, 24]");
  RunGroup first(run_args(plan, db, kLongGrace), dir / "first.log");
  ASSERT_TRUE(wait_until([&] { return sql_int(db, "SELECT COUNT(*) FROM attempts WHERE state = 'leased'") > 0; },
                         60s)) << first.log();
  first.signal(SIGINT);
  const auto stopped = Clock::now();
  EXPECT_EQ(first.wait(30s), 3) << first.log();
  EXPECT_TRUE(has(first.log(), "run the same command again to resume")) << first.log();

  // Nothing is left leased: the attempt in flight is closed as interrupted and its job queued.
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM attempts WHERE state = 'leased'"), 0);
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM jobs WHERE state = 'leased'"), 0);
  EXPECT_GE(sql_int(db, "SELECT COUNT(*) FROM attempts WHERE state = 'interrupted' AND status = 'interrupted'"), 1);
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM jobs WHERE status IN ('interrupted', 'cancelled', 'lost')"), 0);

  RunGroup second(run_args(plan, db, kLongGrace), dir / "second.log");
  EXPECT_EQ(second.wait(100s), 0) << second.log();
  const double resumed_s = seconds_between(stopped, Clock::now());
  // The interrupted job's lease would have run for 120 s.
  EXPECT_LT(resumed_s, 60.0) << second.log();
  expect_exactly_one_terminal_result_per_job(db, 2);
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM jobs WHERE status = 'pass'"), 2) << second.log();
  std::cout << "[ measured ] Ctrl-C to the resumed run's end: " << resumed_s << " s\n";
}

TEST(ResumeWithoutWaiting, SigtermToServeReleasesARemoteWorkersLeaseAndItsCancelEchoIsNotAResult) {
  ScratchDir dir("resume-serve");
  const auto db = dir / "s.db";
  const auto plan = write_slow_plan(dir, "servestop", 3.0, "[16]");
  auto serve = std::make_unique<Process>(
      serve_args(plan, db, "tcp://127.0.0.1:*", dir / "ep1", 1, "60000"), dir / "serve1.log");
  const std::string ep = wait_for_endpoint(dir / "ep1");
  ASSERT_FALSE(ep.empty()) << serve->log();
  Process worker(worker_args(ep, "remote", dir), dir / "w.log");
  ASSERT_TRUE(wait_until([&] { return sql_int(db, "SELECT COUNT(*) FROM attempts WHERE state = 'leased'") > 0; },
                         60s)) << serve->log();
  serve->terminate();
  EXPECT_EQ(serve->wait(30s), 3) << serve->log();
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM attempts WHERE state = 'interrupted'"), 1) << serve->log();
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM jobs WHERE state = 'queued'"), 1);

  // The worker stays; the restarted coordinator (same endpoint) gets it back, receives the
  // `cancelled` that answered the CANCEL, keeps it out of the job, and runs the job again.
  Process again(serve_args(plan, db, ep, dir / "ep2", 1, "60000"), dir / "serve2.log");
  EXPECT_EQ(again.wait(100s), 0) << again.log() << worker.log();
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM jobs WHERE status = 'pass'"), 1) << again.log();
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM attempts WHERE status = 'cancelled'"), 0);
  EXPECT_TRUE(worker.running() || worker.wait(15s) == 0) << worker.log();
}

TEST(ResumeWithoutWaiting, ARestartReclaimsAtOnceTheLeasesOfAKilledRunsLocalWorkers) {
  ScratchDir dir("resume-killed");
  const auto db = dir / "k.db";
  const auto plan = write_slow_plan(dir, "killed", 3.0, "[16]");
  {
    RunGroup crashed(run_args(plan, db, kLongGrace), dir / "crashed.log");
    ASSERT_TRUE(wait_until([&] { return sql_int(db, "SELECT COUNT(*) FROM attempts WHERE state = 'leased'") > 0; },
                           60s)) << crashed.log();
    crashed.signal(SIGKILL);   // no clean stop: the lease stays in the database
    EXPECT_EQ(crashed.wait(10s), 128 + SIGKILL);
  }
  ASSERT_EQ(sql_int(db, "SELECT COUNT(*) FROM attempts WHERE state = 'leased'"), 1);

  const auto restarted = Clock::now();
  RunGroup next(run_args(plan, db, kLongGrace), dir / "next.log");
  EXPECT_EQ(next.wait(100s), 0) << next.log();
  EXPECT_LT(seconds_between(restarted, Clock::now()), 60.0) << next.log();
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM attempts WHERE attempt = 1 AND state = 'expired' AND "
                        "reason LIKE '%its run stopped without releasing it%'"),
            1) << next.log();
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM jobs WHERE status = 'pass'"), 1);
}

TEST(ResumeWithoutWaiting, ARerunWithNothingToDoReturnsAtOnceWithoutWarningsAndLeavesFinishedAlone) {
  ScratchDir dir("resume-noop");
  const auto db = dir / "n.db";
  const auto plan = write_bert_plan(dir / "noop.toml", "noop", 0.05, "[16]", "[\"f32\"]", "accuracy");
  std::string log;
  ASSERT_EQ(run_logged(dir, "first", run_args(plan, db), &log), 0) << log;
  const int64_t finished = sql_int(db, "SELECT finished_at FROM runs WHERE run_id = 'noop'");
  ASSERT_GT(finished, 0);

  const auto started = Clock::now();
  const int code = run_logged(dir, "again", run_args(plan, db), &log);
  const double took_s = seconds_between(started, Clock::now());
  EXPECT_EQ(code, 0) << log;
  // The bound is one second; the margin covers a loaded CI machine and sanitizers.
  EXPECT_LT(took_s, 3.0) << log;
  EXPECT_TRUE(has(log, "all 1 job(s) already done")) << log;
  EXPECT_TRUE(has(log, "| bert-tiny")) << "the report is printed\n" << log;
  EXPECT_FALSE(has(log, "warning")) << log;
  EXPECT_FALSE(has(log, "[warning]")) << log;
  EXPECT_EQ(sql_int(db, "SELECT finished_at FROM runs WHERE run_id = 'noop'"), finished);
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM attempts"), 1);
  std::cout << "[ measured ] no-op rerun: " << took_s << " s\n";
}

// Three bert-tiny jobs with placement "any" (stored at once, before any worker registers a
// class) are stored by a `serve` that no worker joins and stopped cleanly; then the spec of the
// first is damaged in the database. Returns its job id.
std::string store_three_jobs_and_damage_one(const ScratchDir& dir, const std::filesystem::path& plan,
                                            const std::filesystem::path& db) {
  {
    Process serve(serve_args(plan, db, "tcp://127.0.0.1:*", dir / "ep"), dir / "serve.log");
    EXPECT_FALSE(wait_for_endpoint(dir / "ep").empty()) << serve.log();
    EXPECT_TRUE(wait_until([&] { return sql_int(db, "SELECT COUNT(*) FROM jobs") == 3; }, 20s)) << serve.log();
    serve.terminate();
    EXPECT_EQ(serve.wait(30s), 3) << serve.log();
  }
  const auto first = sql_rows(db, "SELECT job_id FROM jobs ORDER BY seq LIMIT 1");
  if (first.size() != 1) return "";
  EXPECT_EQ(sql_exec(db, "UPDATE jobs SET spec_json = '{\"model\": ' WHERE job_id = '" + first[0][0] + "'"), "");
  return first[0][0];
}

std::filesystem::path write_any_plan(const ScratchDir& dir, const std::string& file, const std::string& seq_lens) {
  return write_bert_plan(dir / file, "damaged", 0.02, seq_lens, "[\"f32\"]", "accuracy",
                         "timeout_s = 60\nplacement = \"any\"\n");
}

// Resumed with the same plan, the coordinator takes the damaged job's spec from the plan (it
// does not read stored specs back then), so the job runs; the report, which does read it, shows
// the job from its columns with the damage named instead of failing the whole report.
TEST(ResumeWithoutWaiting, ADamagedStoredSpecIsNamedInTheReportWhichStillShowsEveryJob) {
  ScratchDir dir("resume-damaged");
  const auto db = dir / "d.db";
  const auto plan = write_any_plan(dir, "damaged.toml", "[8, 16, 32]");
  const std::string id = store_three_jobs_and_damage_one(dir, plan, db);
  ASSERT_FALSE(id.empty());
  std::string log;
  EXPECT_EQ(run_logged(dir, "resume", run_args(plan, db), &log), 0) << log;
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM jobs WHERE state = 'done' AND status = 'pass'"), 3) << log;
  EXPECT_TRUE(has(log, "corrupt spec of job '" + id + "'")) << log;
  EXPECT_TRUE(has(log, "| bert-tiny")) << "the report is printed\n" << log;
  std::string report;
  ASSERT_EQ(run_logged(dir, "report", {coordinator_binary().string(), "report", "--db", db.string(), "--format", "json"},
                       &report),
            0)
      << report;
  // All three jobs are in it, the damaged one with the damage named.
  // The log holds the store's warning (stderr) before the document (stdout).
  const std::size_t start = report.rfind("\n{", report.find("\"columns\""));
  ASSERT_NE(start, std::string::npos) << report;
  const nlohmann::json doc = nlohmann::json::parse(report.substr(start), nullptr, false);
  ASSERT_TRUE(doc.is_object()) << report;
  ASSERT_TRUE(doc.contains("results")) << report;
  EXPECT_EQ(doc.at("results").size(), 3u) << report;
  EXPECT_TRUE(has(report, "corrupt spec of job '" + id + "'")) << report;
}

// Extended with another plan, the first plan's jobs are read back from the store: the damaged
// one cannot be run and ends `error` with the reason, settled after the read-back walk (no write
// to the jobs table while its rows are stepped through); every other job runs once.
TEST(ResumeWithoutWaiting, AnExtendedRunEndsADamagedStoredJobErrorAndRunsTheRestOnce) {
  ScratchDir dir("extend-damaged");
  const auto db = dir / "e.db";
  const std::string id = store_three_jobs_and_damage_one(dir, write_any_plan(dir, "a.toml", "[8, 16, 32]"), db);
  ASSERT_FALSE(id.empty());
  std::string log;
  EXPECT_EQ(run_logged(dir, "extend", run_args(write_any_plan(dir, "b.toml", "[24]"), db, {"--extend"}), &log), 1)
      << "error is a --fail-on status\n" << log;
  EXPECT_EQ(sql_rows(db, "SELECT status, substr(reason, 1, 27) FROM jobs WHERE job_id = '" + id + "'"),
            (std::vector<std::vector<std::string>>{{"error", "stored job spec is invalid:"}}))
      << log;
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM attempts WHERE job_id = '" + id + "'"), 0) << "no worker held it\n" << log;
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM jobs"), 4);
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM jobs WHERE job_id <> '" + id + "' AND state = 'done' AND status = 'pass'"),
            3)
      << log;
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM attempts WHERE job_id <> '" + id + "'"), 3) << log;
}

// A finished job keeps its stored result when its stored spec turns out damaged on an extended
// run's read-back: the run's summary and exit code say what the store says.
TEST(ResumeWithoutWaiting, AnExtendedRunKeepsAFinishedJobsResultWhenItsStoredSpecIsDamaged) {
  ScratchDir dir("extend-damaged-done");
  const auto db = dir / "f.db";
  std::string log;
  ASSERT_EQ(run_logged(dir, "first", run_args(write_any_plan(dir, "a.toml", "[8, 16]"), db), &log), 0) << log;
  const auto first = sql_rows(db, "SELECT job_id FROM jobs ORDER BY seq LIMIT 1");
  ASSERT_EQ(first.size(), 1u);
  const std::string id = first[0][0];
  ASSERT_EQ(sql_exec(db, "UPDATE jobs SET spec_json = '[' WHERE job_id = '" + id + "'"), "");
  EXPECT_EQ(run_logged(dir, "extend", run_args(write_any_plan(dir, "b.toml", "[24]"), db, {"--extend"}), &log), 0)
      << log;
  EXPECT_EQ(sql_rows(db, "SELECT state, status FROM jobs WHERE job_id = '" + id + "'"),
            (std::vector<std::vector<std::string>>{{"done", "pass"}}))
      << log;
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM jobs WHERE state = 'done' AND status = 'pass'"), 3) << log;
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM attempts"), 3) << "the finished jobs did not run again\n" << log;
}

// ---------------------------------------------------------------------------------------------
// Item 4: a plan is a plan

TEST(PlanIsAPlan, AnotherPlanUnderTheSameRunIdIsRefusedUnlessExtendedOnPurpose) {
  ScratchDir dir("plan-hash");
  const auto db = dir / "p.db";
  const auto a = write_bert_plan(dir / "a.toml", "same", 0.05, "[16]", "[\"f32\"]", "accuracy");
  std::string log;
  ASSERT_EQ(run_logged(dir, "a", run_args(a, db), &log), 0) << log;
  EXPECT_EQ(sql_rows(db, "SELECT substr(plan_hash, 1, 3) || length(plan_hash) FROM runs")[0][0], "v2:19");

  // A comment and a reordering change nothing: the same expanded jobs.
  write_file(dir / "a2.toml", "# a comment\n" + read_file(a));
  EXPECT_EQ(run_logged(dir, "a2", run_args(dir / "a2.toml", db), &log), 0) << log;

  // Another seq_len under the same name: refused before anything runs.
  const auto b = write_bert_plan(dir / "b.toml", "same", 0.05, "[24]", "[\"f32\"]", "accuracy");
  EXPECT_EQ(run_logged(dir, "b", run_args(b, db), &log), 2) << log;
  EXPECT_TRUE(has(log, "run 'same'")) << log;
  EXPECT_TRUE(has(log, "was made from another plan")) << log;
  EXPECT_TRUE(has(log, a.string())) << log;
  EXPECT_TRUE(has(log, "--run NAME")) << log;
  EXPECT_TRUE(has(log, "--extend")) << log;
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM jobs"), 1);

  // A new run id takes it as a new run.
  EXPECT_EQ(run_logged(dir, "b-new", run_args(b, db, {"--run", "same-b"}), &log), 0) << log;
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM jobs WHERE run_id = 'same-b'"), 1);

  // --extend adds its jobs to the old run, which now names the new plan.
  EXPECT_EQ(run_logged(dir, "b-extend", run_args(b, db, {"--extend"}), &log), 0) << log;
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM jobs WHERE run_id = 'same' AND status = 'pass'"), 2) << log;
  EXPECT_EQ(sql_rows(db, "SELECT plan_path FROM runs WHERE run_id = 'same'")[0][0], b.string());
  // ... and that plan is now the run's plan: a rerun of it has nothing to do.
  EXPECT_EQ(run_logged(dir, "b-again", run_args(b, db), &log), 0) << log;
  EXPECT_TRUE(has(log, "already done")) << log;
}

TEST(PlanIsAPlan, ARunStoredWithTheFirstHashDefinitionResumesAndIsStoredUnderTheSecond) {
  ScratchDir dir("plan-hash-v1");
  const auto db = dir / "p.db";
  const auto a = write_bert_plan(dir / "a.toml", "old", 0.05, "[16, 24]", "[\"f32\"]", "accuracy");
  std::string log;
  ASSERT_EQ(run_logged(dir, "a", run_args(a, db), &log), 0) << log;
  auto plan = am::jobs::load_plan(a, am::jobs::default_plans_dir().parent_path() / "models");
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  const std::string v1 = am::jobs::plan_hash_v1(plan->jobs);
  // As a database written before v2 holds it (and so without a plan digest, schema 7).
  ASSERT_EQ(sql_exec(db, "UPDATE runs SET plan_hash = '" + v1 + "', plan_digest = ''"), "");
  EXPECT_EQ(run_logged(dir, "a-again", run_args(a, db), &log), 0) << log;
  EXPECT_FALSE(has(log, "another plan")) << log;
  EXPECT_EQ(sql_rows(db, "SELECT plan_hash FROM runs")[0][0], am::jobs::plan_hash(plan->jobs));
  // A stored first-definition hash that is not the submitted plan's: another plan, refused.
  ASSERT_EQ(sql_exec(db, "UPDATE runs SET plan_hash = '" + v1 + "', plan_digest = ''"), "");
  const auto b = write_bert_plan(dir / "b.toml", "old", 0.05, "[16, 24, 32]", "[\"f32\"]", "accuracy");
  EXPECT_EQ(run_logged(dir, "b", run_args(b, db), &log), 2) << log;
  EXPECT_TRUE(has(log, "was made from another plan")) << log;
  EXPECT_EQ(sql_rows(db, "SELECT plan_hash FROM runs")[0][0], v1);
}

TEST(PlanIsAPlan, ServeRefusesAnotherPlanWithExitTwoToo) {
  ScratchDir dir("plan-serve");
  const auto db = dir / "s.db";
  const auto a = write_bert_plan(dir / "a.toml", "srv", 0.05, "[16]", "[\"f32\"]", "accuracy");
  const auto b = write_bert_plan(dir / "b.toml", "srv", 0.05, "[16]", "[\"f32\", \"q8_0\"]", "accuracy");
  std::string log;
  ASSERT_EQ(run_logged(dir, "a", run_args(a, db), &log), 0) << log;
  EXPECT_EQ(run_logged(dir, "b", serve_args(b, db, "tcp://127.0.0.1:*", dir / "ep"), &log, 30s), 2) << log;
  EXPECT_TRUE(has(log, "--extend")) << log;
  EXPECT_FALSE(std::filesystem::exists(dir / "ep"));
}

// ---------------------------------------------------------------------------------------------
// Item 6: progress people expect

// Runs argv on a pseudo-terminal (as in a shell) with `env` added; returns everything it wrote.
std::string run_on_terminal(const std::vector<std::string>& argv, const std::vector<std::string>& env, int* code) {
  int master = -1;
  const pid_t pid = forkpty(&master, nullptr, nullptr, nullptr);
  if (pid < 0) {
    *code = -1;
    return "forkpty failed";
  }
  if (pid == 0) {
    for (const std::string& kv : env) putenv(const_cast<char*>(kv.c_str()));
    setenv("TERM", "xterm", 1);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  std::string out;
  char buf[4096];
  const auto deadline = Clock::now() + 120s;
  while (Clock::now() < deadline) {
    pollfd p{master, POLLIN, 0};
    if (poll(&p, 1, 100) > 0) {
      const ssize_t n = read(master, buf, sizeof buf);
      if (n <= 0) break;   // EIO once the child and its workers closed the terminal
      out.append(buf, static_cast<std::size_t>(n));
    }
  }
  close(master);
  int status = 0;
  waitpid(pid, &status, 0);
  *code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return out;
}

TEST(Progress, OnATerminalOneLineUpdatesInPlaceWithCountsElapsedAndEta) {
  ScratchDir dir("progress-tty");
  const auto plan = write_bert_plan(dir / "tty.toml", "tty", 0.3, "[16, 24, 32]", "[\"f32\"]", "perf");
  int code = -1;
  const std::string out = run_on_terminal(run_args(plan, dir / "t.db"), {}, &code);
  EXPECT_EQ(code, 0) << out;
  EXPECT_TRUE(has(out, "\r\033[K[")) << out;
  EXPECT_TRUE(has(out, "elapsed")) << out;
  EXPECT_TRUE(has(out, "ETA")) << out;
  EXPECT_TRUE(has(out, "[3/3] \033[32m3 pass\033[0m, 0 failed, 0 running")) << "pass in green\n" << out;

  const std::string plain = run_on_terminal(run_args(plan, dir / "u.db"), {"NO_COLOR=1"}, &code);
  EXPECT_EQ(code, 0) << plain;
  EXPECT_TRUE(has(plain, "\r\033[K[3/3] 3 pass, 0 failed, 0 running")) << plain;
  EXPECT_FALSE(has(plain, "\033[32m")) << plain;
  EXPECT_FALSE(has(plain, "\033[31m")) << plain;
}

TEST(Progress, ElsewherePlainLinesWithoutControlCharacters) {
  ScratchDir dir("progress-pipe");
  const auto plan = write_bert_plan(dir / "pipe.toml", "pipe", 0.05, "[16, 24]", "[\"f32\"]", "accuracy");
  std::string log;
  EXPECT_EQ(run_logged(dir, "pipe", run_args(plan, dir / "p.db"), &log), 0) << log;
  EXPECT_TRUE(has(log, "[1/2] pass  bert-tiny cpu f32")) << log;
  EXPECT_TRUE(has(log, "[2/2] pass")) << log;
  EXPECT_FALSE(has(log, "\r")) << log;
  EXPECT_FALSE(has(log, "\033[")) << log;
}

TEST(Progress, QuietVerboseAndLogLevelWorkAfterTheSubcommand) {
  ScratchDir dir("progress-flags");
  const auto plan = write_bert_plan(dir / "flags.toml", "flags", 0.05, "[16]", "[\"f32\"]", "accuracy");
  const auto db = dir / "f.db";
  std::string log;
  EXPECT_EQ(run_logged(dir, "quiet", run_args(plan, db, {"-q"}), &log), 0) << log;
  EXPECT_FALSE(has(log, "[1/1]")) << log;
  EXPECT_EQ(run_logged(dir, "verbose", {coordinator_binary().string(), "plan", plan.string(), "--catalog",
                                        catalog_dir(), "-v"}, &log),
            0) << log;
  EXPECT_EQ(run_logged(dir, "level", {coordinator_binary().string(), "report", "--db", db.string(),
                                      "--log-level", "debug", "--format", "csv"}, &log),
            0) << log;
  EXPECT_EQ(run_logged(dir, "before", {coordinator_binary().string(), "--log-level", "info", "-q", "report",
                                       "--db", db.string()}, &log),
            0) << log;
  EXPECT_EQ(run_logged(dir, "bad", {coordinator_binary().string(), "report", "--db", db.string(), "--log-level",
                                    "loud"}, &log),
            2) << log;
  EXPECT_TRUE(has(log, "unknown log level 'loud'")) << log;
}

// A report that cannot be written (a full disk, a closed pipe) fails the command and says why,
// whatever the format: every format streams to its own writer thread (docs/REPORTS.md).
TEST(ReportOutput, AWriteErrorOnStandardOutputFailsTheCommandAndNamesIt) {
  ScratchDir dir("report-full");
  const auto plan = write_bert_plan(dir / "full.toml", "full", 0.05, "[16]", "[\"f32\"]", "accuracy");
  const auto db = dir / "full.db";
  std::string log;
  ASSERT_EQ(run_logged(dir, "run", run_args(plan, db, {"-q"}), &log), 0) << log;
  for (const std::string format : {"json", "md", "csv", "junit", "html"}) {
    const auto err = dir / ("full-" + format + ".err");
    Process p({"/bin/sh", "-c",
               "exec '" + coordinator_binary().string() + "' report --db '" + db.string() + "' --format " + format +
                   " > /dev/full 2> '" + err.string() + "'"},
              dir / ("full-" + format + ".log"));
    EXPECT_EQ(p.wait(std::chrono::seconds(60)), 4) << format;   // kExitInfrastructure
    std::ifstream in(err);
    const std::string message((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_TRUE(has(message, "cannot write the report to standard output: No space left on device"))
        << format << ": " << message;
  }
}

// ---------------------------------------------------------------------------------------------
// Item 8: time budget

TEST(TimeBudget, WhenItRunsOutNoNewJobStartsAndTheRestIsSkippedWithTheReportPrinted) {
  ScratchDir dir("budget");
  const auto db = dir / "b.db";
  // Four jobs of about 4 s each, one at a time, under a 3 s budget counted from the worker's
  // registration: the first one (started within the budget) runs to its end, the other three
  // never start; on a loaded machine the first may start late too. Nothing starts late.
  const auto plan = write_file(dir / "budget.toml",
                               "[plan]\nname = \"budget\"\nmode = \"perf\"\nseed = 7\ntime_budget_s = 3\n\n"
                               "[defaults]\nbackends = [\"cpu\"]\nprecisions = [\"f32\"]\nbatch = [1]\n"
                               "seq_len = [16, 24, 32, 40]\nwarmup = 0\nmin_reps = 1\nmax_reps = 100000\n"
                               "min_time_s = 4.0\ntimeout_s = 60\nthreads = 1\n\n[[models]]\nname = \"bert-tiny\"\n");
  const auto started = Clock::now();
  std::string log;
  EXPECT_EQ(run_logged(dir, "budget", run_args(plan, db), &log), 0) << log;
  EXPECT_LT(seconds_between(started, Clock::now()), 40.0) << log;
  const int64_t passed = sql_int(db, "SELECT COUNT(*) FROM jobs WHERE status = 'pass'");
  const int64_t skipped = sql_int(db, "SELECT COUNT(*) FROM jobs WHERE status = 'skipped' AND reason LIKE 'time budget%'");
  EXPECT_LE(passed, 1) << log;
  EXPECT_EQ(passed + skipped, 4) << log;
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM attempts"), passed) << "skipped jobs never started";
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM attempts WHERE state = 'done' AND status = 'pass'"), passed)
      << "a job running when the budget ran out finished";
  EXPECT_TRUE(has(log, "time budget of 3 s ran out")) << log;
  EXPECT_TRUE(has(log, "| bert-tiny")) << "the run ends with its report\n" << log;
  EXPECT_GT(sql_int(db, "SELECT finished_at FROM runs WHERE run_id = 'budget'"), 0);
}

// Any number >= 0 is a budget (docs/PLANS.md); one too large for milliseconds in 64 bits skipped
// every job at once.
TEST(TimeBudget, AHugeBudgetNeverRunsOut) {
  ScratchDir dir("budget-huge");
  const auto db = dir / "h.db";
  const auto plan = write_file(dir / "huge.toml",
                               "[plan]\nname = \"huge\"\nmode = \"accuracy\"\ntime_budget_s = 1e19\n\n"
                               "[[models]]\nname = \"selftest:pass\"\nbatch = [1, 2]\n");
  std::string log;
  EXPECT_EQ(run_logged(dir, "huge", run_args(plan, db), &log), 0) << log;
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM jobs WHERE status = 'pass'"), 2) << log;
  EXPECT_FALSE(has(log, "ran out")) << log;
}

TEST(TimeBudget, ItCountsFromTheFirstWorkerSoACoordinatorWaitingForItsFleetSkipsNothing) {
  ScratchDir dir("budget-wait");
  const auto db = dir / "w.db";
  const auto plan = write_file(dir / "wait.toml",
                               "[plan]\nname = \"wait\"\nmode = \"accuracy\"\nseed = 7\ntime_budget_s = 1\n\n"
                               "[defaults]\nbackends = [\"cpu\"]\nprecisions = [\"f32\"]\nbatch = [1]\n"
                               "seq_len = [16, 24]\ntimeout_s = 60\nthreads = 1\n\n[[models]]\nname = \"bert-tiny\"\n");
  // No health job, two slots: both jobs can start the moment the worker registers.
  std::vector<std::string> args = serve_args(plan, db, "tcp://127.0.0.1:*", dir / "ep");
  args.insert(args.end(), {"--health-interval", "0"});
  Process serve(args, dir / "serve.log");
  const std::string ep = wait_for_endpoint(dir / "ep");
  ASSERT_FALSE(ep.empty()) << serve.log();
  // Twice the budget with no worker: before, every job was settled skipped here.
  std::this_thread::sleep_for(2500ms);
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM jobs WHERE status = 'skipped'"), 0) << serve.log();
  Process worker(worker_args(ep, "late", dir, /*slots=*/2), dir / "w.log");
  EXPECT_EQ(serve.wait(60s), 0) << serve.log();
  // At least the jobs started within the budget ran (on a loaded machine a start may come late).
  EXPECT_GE(sql_int(db, "SELECT COUNT(*) FROM jobs WHERE status = 'pass'"), 1) << serve.log();
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM jobs WHERE status = 'skipped' AND reason NOT LIKE 'time budget%'"), 0)
      << serve.log();
}

}  // namespace
}  // namespace am::testing
