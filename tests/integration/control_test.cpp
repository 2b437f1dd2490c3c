// Issue 13 items 1 and 7 with real processes: a live coordinator watched and steered with
// `accelmatrix status`, `submit`, `cancel`, `drain`, `release` and `runs`; admin keys under
// CURVE; health jobs and device quarantine (docs/PROTOCOL.md §5.10, §5.11).
#include <gtest/gtest.h>

#include <csignal>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/curve.h"
#include "tests/integration/run_helpers.h"

namespace am::testing {
namespace {

using nlohmann::json;

const json* find_run(const json& status, const std::string& run_id) {
  for (const json& r : status["runs"]) {
    if (r["run_id"] == run_id) return &r;
  }
  return nullptr;
}

// The pids of `pid`'s child processes (from /proc; threads' children included).
std::vector<int> children_of(pid_t pid) {
  std::vector<int> out;
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    std::ifstream in(task.path() / "children");
    int child = 0;
    while (in >> child) out.push_back(child);
  }
  return out;
}

std::filesystem::path write_selftest_plan(const std::filesystem::path& path, const std::string& name,
                                          const std::vector<std::string>& models, double timeout_s = 120) {
  std::string text = "[plan]\nname = \"" + name + "\"\nmode = \"accuracy\"\n\n[defaults]\nbackends = [\"cpu\"]\n"
                     "precisions = [\"f32\"]\ntimeout_s = " + std::to_string(timeout_s) + "\n";
  for (const auto& m : models) text += "\n[[models]]\nname = \"selftest:" + m + "\"\n";
  return write_file(path, text);
}

// A coordinator that stays up (no --exit-when-done) with health jobs on, and one worker.
struct LiveCoordinator {
  std::unique_ptr<Process> serve;
  std::unique_ptr<Process> worker;
  std::string endpoint;
};

LiveCoordinator start_live(const ScratchDir& dir, const std::filesystem::path& plan, const std::filesystem::path& db,
                           const std::vector<std::string>& serve_extra = {}) {
  LiveCoordinator c;
  std::vector<std::string> args = {coordinator_binary().string(), "--log-level", "info", "serve", "--plan",
                                   plan.string(), "--db", db.string(), "--bind", "tcp://127.0.0.1:*",
                                   "--catalog", catalog_dir(), "--endpoint-file", (dir / "ep").string(), "--quiet",
                                   "--heartbeat-ms", "100", "--liveness", "20"};
  args.insert(args.end(), serve_extra.begin(), serve_extra.end());
  c.serve = std::make_unique<Process>(args, dir / "serve.log");
  c.endpoint = wait_for_endpoint(dir / "ep");
  return c;
}

// `serve` of `plan` started again on the same database and endpoint (its workers reconnect to it).
std::vector<std::string> restart_args(const std::filesystem::path& plan, const std::filesystem::path& db,
                                      const std::string& endpoint, const std::vector<std::string>& extra = {}) {
  std::vector<std::string> args = {coordinator_binary().string(), "--log-level", "info", "serve", "--plan",
                                   plan.string(), "--db", db.string(), "--bind", endpoint, "--catalog",
                                   catalog_dir(), "--quiet", "--heartbeat-ms", "100", "--liveness", "20"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

TEST(Control, StatusSubmitCancelDrainAndRunsSteerALiveCoordinator) {
  ScratchDir dir("control");
  const auto db = dir / "c.db";
  const auto first = write_selftest_plan(dir / "first.toml", "first", {"pass", "fail"});
  LiveCoordinator c = start_live(dir, first, db);
  ASSERT_FALSE(c.endpoint.empty()) << c.serve->log();
  c.worker = std::make_unique<Process>(worker_args(c.endpoint, "w1", dir), dir / "w1.log");

  // The first plan completes; status shows it, the worker and its devices, healthy.
  std::optional<json> st;
  ASSERT_TRUE(wait_until([&] {
    st = status_of(db);
    const json* r = st ? find_run(*st, "first") : nullptr;
    return r != nullptr && (*r)["done"] == 2;
  }, 60s)) << c.serve->log() << (st ? st->dump(2) : std::string("no status"));
  EXPECT_EQ((*st)["coordinator"]["database"], db.string());
  EXPECT_EQ((*find_run(*st, "first"))["by_status"], (json{{"pass", 1}, {"fail", 1}}));
  ASSERT_EQ((*st)["workers"].size(), 1u);
  const json& w = (*st)["workers"][0];
  EXPECT_EQ(w["worker_id"], "w1");
  bool cpu_healthy = false;
  for (const json& d : w["devices"]) {
    if (d["key"] == "cpu:0") cpu_healthy = d["condition"] == "healthy" && d["last_health_check_passed"] == true;
  }
  EXPECT_TRUE(cpu_healthy) << w.dump(2);
  // A finished run's elapsed time ends with it; it does not grow with the coordinator's uptime.
  ASSERT_TRUE(wait_until([&] { return sql_int(db, "SELECT COUNT(*) FROM runs WHERE run_id = 'first' AND finished_at > 0") == 1; }, 10s));
  st = status_of(db);
  const double elapsed = (*find_run(*st, "first"))["elapsed_s"].get<double>();
  std::this_thread::sleep_for(1500ms);
  st = status_of(db);
  EXPECT_DOUBLE_EQ((*find_run(*st, "first"))["elapsed_s"].get<double>(), elapsed) << st->dump(2);
  // The health job ran on cpu:0 before its first run job was leased.
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM device_events WHERE worker_id = 'w1' AND device = 'cpu:0' "
                        "AND event = 'health_pass' AND at <= (SELECT MIN(leased_at) FROM attempts "
                        "WHERE worker_id = 'w1' AND device = 'cpu:0')"),
            1);

  // The human form names the run and the worker.
  int code = -1;
  const std::string text = run_capture(cli({"status"}, db), &code);
  EXPECT_EQ(code, 0);
  EXPECT_NE(text.find("first  2/2 done (1 fail, 1 pass)"), std::string::npos) << text;
  EXPECT_NE(text.find("w1  host "), std::string::npos) << text;

  // submit: a second plan becomes a second run on the live coordinator.
  const auto hangs = write_selftest_plan(dir / "hangs.toml", "hangs", {"hang", "stubborn", "pass"});
  const std::string submitted = run_capture(cli({"submit", hangs.string()}, db), &code);
  ASSERT_EQ(code, 0) << submitted << c.serve->log();
  EXPECT_NE(submitted.find("submitted run 'hangs': 3 job(s), 3 new"), std::string::npos) << submitted;
  // A plan with an error is refused with the plan's own message, exit 2.
  const auto bad = write_file(dir / "bad.toml", "[plan]\nname = \"bad\"\n[[models]]\nname = \"no-such-model\"\n");
  const std::string refused = run_capture(cli({"submit", bad.string()}, db), &code);
  EXPECT_EQ(code, 2);

  // The hang job runs on the worker (one slot): status lists it with its model.
  std::string hang_job;
  ASSERT_TRUE(wait_until([&] {
    st = status_of(db);
    if (!st || (*st)["workers"].empty()) return false;
    for (const json& j : (*st)["workers"][0]["jobs"]) {
      if (j["model"] == "selftest:hang") hang_job = j["job_id"];
    }
    return !hang_job.empty();
  }, 30s)) << c.serve->log();
  ASSERT_TRUE(wait_until([&] { return !children_of(c.worker->pid()).empty(); }, 10s)) << "the job process runs";
  // No job of the run has finished: no ETA (the first run's quick jobs say nothing of a hang).
  ASSERT_NE(find_run(*st, "hangs"), nullptr);
  EXPECT_TRUE((*find_run(*st, "hangs"))["eta_s"].is_null()) << st->dump(2);

  // cancel the run: every job ends cancelled; the running job's process is killed.
  const std::string cancelled = run_capture(cli({"cancel", "hangs"}, db), &code);
  ASSERT_EQ(code, 0) << cancelled;
  EXPECT_NE(cancelled.find("cancelled 3 job(s) of run 'hangs' (1 were running"), std::string::npos) << cancelled;
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM jobs WHERE run_id = 'hangs' AND status = 'cancelled'"), 3);
  EXPECT_TRUE(wait_until([&] { return children_of(c.worker->pid()).empty(); }, 10s))
      << "the cancelled job's process still runs\n" << c.worker->log();
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM attempts WHERE run_id = 'hangs' AND job_id = '" + hang_job +
                        "' AND status = 'cancelled' AND state = 'done'"),
            1);
  EXPECT_TRUE(wait_until([&] { return sql_int(db, "SELECT COUNT(*) FROM runs WHERE run_id = 'hangs' AND finished_at > 0") == 1; }, 5s))
      << "a run whose jobs are all terminal is finished";
  // Unknown ids are named, exit 2.
  const std::string unknown = run_capture(cli({"cancel", "no-such-run"}, db), &code);
  EXPECT_EQ(code, 2);

  // runs: both runs with their counts, from the database alone.
  const std::string runs = run_capture({coordinator_binary().string(), "runs", "--db", db.string(), "--json"}, &code);
  ASSERT_EQ(code, 0) << runs;
  const json listed = json::parse(runs);
  ASSERT_EQ(listed.size(), 2u);
  for (const json& r : listed) {
    if (r["run_id"] == "hangs") EXPECT_EQ(r["by_status"], (json{{"cancelled", 3}}));
    if (r["run_id"] == "first") EXPECT_EQ(r["jobs"], 2);
  }

  // drain: the worker gets DRAIN, finishes (nothing held) and exits 0; status no longer lists it.
  const std::string drained = run_capture(cli({"drain", "w1"}, db), &code);
  ASSERT_EQ(code, 0) << drained;
  EXPECT_EQ(c.worker->wait(20s), 0) << c.worker->log();
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM device_events WHERE worker_id = 'w1' AND event = 'drained'"), 1);
  ASSERT_TRUE(wait_until([&] {
    st = status_of(db);
    return st && (*st)["workers"].empty();
  }, 10s));
  run_capture(cli({"drain", "w1"}, db), &code);
  EXPECT_EQ(code, 2) << "draining a worker that is not connected is an input error";

  c.serve->terminate();
  EXPECT_EQ(c.serve->wait(20s), 1) << "every job is terminal and one failed\n" << c.serve->log();
  EXPECT_NE(c.serve->log().find("runs 'first', 'hangs': "), std::string::npos)
      << "the verdict names every run it covers\n" << c.serve->log();
  // Without a coordinator: exit 4 with a message that points at `runs`.
  const std::string gone = run_capture(cli({"status"}, db), &code);
  EXPECT_EQ(code, 4);
  EXPECT_NE(gone.find("accelmatrix runs"), std::string::npos) << gone;
  // A database that does not exist is named as such, not as a lock file that names nobody.
  const std::string missing = run_capture(cli({"status"}, db.parent_path() / "nowhere.db"), &code);
  EXPECT_EQ(code, 4) << missing;
  EXPECT_NE(missing.find("there is no such database"), std::string::npos) << missing;
  EXPECT_FALSE(std::filesystem::exists(db.parent_path() / "nowhere.db")) << missing;
}

// The ids `accelmatrix plan` lists are plan-job ids; an each-class plan job becomes a job of its
// own id per class. `cancel` takes the listed id: for the jobs made of it and for classes to come.
TEST(Control, CancelTakesThePlanJobIdThatPlanListsForItsJobsAndForClassesToCome) {
  ScratchDir dir("ctl-planjob");
  const auto db = dir / "p.db";
  const auto plan = write_selftest_plan(dir / "pj.toml", "pj", {"hang", "pass"});
  int code = -1;
  const std::string listed =
      run_capture({coordinator_binary().string(), "plan", plan.string(), "--json", "--catalog", catalog_dir()}, &code);
  ASSERT_EQ(code, 0) << listed;
  std::string hang_id, pass_id;
  for (const json& j : json::parse(listed)) {
    (j["spec"]["model"] == "selftest:hang" ? hang_id : pass_id) = j["job_id"].get<std::string>();
  }
  ASSERT_FALSE(hang_id.empty() || pass_id.empty()) << listed;

  Process serve(serve_args(plan, db, "tcp://127.0.0.1:*", dir / "ep"), dir / "serve.log");
  const std::string ep = wait_for_endpoint(dir / "ep");
  ASSERT_FALSE(ep.empty()) << serve.log();
  // Placed nowhere yet: it ends as its stand-in, cancelled.
  std::string out = run_capture(cli({"cancel", pass_id}, db), &code);
  ASSERT_EQ(code, 0) << out << serve.log();
  EXPECT_NE(out.find("cancelled 1 job(s) made of plan job " + pass_id + " in run 'pj'"), std::string::npos) << out;
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM jobs WHERE job_id = '" + pass_id + "' AND status = 'cancelled'"), 1);

  // A class registers: the hang plan job gets its job and it runs; the cancelled one gets none.
  Process worker(worker_args(ep, "w", dir), dir / "w.log");
  ASSERT_TRUE(wait_until([&] {
    return sql_int(db, "SELECT COUNT(*) FROM attempts a JOIN jobs j ON j.run_id = a.run_id AND j.job_id = a.job_id "
                       "WHERE j.plan_job_id = '" + hang_id + "' AND a.state = 'leased'") == 1;
  }, 60s)) << serve.log();
  out = run_capture(cli({"cancel", hang_id}, db), &code);
  ASSERT_EQ(code, 0) << out;
  EXPECT_NE(out.find("cancelled 1 job(s) made of plan job " + hang_id), std::string::npos) << out;
  EXPECT_NE(out.find("1 were running"), std::string::npos) << out;
  EXPECT_EQ(serve.wait(60s), 0) << "cancelled is an accepted status\n" << serve.log();
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM jobs WHERE plan_job_id = '" + hang_id + "' AND job_id <> '" + hang_id +
                            "' AND status = 'cancelled'"), 1);
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM jobs WHERE plan_job_id = '" + pass_id + "' AND job_id <> '" + pass_id + "'"),
            0) << "a cancelled plan job makes no job for a class registering later";
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM attempts WHERE status = 'pass'"), 0);
}

// A plan job settled `skipped` for want of hardware, cancelled: its stand-in becomes `cancelled`
// (a skipped one would give way to the first class of its backend that came, restart or not).
TEST(Control, CancellingAPlanJobSkippedForWantOfHardwareMakesItsStandInCancelled) {
  ScratchDir dir("ctl-cancel-skipped");
  const auto db = dir / "s.db";
  const auto plan = write_file(dir / "gpu.toml",
                               "[plan]\nname = \"gpu\"\nmode = \"accuracy\"\n\n[defaults]\nprecisions = [\"f32\"]\n"
                               "timeout_s = 60\n\n[[models]]\nname = \"selftest:pass\"\nbackends = [\"cpu\"]\n\n"
                               "[[models]]\nname = \"selftest:pass\"\nbackends = [\"cuda\"]\n");
  LiveCoordinator c = start_live(dir, plan, db, {"--expect-workers", "1"});
  ASSERT_FALSE(c.endpoint.empty()) << c.serve->log();
  c.worker = std::make_unique<Process>(worker_args(c.endpoint, "w1", dir), dir / "w1.log");
  ASSERT_TRUE(wait_until([&] { return sql_int(db, "SELECT COUNT(*) FROM jobs WHERE state = 'done'") == 2; }, 60s))
      << c.serve->log();
  const auto cuda = sql_rows(db, "SELECT job_id FROM jobs WHERE status = 'skipped'");
  ASSERT_EQ(cuda.size(), 1u) << c.serve->log();
  int code = -1;
  const std::string out = run_capture(cli({"cancel", cuda[0][0]}, db), &code);
  ASSERT_EQ(code, 0) << out << c.serve->log();
  EXPECT_NE(out.find("hardware registering later gets none of it\n"), std::string::npos) << out;
  EXPECT_EQ(sql_rows(db, "SELECT status FROM jobs WHERE job_id = '" + cuda[0][0] + "'"),
            (std::vector<std::vector<std::string>>{{"cancelled"}}));
}

// A run this coordinator does not serve (another `serve --plan` made it): a worker's held RESULT
// for a lease of it is stored in it and ACKed (before: dropped as forged, and the job ran again
// once the lease ran out).
TEST(Control, AResultOfARunTheRestartDoesNotServeIsStoredAndAcknowledged) {
  ScratchDir dir("ctl-unserved-restart");
  const auto db = dir / "r.db";
  const auto own = write_selftest_plan(dir / "own.toml", "own", {"pass"});
  const auto other = write_selftest_plan(dir / "other.toml", "other", {"hang"}, /*timeout_s=*/6);
  LiveCoordinator c = start_live(dir, other, db);
  ASSERT_FALSE(c.endpoint.empty()) << c.serve->log();
  c.worker = std::make_unique<Process>(worker_args(c.endpoint, "w1", dir), dir / "w1.log");
  ASSERT_TRUE(wait_until([&] { return sql_int(db, "SELECT COUNT(*) FROM attempts WHERE run_id = 'other' AND state = 'leased'") == 1; },
                         30s)) << c.serve->log();
  const std::string held = sql_rows(db, "SELECT job_id FROM attempts WHERE run_id = 'other'")[0][0];
  c.serve->kill_hard();
  c.serve->wait(10s);
  // Another plan on the same database and endpoint (the worker reconnects to it).
  Process restarted(restart_args(own, db, c.endpoint), dir / "serve2.log");
  // While the worker still runs it, status says what takes its slot (it showed the worker idle).
  std::optional<json> st;
  ASSERT_TRUE(wait_until([&] {
    st = status_of(db);
    return st && !(*st)["workers"].empty() && !(*st)["workers"][0]["jobs"].empty();
  }, 20s)) << restarted.log();
  const json& job = (*st)["workers"][0]["jobs"][0];
  EXPECT_EQ(job["job_id"], held) << st->dump(2);
  EXPECT_EQ(job["run_id"], "other") << st->dump(2);
  EXPECT_EQ(job["served"], false) << st->dump(2);
  int code = -1;
  const std::string text = run_capture(cli({"status"}, db), &code);
  EXPECT_NE(text.find("holds " + held + " (attempt 1) of run other, not served here"), std::string::npos) << text;
  ASSERT_TRUE(wait_until([&] { return sql_int(db, "SELECT COUNT(*) FROM jobs WHERE run_id = 'other' AND status = 'timeout'") == 1; },
                         60s)) << restarted.log() << c.worker->log();
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM attempts WHERE run_id = 'other'"), 1) << "the held result, not a rerun";
  EXPECT_NE(restarted.log().find("stored in run other, which this coordinator does not serve"), std::string::npos)
      << restarted.log();
  // Its result in, the worker holds nothing any more.
  st = status_of(db);
  ASSERT_TRUE(st.has_value());
  for (const json& w : (*st)["workers"]) {
    for (const json& j : w["jobs"]) EXPECT_FALSE(j.contains("served")) << st->dump(2);
  }
  restarted.terminate();
  restarted.wait(20s);
}

// A run that finished before a restart keeps its stored elapsed time in status (it grew with the
// restarted coordinator's uptime).
TEST(Control, AFinishedRunsElapsedTimeStaysFixedAfterARestart) {
  ScratchDir dir("ctl-elapsed-restart");
  const auto db = dir / "e.db";
  const auto plan = write_selftest_plan(dir / "t1.toml", "t1", {"pass"});
  LiveCoordinator c = start_live(dir, plan, db, {"--health-interval", "0"});
  ASSERT_FALSE(c.endpoint.empty()) << c.serve->log();
  c.worker = std::make_unique<Process>(worker_args(c.endpoint, "w1", dir), dir / "w1.log");
  ASSERT_TRUE(wait_until([&] { return sql_int(db, "SELECT COUNT(*) FROM runs WHERE run_id = 't1' AND finished_at > 0") == 1; },
                         30s)) << c.serve->log();
  const int64_t stored_ms = sql_int(db, "SELECT finished_at - created_at FROM runs WHERE run_id = 't1'");
  c.serve->terminate();
  c.serve->wait(20s);
  Process restarted(restart_args(plan, db, c.endpoint, {"--health-interval", "0"}), dir / "serve2.log");
  std::optional<json> st;
  ASSERT_TRUE(wait_until([&] { st = status_of(db); return st && find_run(*st, "t1") != nullptr; }, 20s)) << restarted.log();
  const double first = (*find_run(*st, "t1"))["elapsed_s"].get<double>();
  EXPECT_NEAR(first, stored_ms / 1000.0, 0.002) << st->dump(2);
  std::this_thread::sleep_for(1200ms);
  st = status_of(db);
  ASSERT_TRUE(st.has_value());
  EXPECT_DOUBLE_EQ((*find_run(*st, "t1"))["elapsed_s"].get<double>(), first) << st->dump(2);
  restarted.terminate();
  restarted.wait(20s);
}

// A drained worker still finishing its job when the coordinator is killed and restarted stays
// draining (it says so in its HELLO, protocol 1.6): before, the new session took new jobs' place
// in status as a worker with free slots, and its slots counted in the ETA.
TEST(Control, ADrainSurvivesACoordinatorRestart) {
  ScratchDir dir("ctl-drain-restart");
  const auto db = dir / "d.db";
  const auto plan = write_selftest_plan(dir / "dr.toml", "dr", {"hang", "pass"}, /*timeout_s=*/8);
  LiveCoordinator c = start_live(dir, plan, db, {"--health-interval", "0"});
  ASSERT_FALSE(c.endpoint.empty()) << c.serve->log();
  c.worker = std::make_unique<Process>(worker_args(c.endpoint, "w1", dir), dir / "w1.log");
  ASSERT_TRUE(wait_until([&] { return !children_of(c.worker->pid()).empty(); }, 30s)) << c.serve->log();
  const std::string running = sql_rows(db, "SELECT job_id FROM attempts WHERE state = 'leased'")[0][0];
  int code = -1;
  const std::string drained = run_capture(cli({"drain", "w1"}, db), &code);
  ASSERT_EQ(code, 0) << drained;
  ASSERT_TRUE(wait_until([&] { return c.worker->log().find("draining:") != std::string::npos; }, 10s));
  c.serve->kill_hard();
  c.serve->wait(10s);

  Process restarted(restart_args(plan, db, c.endpoint, {"--health-interval", "0"}), dir / "serve2.log");
  std::optional<json> st;
  ASSERT_TRUE(wait_until([&] { st = status_of(db); return st && !(*st)["workers"].empty(); }, 20s)) << restarted.log();
  EXPECT_EQ((*st)["workers"][0]["draining"], true) << st->dump(2);
  // It takes nothing new: the other job stays queued until the worker has left.
  EXPECT_EQ(c.worker->wait(30s), 0) << c.worker->log();
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM attempts WHERE job_id <> '" + running + "'"), 0) << restarted.log();
  restarted.terminate();
  restarted.wait(20s);
}

// A perf job's lease recovered from the store after a kill -9 keeps its device: the device stays
// held alone (a second perf job was started beside it on the same cores, PROTOCOL §5.12), and
// `status` shows where it runs and for how long (the device was '' and running_s missing).
TEST(Control, ARestartKeepsARecoveredPerfLeaseOnItsDeviceAloneAndInStatus) {
  ScratchDir dir("ctl-recovered-perf");
  const auto db = dir / "p.db";
  const auto plan = write_file(dir / "excl.toml",
                               "[plan]\nname = \"excl\"\nmode = \"both\"\n\n[defaults]\nbackends = [\"cpu\"]\n"
                               "precisions = [\"f32\"]\nseq_len = [16, 32]\ntimeout_s = 60\n\n"
                               "[[models]]\nname = \"selftest:hang\"\n");
  LiveCoordinator c = start_live(dir, plan, db, {"--health-interval", "0"});
  ASSERT_FALSE(c.endpoint.empty()) << c.serve->log();
  c.worker = std::make_unique<Process>(worker_args(c.endpoint, "w1", dir, /*slots=*/2), dir / "w1.log");
  const auto leased = [&] { return sql_int(db, "SELECT COUNT(*) FROM attempts WHERE state = 'leased'"); };
  ASSERT_TRUE(wait_until([&] { return leased() == 1 && !children_of(c.worker->pid()).empty(); }, 30s))
      << c.serve->log();
  std::this_thread::sleep_for(500ms);
  ASSERT_EQ(leased(), 1) << "two slots, one device: the perf jobs take it one at a time";
  c.serve->kill_hard();
  c.serve->wait(10s);

  Process restarted(restart_args(plan, db, c.endpoint, {"--health-interval", "0"}), dir / "serve2.log");
  std::optional<json> st;
  ASSERT_TRUE(wait_until([&] {
    st = status_of(db);
    return st && !(*st)["workers"].empty() && !(*st)["workers"][0]["jobs"].empty();
  }, 30s)) << restarted.log();
  // Give the restarted coordinator time to hand the free slot out, as it did before the fix.
  std::this_thread::sleep_for(2s);
  st = status_of(db);
  ASSERT_TRUE(st.has_value());
  const json& jobs = (*st)["workers"][0]["jobs"];
  ASSERT_EQ(jobs.size(), 1u) << st->dump(2) << restarted.log();
  EXPECT_EQ(jobs[0]["device"], "cpu:0") << st->dump(2);
  EXPECT_TRUE(jobs[0].contains("running_s") && jobs[0]["running_s"].get<double>() > 0.5) << st->dump(2);
  EXPECT_EQ(leased(), 1) << restarted.log();
  restarted.terminate();
  restarted.wait(20s);
}

// A coordinator killed while it served a run submitted to it goes on with that run when it is
// started again with its own plan: the plan's text was kept with the run (schema 8). Before, the
// submitted run's queued jobs waited until someone sent its plan again.
TEST(Control, ARestartedServeGoesOnWithTheRunsSubmittedToIt) {
  ScratchDir dir("ctl-submitted-restart");
  const auto db = dir / "r.db";
  const auto own = write_selftest_plan(dir / "own.toml", "own", {"pass"});
  const auto sub = write_selftest_plan(dir / "sub.toml", "sub", {"hang", "fail"}, /*timeout_s=*/3);
  LiveCoordinator c = start_live(dir, own, db);
  ASSERT_FALSE(c.endpoint.empty()) << c.serve->log();
  c.worker = std::make_unique<Process>(worker_args(c.endpoint, "w1", dir), dir / "w1.log");
  ASSERT_TRUE(wait_until([&] { return sql_int(db, "SELECT COUNT(*) FROM jobs WHERE run_id = 'own' AND state = 'done'") == 1; },
                         60s)) << c.serve->log();
  int code = -1;
  std::string out = run_capture(cli({"submit", sub.string()}, db), &code);
  ASSERT_EQ(code, 0) << out;
  // The same plan again stores nothing new, and no second copy of its text.
  out = run_capture(cli({"submit", sub.string()}, db), &code);
  ASSERT_EQ(code, 0) << out;
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM run_submissions WHERE run_id = 'sub'"), 1);
  // Killed with the hang job running and the other one queued behind it (one slot).
  ASSERT_TRUE(wait_until([&] { return sql_int(db, "SELECT COUNT(*) FROM attempts WHERE run_id = 'sub' AND state = 'leased'") == 1; },
                         30s)) << c.serve->log();
  ASSERT_EQ(sql_int(db, "SELECT COUNT(*) FROM jobs WHERE run_id = 'sub' AND state = 'queued'"), 1);
  c.serve->kill_hard();
  c.serve->wait(10s);
  Process restarted(restart_args(own, db, c.endpoint, {"--exit-when-done", "--fail-on", "crash"}), dir / "serve2.log");
  EXPECT_EQ(restarted.wait(60s), 0) << restarted.log() << c.worker->log();
  EXPECT_NE(restarted.log().find("run sub: served again from the plan(s) submitted for it"), std::string::npos)
      << restarted.log();
  EXPECT_EQ(sql_rows(db, "SELECT status, attempts FROM jobs WHERE run_id = 'sub' ORDER BY seq"),
            (std::vector<std::vector<std::string>>{{"timeout", "1"}, {"fail", "1"}}))
      << "the held result of the running job, and the queued job run once";
  EXPECT_GT(sql_int(db, "SELECT finished_at FROM runs WHERE run_id = 'sub'"), 0);
}

// Runs extended over the control socket (found by a tester): a restart served only a run's last
// plan, so the plan jobs of the first waited for good and the run was marked finished; and a run
// of the coordinator's own plan extended by a submitted one refused `serve --plan` of that plan
// (exit 2, so systemd gave up). Every plan a run followed is served again as part of it.
TEST(Control, ARestartServesEveryPlanOfARunExtendedOverTheControlSocket) {
  ScratchDir dir("ctl-extended-restart");
  const auto db = dir / "r.db";
  const auto own = write_selftest_plan(dir / "own.toml", "own", {"pass"});
  const auto own_more = write_selftest_plan(dir / "own_more.toml", "own", {"fail"});
  const auto sub = write_selftest_plan(dir / "sub.toml", "sub", {"pass"});
  const auto sub_more = write_selftest_plan(dir / "sub_more.toml", "sub", {"noresult"});
  LiveCoordinator c = start_live(dir, own, db);
  ASSERT_FALSE(c.endpoint.empty()) << c.serve->log();
  int code = -1;
  for (const auto& args : std::vector<std::vector<std::string>>{{"submit", sub.string()},
                                                               {"submit", sub_more.string(), "--extend"},
                                                               {"submit", own_more.string(), "--extend"}}) {
    const std::string out = run_capture(cli(args, db), &code);
    ASSERT_EQ(code, 0) << out;
  }
  c.serve->kill_hard();
  c.serve->wait(10s);
  Process restarted(restart_args(own, db, c.endpoint, {"--exit-when-done", "--fail-on", "crash"}), dir / "serve2.log");
  Process worker(worker_args(c.endpoint, "w1", dir), dir / "w1.log");
  EXPECT_EQ(restarted.wait(60s), 0) << restarted.log();
  EXPECT_EQ(sql_rows(db, "SELECT run_id, status FROM jobs ORDER BY run_id, status"),
            (std::vector<std::vector<std::string>>{{"own", "fail"}, {"own", "pass"}, {"sub", "error"}, {"sub", "pass"}}))
      << restarted.log();
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM runs WHERE finished_at > 0"), 2);
}

// A run served from its older plan after another extended it (found by a tester): the newer
// plan's plan jobs no hardware had taken yet were never made, the run was marked finished and
// `--exit-when-done` exited 0 without running them. The run's stored plan jobs are all served.
TEST(Control, ARunServedFromItsOlderPlanStillMakesTheJobsItsNewerPlanAdded) {
  ScratchDir dir("ctl-older-plan");
  const auto db = dir / "o.db";
  const auto older = write_selftest_plan(dir / "a.toml", "p", {"pass"});
  const auto newer = write_selftest_plan(dir / "b.toml", "p", {"pass", "fail"});
  for (const auto& [plan, extra] : std::vector<std::pair<std::filesystem::path, std::string>>{{older, ""}, {newer, "--extend"}}) {
    std::vector<std::string> args = {coordinator_binary().string(), "serve", "--plan", plan.string(), "--db", db.string(),
                                     "--bind", "tcp://127.0.0.1:*", "--catalog", catalog_dir(), "--quiet",
                                     "--endpoint-file", (dir / "ep").string()};
    if (!extra.empty()) args.push_back(extra);
    std::filesystem::remove(dir / "ep");
    Process serve(args, dir / "first.log");
    ASSERT_FALSE(wait_for_endpoint(dir / "ep").empty()) << serve.log();
    serve.terminate();
    serve.wait(20s);
  }
  std::filesystem::remove(dir / "ep");
  Process serve(serve_args(older, db, "tcp://127.0.0.1:*", dir / "ep"), dir / "serve.log");
  const std::string ep = wait_for_endpoint(dir / "ep");
  ASSERT_FALSE(ep.empty()) << serve.log();
  Process worker(worker_args(ep, "w", dir), dir / "w.log");
  EXPECT_EQ(serve.wait(60s), 1) << "the newer plan's fail job ran\n" << serve.log();
  EXPECT_EQ(sql_rows(db, "SELECT status FROM jobs ORDER BY status"),
            (std::vector<std::vector<std::string>>{{"fail"}, {"pass"}})) << serve.log();
}

// A submitted plan that no longer makes its run's jobs (another catalog or build; here its
// stored text edited) is not served by the restart: logged, and left for its client to submit
// again. The coordinator serves its own plan as before.
TEST(Control, ASubmittedPlanThatNoLongerMakesItsRunIsLeftForItsClient) {
  ScratchDir dir("ctl-submitted-changed");
  const auto db = dir / "r.db";
  const auto own = write_selftest_plan(dir / "own.toml", "own", {"pass"});
  const auto sub = write_selftest_plan(dir / "sub.toml", "sub", {"pass"});
  {
    LiveCoordinator c = start_live(dir, own, db);
    ASSERT_FALSE(c.endpoint.empty()) << c.serve->log();
    int code = -1;
    const std::string out = run_capture(cli({"submit", sub.string()}, db), &code);
    ASSERT_EQ(code, 0) << out;
    c.serve->terminate();
    c.serve->wait(20s);
  }
  sql_exec(db, "UPDATE run_submissions SET plan_text = replace(plan_text, 'selftest:pass', 'selftest:fail')");
  std::filesystem::remove(dir / "ep");
  LiveCoordinator c = start_live(dir, own, db);
  ASSERT_FALSE(c.endpoint.empty()) << c.serve->log();
  std::optional<json> st;
  ASSERT_TRUE(wait_until([&] { return (st = status_of(db)).has_value(); }, 20s)) << c.serve->log();
  EXPECT_NE(find_run(*st, "own"), nullptr) << st->dump();
  EXPECT_EQ(find_run(*st, "sub"), nullptr) << st->dump();
  EXPECT_NE(c.serve->log().find("run sub: plan " + sub.string() + " submitted for it (#1) is not served again"),
            std::string::npos) << c.serve->log();
  EXPECT_NE(c.serve->log().find("run sub: none of the plans submitted for it is served after this restart"),
            std::string::npos) << c.serve->log();
  EXPECT_NE(c.serve->log().find("1 unfinished run(s) of " + db.string() + " are not served by this coordinator (sub)"),
            std::string::npos) << c.serve->log();
  c.serve->terminate();
  c.serve->wait(20s);
}

// One plan as two runs on one coordinator: its jobs' ids hash the run id, so the second run gets
// jobs of its own (before: none, and the run was marked finished with every job queued).
TEST(Control, OnePlanSubmittedAsASecondRunRunsEveryJobAgainUnderItsOwnIds) {
  ScratchDir dir("ctl-tworuns");
  const auto db = dir / "t.db";
  const std::string text = "[plan]\nname = \"twice\"\nmode = \"accuracy\"\n\n[defaults]\nbackends = [\"cpu\"]\n"
                           "precisions = [\"f32\"]\ntimeout_s = 60\n\n[[models]]\nname = \"selftest:pass\"\n"
                           "batch = [1, 2]\n\n[[models]]\nname = \"selftest:pass\"\nbatch = [3]\nplacement = \"any\"\n";
  const auto plan = write_file(dir / "twice.toml", text);
  Process serve(serve_args(plan, db, "tcp://127.0.0.1:*", dir / "ep"), dir / "serve.log");
  const std::string ep = wait_for_endpoint(dir / "ep");
  ASSERT_FALSE(ep.empty()) << serve.log();
  int code = -1;
  const std::string out = run_capture(cli({"submit", plan.string(), "--run", "again"}, db), &code);
  ASSERT_EQ(code, 0) << out;
  EXPECT_NE(out.find("submitted run 'again': "), std::string::npos) << out;
  const std::string bad = run_capture(cli({"submit", plan.string(), "--run", "a b"}, db), &code);
  EXPECT_EQ(code, 2) << bad;
  Process worker(worker_args(ep, "w", dir), dir / "w.log");
  EXPECT_EQ(serve.wait(60s), 0) << serve.log();
  for (const std::string run : {"twice", "again"}) {
    EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM jobs WHERE run_id = '" + run + "' AND status = 'pass'"), 3) << run;
  }
  EXPECT_EQ(sql_int(db, "SELECT COUNT(DISTINCT job_id) FROM jobs"), 6) << "no id shared by the two runs";
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM attempts WHERE status = 'pass'"), 6);
}

TEST(Control, CrashesOnDifferentModelsQuarantineADeviceUntilItsHealthJobPassesAgain) {
  ScratchDir dir("control-quarantine");
  const auto db = dir / "q.db";
  // abort crashes; hang and stubborn time out after 1 s. (Not segv: under AddressSanitizer its
  // handler turns SIGSEGV into exit 1, an `error`; and sigkill is stored as oom, which never
  // quarantines.)
  const auto plan = write_selftest_plan(dir / "q.toml", "q", {"abort", "hang", "stubborn", "pass"}, 1.0);
  LiveCoordinator c = start_live(dir, plan, db,
                                 {"--exit-when-done", "--quarantine-after", "3", "--quarantine-backoff", "1.5"});
  ASSERT_FALSE(c.endpoint.empty()) << c.serve->log();
  c.worker = std::make_unique<Process>(worker_args(c.endpoint, "qw", dir), dir / "qw.log");
  // Three crash/timeout outcomes on three models quarantine cpu:0; 1.5 s later its health job passes and lifts
  // it; then the pass job runs and the run completes (exit 1: crashes are --fail-on statuses).
  EXPECT_EQ(c.serve->wait(90s), 1) << c.serve->log();
  const auto events = sql_rows(db, "SELECT event, reason FROM device_events WHERE worker_id = 'qw' AND "
                                   "device = 'cpu:0' ORDER BY id");
  std::vector<std::string> names;
  for (const auto& row : events) names.push_back(row[0]);
  EXPECT_EQ(names, (std::vector<std::string>{"health_pass", "quarantined", "health_pass", "lifted"}));
  ASSERT_GE(events.size(), 2u);
  EXPECT_NE(events[1][1].find("selftest:abort (crash) selftest:hang (timeout) selftest:stubborn (timeout)"), std::string::npos)
      << events[1][1];
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM jobs WHERE status = 'pass'"), 1);
  // The pass job was leased only after the lift.
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM attempts a JOIN job_specs j USING (run_id, job_id) WHERE "
                        "j.spec_json LIKE '%selftest:pass%' AND a.leased_at >= (SELECT at FROM device_events "
                        "WHERE event = 'lifted')"),
            1);
}

TEST(Control, ReleaseLiftsAQuarantineAtOnce) {
  ScratchDir dir("control-release");
  const auto db = dir / "r.db";
  const auto plan = write_selftest_plan(dir / "r.toml", "r", {"abort", "hang", "pass"}, 1.0);
  LiveCoordinator c = start_live(dir, plan, db, {"--quarantine-after", "2", "--quarantine-backoff", "3600"});
  ASSERT_FALSE(c.endpoint.empty()) << c.serve->log();
  c.worker = std::make_unique<Process>(worker_args(c.endpoint, "rw", dir), dir / "rw.log");
  std::optional<json> st;
  ASSERT_TRUE(wait_until([&] {
    st = status_of(db);
    if (!st || (*st)["workers"].empty()) return false;
    for (const json& d : (*st)["workers"][0]["devices"]) {
      if (d["key"] == "cpu:0" && d["quarantined"] == true) return true;
    }
    return false;
  }, 60s)) << c.serve->log();
  int code = -1;
  const std::string text = run_capture(cli({"status"}, db), &code);
  EXPECT_NE(text.find("QUARANTINED: 2 crash/timeout outcomes in a row on 2 models"), std::string::npos) << text;
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM jobs WHERE status = 'pass'"), 0) << "a quarantined device runs nothing";

  run_capture(cli({"release", "rw/cpu:9"}, db), &code);
  EXPECT_EQ(code, 2) << "an unknown device is named";
  const std::string released = run_capture(cli({"release", "rw/cpu:0"}, db), &code);
  ASSERT_EQ(code, 0) << released;
  EXPECT_NE(released.find("devices cpu:0"), std::string::npos) << released;
  EXPECT_TRUE(wait_until([&] { return sql_int(db, "SELECT COUNT(*) FROM jobs WHERE status = 'pass'") == 1; }, 30s))
      << c.serve->log();
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM device_events WHERE event = 'released' AND device = 'cpu:0'"), 1);
  c.serve->terminate();
  EXPECT_EQ(c.serve->wait(20s), 1) << "every job is terminal; one crashed, one timed out\n" << c.serve->log();
}

TEST(Control, UnderCurveOnlyAdminKeysMayControlAndAnAdminKeyCannotRegisterAsAWorker) {
  if (!curve_available()) GTEST_SKIP() << "libzmq without CURVE";
  ScratchDir dir("control-curve");
  const auto keys = dir / "keys";
  std::filesystem::create_directories(keys);
  for (const char* name : {"coordinator", "worker", "admin"}) {
    int code = -1;
    run_capture({coordinator_binary().string(), "keys", name, "--out", keys.string()}, &code);
    ASSERT_EQ(code, 0);
  }
  const auto db = dir / "k.db";
  const auto plan = write_selftest_plan(dir / "k.toml", "k", {"hang"});
  LiveCoordinator c = start_live(dir, plan, db,
                                 {"--curve-key", (keys / "coordinator.key").string(), "--curve-allow",
                                  (keys / "worker.pub").string(), "--curve-admin", (keys / "admin.pub").string()});
  ASSERT_FALSE(c.endpoint.empty()) << c.serve->log();
  auto as = [&](const char* key, std::vector<std::string> args, int* code) {
    args.insert(args.end(), {"--coordinator", c.endpoint, "--curve-key", (keys / key).string(), "--curve-server",
                             (keys / "coordinator.pub").string(), "--timeout-ms", "3000"});
    args.insert(args.begin(), coordinator_binary().string());
    return run_capture(args, code);
  };
  int code = -1;
  // A worker key reaches the coordinator (it is on the allow-list) but may not control it.
  std::string out = as("worker.key", {"cancel", "k"}, &code);
  EXPECT_EQ(code, 2) << out;
  as("worker.key", {"status"}, &code);
  EXPECT_EQ(code, 2);
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM jobs WHERE status = 'cancelled'"), 0);
  // Without any key there is no connection at all: no answer, exit 4.
  run_capture({coordinator_binary().string(), "status", "--coordinator", c.endpoint, "--timeout-ms", "1000"}, &code);
  EXPECT_EQ(code, 4);
  // The admin key may.
  out = as("admin.key", {"status", "--json"}, &code);
  ASSERT_EQ(code, 0) << out;
  EXPECT_EQ(json::parse(out)["coordinator"]["curve"], true);
  out = as("admin.key", {"cancel", "k"}, &code);
  ASSERT_EQ(code, 0) << out;
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM jobs WHERE status = 'cancelled'"), 1);
  // An admin key is not a worker key.
  Process impostor({worker_binary().string(), "--coordinator", c.endpoint, "--id", "adm", "--state-dir",
                    (dir / "adm").string(), "--curve-key", (keys / "admin.key").string(), "--curve-server",
                    (keys / "coordinator.pub").string()},
                   dir / "adm.log");
  EXPECT_EQ(impostor.wait(20s), 2) << impostor.log();
  EXPECT_NE(impostor.log().find("admin allow-list"), std::string::npos) << impostor.log();
  c.serve->terminate();
  EXPECT_EQ(c.serve->wait(20s), 0) << c.serve->log();
}

// Slurm's scancel, `systemctl stop` and Ctrl-C signal the job's process too, not only the
// worker: that death is the stop's doing, not the job's crash (DEPLOY.md). The child is signalled
// first, so its death is seen before the worker's own signal is handled.
TEST(WorkerStop, AStopSignalThatAlsoHitsTheJobProcessInterruptsTheAttemptInsteadOfCrashingIt) {
  ScratchDir dir("control-stop");
  const auto db = dir / "s.db";
  const auto plan = write_selftest_plan(dir / "s.toml", "s", {"hang"});
  LiveCoordinator c = start_live(dir, plan, db);
  ASSERT_FALSE(c.endpoint.empty()) << c.serve->log();
  c.worker = std::make_unique<Process>(worker_args(c.endpoint, "sw", dir), dir / "sw.log");
  std::vector<int> kids;
  ASSERT_TRUE(wait_until([&] {
    kids = children_of(c.worker->pid());
    return !kids.empty() && sql_int(db, "SELECT COUNT(*) FROM attempts WHERE state = 'leased'") == 1;
  }, 30s)) << c.serve->log();
  ASSERT_EQ(::kill(kids.front(), SIGTERM), 0);
  // The worker's own signal comes a moment later (a group kill reaches processes one by one; on
  // a loaded machine the gap grows): long enough that the worker has seen the job die, shorter
  // than the grace it allows (kStopSignalGraceMs, 500 ms).
  std::this_thread::sleep_for(150ms);
  c.worker->terminate();
  EXPECT_EQ(c.worker->wait(20s), 0) << c.worker->log();
  EXPECT_TRUE(wait_until([&] { return sql_int(db, "SELECT COUNT(*) FROM attempts WHERE state = 'interrupted'") == 1; }, 10s))
      << c.serve->log() << c.worker->log();
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM attempts WHERE status = 'crash'"), 0) << c.worker->log();
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM jobs WHERE state = 'queued'"), 1) << "the job runs again";
  c.serve->terminate();
  EXPECT_EQ(c.serve->wait(20s), 3) << "stopped before every job was terminal";
}

}  // namespace
}  // namespace am::testing
