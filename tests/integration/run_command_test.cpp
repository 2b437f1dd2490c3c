// `accelmatrix run` and `accelmatrix plan` end to end (issue 16, item 3): the real binaries,
// `run`'s embedded coordinator with its own local worker processes over loopback, the report on
// stdout (stderr kept apart), the database written; `plan` lists the very jobs `run` then stores
// (one per hardware class: placement each-class) and runs nothing.
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/proc_stat.h"
#include "tests/common/under_asan.h"
#include "tests/integration/run_helpers.h"

namespace am::testing {
namespace {

bool has(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

// argv run through /bin/sh with stdout to `out` and stderr to `err`, each a file of its own
// (the harness joins both streams). `exec` keeps the pid: signals and exit codes are argv's.
std::vector<std::string> split_streams(const std::vector<std::string>& argv, const std::filesystem::path& err) {
  std::string cmd = "exec";
  for (const auto& a : argv) cmd += " '" + a + "'";   // scratch paths and flags hold no quote
  cmd += " 2>'" + err.string() + "'";
  return {"/bin/sh", "-c", cmd};
}

// Two short accuracy jobs of bert-tiny on the cpu.
std::filesystem::path write_small_plan(const ScratchDir& dir, const std::string& name) {
  return write_bert_plan(dir / (name + ".toml"), name, 0.05, "[16, 24]", "[\"f32\"]", "accuracy");
}

// The plan jobs `plan --json` lists for `plan`, in plan order: (job id, spec).
std::vector<std::pair<std::string, nlohmann::json>> planned_jobs(const std::filesystem::path& plan, int* code) {
  const std::string out = run_capture({coordinator_binary().string(), "plan", plan.string(), "--catalog",
                                       catalog_dir(), "--json", "--log-level", "off"}, code);
  const auto doc = nlohmann::json::parse(out, nullptr, false);
  std::vector<std::pair<std::string, nlohmann::json>> jobs;
  if (!doc.is_array()) return jobs;
  for (const auto& j : doc) jobs.emplace_back(j.value("job_id", ""), j.value("spec", nlohmann::json()));
  return jobs;
}

// The jobs `run` stored are the plan's, one per hardware class (placement each-class, the
// default; one class here): the same specs in plan order, each made for the class it ran on.
// Returns their ids.
std::vector<std::string> expect_the_plans_jobs_one_per_class(
    const std::filesystem::path& db, const std::vector<std::pair<std::string, nlohmann::json>>& planned) {
  const auto rows = sql_rows(db, "SELECT job_id, s.spec_json, target, hardware_class FROM jobs JOIN job_specs s "
                                 "USING (run_id, job_id) ORDER BY seq");
  std::vector<std::string> ids;
  EXPECT_EQ(rows.size(), planned.size());
  for (std::size_t i = 0; i < rows.size() && i < planned.size(); ++i) {
    EXPECT_EQ(nlohmann::json::parse(rows[i][1]), planned[i].second) << i;
    EXPECT_FALSE(rows[i][3].empty()) << i;
    EXPECT_EQ(rows[i][2], "class:" + rows[i][3]) << i;
    EXPECT_NE(rows[i][0], planned[i].first) << "a job made for a class has an id of its own";
    ids.push_back(rows[i][0]);
  }
  return ids;
}

TEST(RunCommand, RunsThePlanOnItsOwnLocalWorkersPrintsTheReportOnStdoutAndStoresEveryJob) {
  ScratchDir dir("run-cmd");
  const auto db = dir / "r.db";
  const auto plan = write_small_plan(dir, "runcmd");
  int code = -1;
  const auto planned = planned_jobs(plan, &code);
  ASSERT_EQ(code, 0);
  ASSERT_EQ(planned.size(), 2u);

  const auto out = dir / "stdout.txt";
  const auto err = dir / "stderr.txt";
  Process run(split_streams({coordinator_binary().string(), "run", "--plan", plan.string(), "--db", db.string(),
                             "--catalog", catalog_dir(), "--workers", "2", "--heartbeat-ms", "100"},
                            err),
              out);
  const pid_t run_pid = run.pid();
  ASSERT_EQ(run.wait(120s), 0) << read_file(err) << read_file(out);
  const std::string report = read_file(out);
  const std::string log = read_file(err);

  // stdout is the Markdown report of the finished run, and only that.
  EXPECT_EQ(report.rfind("# accelmatrix report: runcmd\n", 0), 0u) << report;
  EXPECT_TRUE(has(report, "| Run | `runcmd` |")) << report;
  EXPECT_TRUE(has(report, "| ✅ pass | 2 |")) << report;
  EXPECT_TRUE(has(report, "| **total** | **2** |")) << report;
  const std::vector<std::string> ids = expect_the_plans_jobs_one_per_class(db, planned);
  for (const auto& id : ids) EXPECT_TRUE(has(report, "| `" + id + "` | bert-tiny | cpu | f32 | 1 |")) << id << "\n" << report;
  EXPECT_FALSE(has(report, "local worker(s)")) << report;
  EXPECT_FALSE(has(report, "[1/2]")) << report;
  // The progress and the run's own lines went to stderr.
  EXPECT_TRUE(has(log, "run 'runcmd': 2 job(s), 0 already done; 2 local worker(s) on tcp://127.0.0.1:")) << log;
  EXPECT_TRUE(has(log, "[2/2] pass")) << log;

  // The database holds the run: the planned jobs, each passed once, by run's own workers.
  EXPECT_EQ(sql_rows(db, "SELECT run_id, plan_name FROM runs"),
            (std::vector<std::vector<std::string>>{{"runcmd", "runcmd"}}));
  EXPECT_GT(sql_int(db, "SELECT finished_at FROM runs"), 0);
  expect_exactly_one_terminal_result_per_job(db, 2);
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM jobs WHERE status = 'pass'"), 2);
  const std::string prefix = "local-" + std::to_string(run_pid);
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM workers WHERE worker_id LIKE '" + prefix + "%'"), 2);
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM workers WHERE worker_id NOT LIKE '" + prefix + "%'"), 0);
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM attempts WHERE worker_id NOT LIKE '" + prefix + "%'"), 0);
  // A successful run leaves no worker state behind.
  EXPECT_FALSE(std::filesystem::exists(std::filesystem::temp_directory_path() /
                                       ("accelmatrix-run-" + std::to_string(run_pid))));
}

// A model job past its memory limit: the job process writes nothing, says "out of memory" and
// used to hang at exit (OpenBLAS joining a thread that loops on a failing malloc), so it came back
// `timeout` after its whole limit. It is `oom`, at once.
TEST(RunCommand, AModelJobPastItsMemoryLimitIsOomAtOnceNotATimeout) {
#if defined(AM_TEST_UNDER_ASAN)
  GTEST_SKIP() << "an address-space limit cannot hold an AddressSanitizer process (its shadow alone is terabytes)";
#endif
  ScratchDir dir("run-oom");
  const auto plan = write_file(dir / "oom.toml", "[plan]\nname = \"oom\"\nmode = \"accuracy\"\n\n[defaults]\n"
                                                 "backends = [\"cpu\"]\nprecisions = [\"f32\"]\ntimeout_s = 60\n"
                                                 "memory_limit_mb = 1\n\n[[models]]\nname = \"bert-tiny\"\n");
  const auto t0 = std::chrono::steady_clock::now();
  int code = -1;
  run_capture({coordinator_binary().string(), "run", "--plan", plan.string(), "--db", (dir / "o.db").string(),
               "--catalog", catalog_dir(), "--workers", "1", "-q"},
              &code, std::chrono::seconds(120));
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(code, 1);
  EXPECT_EQ(sql_rows(dir / "o.db", "SELECT status FROM jobs"), (std::vector<std::vector<std::string>>{{"oom"}}));
  EXPECT_LT(took, 40.0) << "the job ran into its 60 s time limit";
}

// Gone, or a zombie nobody reaps (a reparented child in a container without an init that reaps).
bool process_ended(pid_t pid) {
  const std::optional<ProcStat> stat = read_proc_stat(pid);
  return !stat || stat->state == 'Z';
}

// `run` killed with SIGKILL (no handler runs) takes its local workers with it: they stop on
// their own instead of reconnecting to its dead endpoint for good, and their jobs die with them.
TEST(RunCommand, LocalWorkersStopWhenTheRunIsKilled) {
  ScratchDir dir("run-killed");
  const std::string text = "[plan]\nname = \"killed\"\nmode = \"accuracy\"\n\n[defaults]\nbackends = [\"cpu\"]\n"
                           "precisions = [\"f32\"]\ntimeout_s = 120\n\n[[models]]\nname = \"selftest:hang\"\n";
  const auto plan = write_file(dir / "killed.toml", text);
  Process run({coordinator_binary().string(), "run", "--plan", plan.string(), "--db", (dir / "k.db").string(),
               "--catalog", catalog_dir(), "--workers", "1", "--heartbeat-ms", "100"},
              dir / "run.log");
  const pid_t run_pid = run.pid();
  const std::string worker_id = "local-" + std::to_string(run_pid) + "-1";
  pid_t worker = -1;
  ASSERT_TRUE(wait_until([&] { return (worker = pid_with_argument("--id " + worker_id + " ")) > 0; },
                         std::chrono::seconds(20)))
      << run.log();
  // The hang job runs: the worker holds a job process of its own.
  pid_t job = -1;
  ASSERT_TRUE(wait_until([&] { return (job = pid_with_argument("--exit-with-parent " + std::to_string(worker))) > 0; },
                         std::chrono::seconds(30)))
      << run.log();
  // Checked while the run lives: once its worker is dead, any test's `run` may sweep it away.
  const auto temp = std::filesystem::temp_directory_path();
  const auto killed_dir = temp / ("accelmatrix-run-" + std::to_string(run_pid));
  ASSERT_TRUE(std::filesystem::exists(killed_dir)) << killed_dir;
  run.kill_hard();
  EXPECT_TRUE(wait_until([&] { return process_ended(worker); }, std::chrono::seconds(15)))
      << "worker " << worker_id << " (pid " << worker << ") outlived its run";
  EXPECT_TRUE(wait_until([&] { return process_ended(job); }, std::chrono::seconds(15)))
      << "the worker's job (pid " << job << ") outlived it";
  if (!process_ended(worker)) ::kill(worker, SIGKILL);
  if (!process_ended(job)) ::kill(job, SIGKILL);

  // Its workers' state (logs, scratch, their secrets) outlived it; the next `run` removes it,
  // and leaves the directory of a process that is alive.
  const auto live_dir = temp / ("accelmatrix-run-" + std::to_string(::getpid()));
  std::filesystem::create_directories(live_dir);
  const auto quick = write_file(dir / "quick.toml", "[plan]\nname = \"quick\"\nmode = \"accuracy\"\n\n[defaults]\n"
                                                     "backends = [\"cpu\"]\nprecisions = [\"f32\"]\n\n"
                                                     "[[models]]\nname = \"selftest:pass\"\n");
  int code = -1;
  run_capture({coordinator_binary().string(), "run", "--plan", quick.string(), "--db", (dir / "q.db").string(),
               "--catalog", catalog_dir(), "--workers", "1", "-q"},
              &code);
  EXPECT_EQ(code, 0);
  EXPECT_FALSE(std::filesystem::exists(killed_dir)) << killed_dir;
  EXPECT_TRUE(std::filesystem::exists(live_dir));
  std::filesystem::remove_all(live_dir);
}

// `serve --exit-with-parent PID` (what the benches start): the coordinator stops when the process
// that started it ends, however it ends, instead of serving on with nobody to stop it.
TEST(RunCommand, AServeStartedWithExitWithParentStopsWhenItsParentEnds) {
  ScratchDir dir("serve-parent");
  const auto plan = write_small_plan(dir, "orphan");
  const auto ep_file = dir / "endpoint";
  const std::string serve = coordinator_binary().string() + " serve --plan " + plan.string() + " --db " +
                            (dir / "o.db").string() + " --catalog " + catalog_dir() +
                            " --bind tcp://127.0.0.1:* --endpoint-file " + ep_file.string() + " --exit-with-parent $$";
  Process shell({"/bin/sh", "-c", serve + " & while [ ! -s " + ep_file.string() + " ]; do sleep 0.1; done; exit 0"},
                dir / "sh.log");
  ASSERT_EQ(shell.wait(60s), 0) << shell.log();
  EXPECT_TRUE(wait_until([&] { return pid_with_argument("--endpoint-file " + ep_file.string()) < 0; }, 20s))
      << "the coordinator outlived the process that started it";
  if (const pid_t left = pid_with_argument("--endpoint-file " + ep_file.string()); left > 0) ::kill(left, SIGKILL);
}

TEST(PlanCommand, ListsEveryJobOfThePlanAndRunsNothing) {
  ScratchDir dir("plan-cmd");
  const auto plan = write_bert_plan(dir / "pc.toml", "pc", 0.05, "[16, 32]", "[\"f32\", \"q8_0\"]", "both");
  int code = -1;
  const auto planned = planned_jobs(plan, &code);
  ASSERT_EQ(code, 0);
  ASSERT_EQ(planned.size(), 4u);
  std::vector<std::string> ids;
  for (const auto& [id, spec] : planned) ids.push_back(id);
  EXPECT_EQ(std::set<std::string>(ids.begin(), ids.end()).size(), 4u);

  const std::string table = run_capture({coordinator_binary().string(), "plan", plan.string(), "--catalog",
                                         catalog_dir(), "--log-level", "off"}, &code);
  ASSERT_EQ(code, 0) << table;
  EXPECT_TRUE(has(table, "plan 'pc' (")) << table;
  EXPECT_TRUE(has(table, "): 4 job(s), 4 of them run once per hardware class or device (placement)\n")) << table;
  for (const auto& id : ids) EXPECT_TRUE(has(table, id + "  bert-tiny")) << id << "\n" << table;
  for (const char* precision : {"f32 ", "q8_0"}) EXPECT_TRUE(has(table, precision)) << table;
  // Nothing ran: no database, no state, nothing but the plan in the directory.
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) files.push_back(e.path().filename().string());
  EXPECT_EQ(files, (std::vector<std::string>{"pc.toml"}));

  // The same plan under `run` stores exactly the jobs `plan` listed.
  const auto db = dir / "p.db";
  Process run({coordinator_binary().string(), "run", "--plan", plan.string(), "--db", db.string(), "--catalog",
               catalog_dir(), "--heartbeat-ms", "100", "-q"},
              dir / "run.log");
  ASSERT_EQ(run.wait(120s), 0) << run.log();
  expect_the_plans_jobs_one_per_class(db, planned);
}

TEST(PlanCommand, APlanThatDoesNotLoadExitsTwoNamingTheProblem) {
  ScratchDir dir("plan-bad");
  const auto plan = write_file(dir / "bad.toml",
                               "[plan]\nname = \"bad\"\nmode = \"accuracy\"\n\n"
                               "[defaults]\nbackends = [\"cpu\"]\nprecisions = [\"f32\"]\nbatch = [1]\nseq_len = [16]\n\n"
                               "[[models]]\nname = \"no-such-model\"\n");
  int code = -1;
  const std::string out = run_capture({coordinator_binary().string(), "plan", plan.string(), "--catalog",
                                       catalog_dir()}, &code);
  EXPECT_EQ(code, 2) << out;
  EXPECT_TRUE(has(out, "no-such-model")) << out;
}

}  // namespace
}  // namespace am::testing
