// The spine end to end: real coordinator and worker processes over tcp loopback, real job
// child processes, a real SQLite file. Also the two kill tests: a worker SIGKILLed while it
// holds a job, and the coordinator SIGKILLed mid-run and restarted on the same database.
#include <gtest/gtest.h>

#include <csignal>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "tests/integration/harness.h"

namespace am::testing {
namespace {

using namespace std::chrono_literals;

// Fast failure detection so the kill tests finish in seconds: a peer is dead after
// 5 × 100 ms of silence.
const std::vector<std::string> kFastBeats = {"--heartbeat-ms", "100", "--liveness", "5"};

std::string catalog() { return (source_dir() / "jobs/models").string(); }

// A plan of bert-tiny jobs; `min_time_s` stretches each job so a test can act mid-run.
std::filesystem::path write_plan(const ScratchDir& dir, const std::string& name, double min_time_s,
                                 const std::string& seq_lens, const std::string& precisions) {
  return write_file(dir / (name + ".toml"),
                    "[plan]\nname = \"" + name + "\"\nmode = \"both\"\nseed = 7\n\n"
                    "[defaults]\nbackends = [\"cpu\"]\nprecisions = " + precisions + "\n"
                    "batch = [1]\nseq_len = " + seq_lens + "\nwarmup = 1\nmin_reps = 3\nmax_reps = 100000\n"
                    "min_time_s = " + std::to_string(min_time_s) + "\ntimeout_s = 60\n\n"
                    "[[models]]\nname = \"bert-tiny\"\n");
}

std::vector<std::string> serve_argv(const std::filesystem::path& plan, const std::filesystem::path& db,
                                    const std::string& bind, const std::filesystem::path& endpoint_file,
                                    int expect_workers = 1, const std::string& lease_grace_ms = "5000") {
  std::vector<std::string> a = {coordinator_binary().string(), "--log-level", "info", "serve",
                                "--plan", plan.string(), "--db", db.string(),
                                "--bind", bind, "--catalog", catalog(),
                                "--exit-when-done", "--endpoint-file", endpoint_file.string(),
                                "--expect-workers", std::to_string(expect_workers),
                                "--lease-grace-ms", lease_grace_ms};
  a.insert(a.end(), kFastBeats.begin(), kFastBeats.end());
  return a;
}

std::vector<std::string> worker_argv(const std::string& endpoint, const std::string& id,
                                     const ScratchDir& dir) {
  std::vector<std::string> a = {worker_binary().string(), "--coordinator", endpoint, "--id", id,
                                "--state-dir", (dir / ("state-" + id)).string(),
                                "--reconnect-max-ms", "500", "--log-level", "info"};
  a.insert(a.end(), kFastBeats.begin(), kFastBeats.end());
  return a;
}

std::string wait_endpoint(const std::filesystem::path& file) {
  std::string ep;
  wait_until([&] {
    ep = read_file(file);
    while (!ep.empty() && (ep.back() == '\n' || ep.back() == '\r')) ep.pop_back();
    return !ep.empty();
  }, 20s);
  return ep;
}

nlohmann::json report_json(const std::filesystem::path& db, const ScratchDir& dir) {
  int code = -1;
  const auto out = dir / "report.json";
  std::string log = run_capture({coordinator_binary().string(), "report", "--db", db.string(),
                                 "--format", "json", "--output", out.string()}, &code);
  EXPECT_EQ(code, 0) << log;
  return nlohmann::json::parse(read_file(out), nullptr, false);
}

// Every job of the run has exactly one terminal result, and the attempt it names exists with
// that result.
void expect_each_job_terminal_once(const std::filesystem::path& db, int64_t expected_jobs) {
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM jobs"), expected_jobs);
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM jobs WHERE state = 'done' AND status <> ''"),
            expected_jobs);
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM jobs j JOIN attempts a ON a.run_id = j.run_id AND "
                        "a.job_id = j.job_id AND a.attempt = j.terminal_attempt "
                        "WHERE a.status = j.status"),
            expected_jobs);
}

// Established TCP connections from this host to the port of `endpoint` (tcp://127.0.0.1:PORT),
// counted on the connecting side: /proc/net/tcp lists them once the kernel completed the
// handshake, whether or not the listening process accepted them yet.
int connections_to(const std::string& endpoint) {
  const int port = std::stoi(endpoint.substr(endpoint.rfind(':') + 1));
  char want[8];
  std::snprintf(want, sizeof want, "%04X", port);
  std::istringstream in(read_file("/proc/net/tcp"));
  std::string line;
  std::getline(in, line);   // header
  int n = 0;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string slot, local, remote, state;
    f >> slot >> local >> remote >> state;
    if (state == "01" && remote.size() > 5 && remote.substr(remote.size() - 4) == want) ++n;
  }
  return n;
}

TEST(Spine, SmokePlanCompletesWithTwoWorkersAndReportsEveryJob) {
  ScratchDir dir("smoke");
  const auto db = dir / "s.db";
  const auto ep_file = dir / "endpoint";
  Process serve(serve_argv(source_dir() / "jobs/plans/smoke.toml", db, "tcp://127.0.0.1:*", ep_file, 2),
                dir / "serve.log");
  const std::string ep = wait_endpoint(ep_file);
  ASSERT_FALSE(ep.empty()) << serve.log();
  // Both workers register at the same moment, so neither can take every job before the other
  // is there: the coordinator is frozen until the kernel has accepted both connections, whose
  // HELLOs then wait in its queue together.
  serve.signal(SIGSTOP);
  Process w1(worker_argv(ep, "smoke-a", dir), dir / "w1.log");
  Process w2(worker_argv(ep, "smoke-b", dir), dir / "w2.log");
  const bool both_connected = wait_until([&] { return connections_to(ep) >= 2; }, 30s);
  serve.signal(SIGCONT);
  ASSERT_TRUE(both_connected);

  ASSERT_EQ(serve.wait(120s), 0) << serve.log();
  EXPECT_EQ(w1.wait(15s), 0) << w1.log();
  EXPECT_EQ(w2.wait(15s), 0) << w2.log();

  const auto report = report_json(db, dir);
  ASSERT_TRUE(report.is_object());
  ASSERT_TRUE(report.contains("results"));
  const auto& results = report["results"];
  ASSERT_EQ(results.size(), 4u);   // bert-tiny × {f32, q8_0} × seq {32, 128}
  std::set<std::string> workers;
  for (const auto& r : results) {
    for (const char* key : {"job_id", "model", "architecture", "backend", "precision", "status",
                            "attempt", "worker", "metrics"}) {
      EXPECT_TRUE(r.contains(key)) << key << " missing in " << r.dump();
    }
    EXPECT_EQ(r["model"], "bert-tiny");
    EXPECT_EQ(r["status"], "pass") << r.dump();
    const auto& m = r["metrics"];
    EXPECT_GT(m["latency_ms"]["median"].get<double>(), 0.0);
    EXPECT_GE(m["latency_ms"]["count"].get<int>(), 3);
    EXPECT_TRUE(m["accuracy"]["nmse"].is_number());
    EXPECT_GT(m["accuracy"]["cosine"].get<double>(), 0.99);
#ifdef __linux__
    // Each perf job recorded the host's load and steal time over the job (worker/host_load.h).
    ASSERT_TRUE(m.contains("host")) << m.dump();
    const auto& h = m["host"];
    const int cpus = h["cpus"].get<int>();
    EXPECT_GE(cpus, 1);
    EXPECT_GE(h["load_start"].get<double>(), 0.0);
    EXPECT_GE(h["load_end"].get<double>(), 0.0);
    ASSERT_TRUE(h.contains("steal_fraction")) << h.dump();   // a perf job lasts far beyond a tick
    EXPECT_GE(h["steal_fraction"].get<double>(), 0.0);
    EXPECT_LE(h["steal_fraction"].get<double>(), 1.0);
    EXPECT_GE(h["other_load"].get<double>(), 0.0);
    EXPECT_LE(h["other_load"].get<double>(), cpus);
    EXPECT_TRUE(r["host_busy"].is_boolean()) << r.dump();
#endif
    workers.insert(r["worker"].get<std::string>());
  }
  expect_each_job_terminal_once(db, 4);
  // Both workers ran jobs.
  EXPECT_EQ(workers, (std::set<std::string>{"smoke-a", "smoke-b"}));
  // q8_0 is measurably different from f32 but close; f32 against itself is exact.
  for (const auto& r : results) {
    const double nmse = r["metrics"]["accuracy"]["nmse"].get<double>();
    if (r["precision"] == "f32") EXPECT_LE(nmse, 1e-10);
    if (r["precision"] == "q8_0") EXPECT_GT(nmse, 0.0);
  }
}

TEST(Spine, SubmittingTheSamePlanTwiceAddsNothing) {
  ScratchDir dir("twice");
  const auto db = dir / "t.db";
  const auto plan = write_plan(dir, "twice", 0.05, "[16]", "[\"f32\"]");
  for (int round = 0; round < 2; ++round) {
    const auto ep_file = dir / ("endpoint" + std::to_string(round));
    Process serve(serve_argv(plan, db, "tcp://127.0.0.1:*", ep_file), dir / "serve.log");
    const std::string ep = wait_endpoint(ep_file);
    ASSERT_FALSE(ep.empty()) << serve.log();
    Process w(worker_argv(ep, "twice-w", dir), dir / "w.log");
    ASSERT_EQ(serve.wait(60s), 0) << serve.log();
  }
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM jobs"), 1);
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM attempts"), 1);
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM runs"), 1);
}

TEST(Spine, KilledWorkerJobCompletesOnTheOtherWorker) {
  ScratchDir dir("killworker");
  const auto db = dir / "k.db";
  const auto ep_file = dir / "endpoint";
  // Four jobs of about 1.5 s each.
  const auto plan = write_plan(dir, "killworker", 1.5, "[16, 24]", "[\"f32\", \"q8_0\"]");
  Process serve(serve_argv(plan, db, "tcp://127.0.0.1:*", ep_file), dir / "serve.log");
  const std::string ep = wait_endpoint(ep_file);
  ASSERT_FALSE(ep.empty()) << serve.log();

  auto victim = std::make_unique<Process>(worker_argv(ep, "victim", dir), dir / "victim.log");
  const std::string leased_q =
      "SELECT COUNT(*) FROM attempts WHERE worker_id = 'victim' AND state = 'leased'";
  ASSERT_TRUE(wait_until([&] { return sql_int(db, leased_q) > 0; }, 30s)) << serve.log();
  const auto victim_job = sql_rows(db, "SELECT job_id FROM attempts WHERE worker_id = 'victim' AND "
                                       "state = 'leased'")[0][0];
  Process survivor(worker_argv(ep, "survivor", dir), dir / "survivor.log");
  // Killed once it runs the job (it has answered the lease, so the lease counts as started).
  ASSERT_TRUE(wait_until([&] { return read_file(dir / "victim.log").find("running " + victim_job + "#") !=
                                      std::string::npos; }, 30s))
      << read_file(dir / "victim.log");
  victim->kill_hard();

  ASSERT_EQ(serve.wait(120s), 0) << serve.log();
  expect_each_job_terminal_once(db, 4);
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM jobs WHERE status <> 'pass'"), 0);
  // The victim's job was retried: its terminal result comes from the survivor, attempt >= 2,
  // and the victim's attempt is on record as expired.
  const auto rows = sql_rows(db, "SELECT a.worker_id, j.terminal_attempt FROM jobs j JOIN attempts a "
                                 "ON a.job_id = j.job_id AND a.attempt = j.terminal_attempt "
                                 "WHERE j.job_id = '" + victim_job + "'");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0][0], "survivor");
  EXPECT_GE(std::stoi(rows[0][1]), 2);
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM attempts WHERE job_id = '" + victim_job +
                        "' AND worker_id = 'victim' AND state = 'expired'"), 1);
}

TEST(Spine, RestartedCoordinatorResumesRunWithNothingLostOrDuplicated) {
  ScratchDir dir("killcoord");
  const auto db = dir / "c.db";
  const auto ep_file = dir / "endpoint";
  // Six jobs of about 0.8 s each over two workers.
  const auto plan = write_plan(dir, "killcoord", 0.8, "[16, 24, 40]", "[\"f32\", \"q8_0\"]");
  // Leases of 60 s + 10 min of grace: far beyond any wait below, so the restarted run finishes
  // only if it did not wait for a lease to run out.
  const std::string grace = "600000";
  auto serve = std::make_unique<Process>(serve_argv(plan, db, "tcp://127.0.0.1:*", ep_file, 2, grace),
                                         dir / "serve1.log");
  const std::string ep = wait_endpoint(ep_file);
  ASSERT_FALSE(ep.empty()) << serve->log();
  Process w1(worker_argv(ep, "cw-a", dir), dir / "w1.log");
  Process w2(worker_argv(ep, "cw-b", dir), dir / "w2.log");

  ASSERT_TRUE(wait_until([&] { return sql_int(db, "SELECT COUNT(*) FROM jobs WHERE state = 'done'") >= 2; },
                         60s)) << serve->log();
  serve->kill_hard();
  const int64_t done_before = sql_int(db, "SELECT COUNT(*) FROM jobs WHERE state = 'done'");
  EXPECT_LT(done_before, 6) << "the run finished before the coordinator was killed";

  // Same database, same endpoint: the workers reconnect by themselves. The run must not wait
  // for any lease to run out (it could not finish in the time allowed), because re-registering
  // workers say which attempts they hold (HELLO.held).
  Process restarted(serve_argv(plan, db, ep, dir / "endpoint2", 2, grace), dir / "serve2.log");
  ASSERT_EQ(restarted.wait(120s), 0) << restarted.log();
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM attempts WHERE state = 'expired' AND reason = 'lease expired'"), 0);
  EXPECT_EQ(w1.wait(15s), 0) << w1.log();
  EXPECT_EQ(w2.wait(15s), 0) << w2.log();

  expect_each_job_terminal_once(db, 6);
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM jobs WHERE status <> 'pass'"), 0);
  // No attempt was recorded twice and none is left dangling.
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM attempts WHERE state = 'leased'"), 0);
  const auto report = report_json(db, dir);
  ASSERT_EQ(report["results"].size(), 6u);
  std::set<std::string> ids;
  for (const auto& r : report["results"]) ids.insert(r["job_id"].get<std::string>());
  EXPECT_EQ(ids.size(), 6u);
}

}  // namespace
}  // namespace am::testing
