// Issue 11 items 1, 2 and 5 against real processes over loopback TCP: placement (each-class,
// each-device, any), a late hardware class getting its share of an open run, and perf jobs that
// never share the cores they measure.
//
// Two hardware classes on one machine come from am_class_override_worker (a real worker whose
// devices are filed under "(test class X)", tests/integration/class_override_worker.cpp); every
// job still runs on this machine's CPU in a child process with the real inference core.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "tests/integration/run_helpers.h"

namespace am::testing {
namespace {

std::filesystem::path class_override_worker() { return build_dir() / "tests" / "am_class_override_worker"; }

std::vector<std::string> class_worker_args(const std::string& endpoint, const std::string& id, const ScratchDir& dir,
                                           const std::string& label) {
  std::vector<std::string> a = worker_args(endpoint, id, dir);
  a[0] = class_override_worker().string();
  a.insert(a.begin() + 1, {"--test-class", label});
  return a;
}

std::vector<std::string> with(std::vector<std::string> argv, const std::vector<std::string>& more) {
  argv.insert(argv.end(), more.begin(), more.end());
  return argv;
}

// bert-tiny, 1 layer, accuracy only: jobs of about a second, which may share hardware.
std::filesystem::path write_plan(const ScratchDir& dir, const std::string& name, const std::string& mode,
                                 const std::string& body) {
  return write_file(dir / (name + ".toml"),
                    "[plan]\nname = \"" + name + "\"\nmode = \"" + mode + "\"\nseed = 11\n\n"
                    "[defaults]\nbackends = [\"cpu\"]\nbatch = [1]\nwarmup = 0\nmin_reps = 2\n"
                    "max_reps = 100000\nmin_time_s = 0.2\ntimeout_s = 60\nthreads = 1\n\n" + body);
}

// The class each worker registered its cpu device under, from the stored capability records.
std::map<std::string, std::string> cpu_class_of_workers(const std::filesystem::path& db) {
  std::map<std::string, std::string> out;
  for (const auto& row : sql_rows(db, "SELECT worker_id, capabilities_json FROM workers")) {
    const nlohmann::json caps = nlohmann::json::parse(row[1]);   // not a temporary: the loop keeps a reference
    for (const auto& d : caps["devices"]) {
      if (d["backend"] == "cpu") out[row[0]] = d["hardware_class"].get<std::string>();
    }
  }
  return out;
}

TEST(Placement, EachClassRunsEveryJobOnEveryClassAndALateClassGetsItsShare) {
  ScratchDir dir("place-class");
  const auto db = dir / "p.db";
  const auto ep_file = dir / "endpoint";
  const auto plan = write_plan(dir, "classes", "accuracy",
                               "[[models]]\nname = \"bert-tiny\"\nprecisions = [\"f32\", \"q8_0\"]\nseq_len = [16]\n"
                               "overrides = { layers = 1 }\n");
  // The run stays open until two classes have registered: class A alone finishing its jobs does
  // not end it.
  Process serve(with(serve_args(plan, db, "tcp://127.0.0.1:*", ep_file), {"--expect-classes", "2"}),
                dir / "serve.log");
  const std::string ep = wait_for_endpoint(ep_file);
  ASSERT_FALSE(ep.empty()) << serve.log();

  Process a(class_worker_args(ep, "class-a", dir, "A"), dir / "a.log");
  ASSERT_TRUE(wait_until([&] { return sql_int(db, "SELECT COUNT(*) FROM jobs WHERE state = 'done'") == 2; }, 120s))
      << serve.log() << a.log();
  // Both of class A's jobs are done; the run is not.
  EXPECT_TRUE(serve.running());
  EXPECT_EQ(sql_int(db, "SELECT finished_at FROM runs WHERE run_id = 'classes'"), 0);

  Process b(class_worker_args(ep, "class-b", dir, "B"), dir / "b.log");
  ASSERT_EQ(serve.wait(120s), 0) << serve.log();
  EXPECT_EQ(a.wait(15s), 0) << a.log();
  EXPECT_EQ(b.wait(15s), 0) << b.log();

  const auto classes = cpu_class_of_workers(db);
  ASSERT_EQ(classes.size(), 2u);
  ASSERT_NE(classes.at("class-a"), classes.at("class-b"));
  // Two plan jobs × two classes, each run by the worker of its class, each passing once.
  expect_exactly_one_terminal_result_per_job(db, 4);
  const auto rows = sql_rows(db, "SELECT j.target, j.hardware_class, a.hardware_class, a.worker_id, j.status, j.precision "
                                 "FROM jobs j JOIN attempts a ON a.run_id = j.run_id AND a.job_id = j.job_id "
                                 "AND a.attempt = j.terminal_attempt ORDER BY j.seq");
  ASSERT_EQ(rows.size(), 4u);
  std::map<std::string, std::set<std::string>> precisions_by_class;
  for (const auto& r : rows) {
    EXPECT_EQ(r[0], "class:" + r[1]);
    EXPECT_EQ(r[1], r[2]) << "ran on another class than it was made for";
    EXPECT_EQ(classes.at(r[3]), r[2]);
    EXPECT_EQ(r[4], "pass");
    precisions_by_class[r[2]].insert(r[5]);
  }
  for (const auto& [worker, cls] : classes) {
    EXPECT_EQ(precisions_by_class[cls], (std::set<std::string>{"f32", "q8_0"})) << worker;
  }
  // The report's columns are the two classes.
  int code = 0;
  const auto json = nlohmann::json::parse(run_capture({coordinator_binary().string(), "report", "--db", db.string(),
                                                       "--format", "json"}, &code));
  ASSERT_EQ(code, 0);
  std::set<std::string> reported;
  for (const auto& r : json["results"]) reported.insert(r["hardware_class"].get<std::string>());
  EXPECT_EQ(reported, (std::set<std::string>{classes.at("class-a"), classes.at("class-b")}));
}

TEST(Placement, EachDeviceRunsOnEveryDeviceAndAnyRunsOnce) {
  ScratchDir dir("place-device");
  const auto db = dir / "d.db";
  const auto ep_file = dir / "endpoint";
  const auto plan = write_plan(dir, "devices", "accuracy",
                               "[[models]]\nname = \"bert-tiny\"\nprecisions = [\"f32\"]\nseq_len = [16]\n"
                               "placement = \"each-device\"\noverrides = { layers = 1 }\n\n"
                               "[[models]]\nname = \"bert-tiny\"\nprecisions = [\"q8_0\"]\nseq_len = [16]\n"
                               "placement = \"any\"\noverrides = { layers = 1 }\n");
  // Two workers of one class (this machine, twice): each-device makes a job per worker's cpu.
  Process serve(serve_args(plan, db, "tcp://127.0.0.1:*", ep_file, /*expect_workers=*/2), dir / "serve.log");
  const std::string ep = wait_for_endpoint(ep_file);
  ASSERT_FALSE(ep.empty()) << serve.log();
  Process w1(worker_args(ep, "dev-1", dir), dir / "w1.log");
  Process w2(worker_args(ep, "dev-2", dir), dir / "w2.log");
  ASSERT_EQ(serve.wait(120s), 0) << serve.log();
  EXPECT_EQ(w1.wait(15s), 0) << w1.log();
  EXPECT_EQ(w2.wait(15s), 0) << w2.log();

  expect_exactly_one_terminal_result_per_job(db, 3);
  const auto each = sql_rows(db, "SELECT j.target, a.worker_id, a.device FROM jobs j JOIN attempts a "
                                 "ON a.run_id = j.run_id AND a.job_id = j.job_id AND a.attempt = j.terminal_attempt "
                                 "WHERE j.precision = 'f32' ORDER BY a.worker_id");
  ASSERT_EQ(each.size(), 2u);
  EXPECT_EQ(each[0], (std::vector<std::string>{"device:dev-1/cpu:0", "dev-1", "cpu:0"}));
  EXPECT_EQ(each[1], (std::vector<std::string>{"device:dev-2/cpu:0", "dev-2", "cpu:0"}));
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM jobs WHERE precision = 'q8_0' AND target = '' AND status = 'pass'"), 1);
}

// A plan job for a backend no registered hardware has is settled by a stand-in (skipped, no
// eligible hardware) once the expected workers are here, so the run ends with the reason.
TEST(Placement, APlanJobNoClassCanTakeIsSkippedWithTheReason) {
  ScratchDir dir("place-none");
  const auto db = dir / "n.db";
  const auto ep_file = dir / "endpoint";
  const auto plan = write_plan(dir, "nowhere", "accuracy",
                               "[[models]]\nname = \"bert-tiny\"\nbackends = [\"cuda\"]\nprecisions = [\"f32\"]\n"
                               "seq_len = [16]\noverrides = { layers = 1 }\n");
  Process serve(serve_args(plan, db, "tcp://127.0.0.1:*", ep_file), dir / "serve.log");
  const std::string ep = wait_for_endpoint(ep_file);
  ASSERT_FALSE(ep.empty()) << serve.log();
  Process w(worker_args(ep, "none-1", dir), dir / "w.log");
  ASSERT_EQ(serve.wait(60s), 0) << serve.log();
  const auto rows = sql_rows(db, "SELECT target, status, reason FROM jobs");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0][0], "");
  EXPECT_EQ(rows[0][1], "skipped");
  EXPECT_NE(rows[0][2].find("cuda"), std::string::npos) << rows[0][2];
}

// Perf jobs on two workers of one host: each-device gives both workers jobs at the same time,
// and none of the perf jobs may overlap another job on the host's cores (their stored start and
// end times say so); each attempt records that it ran exclusive, with the host load.
TEST(Placement, PerfJobsNeverShareTheHostsCores) {
  ScratchDir dir("place-excl");
  const auto db = dir / "e.db";
  const auto ep_file = dir / "endpoint";
  const auto plan = write_plan(dir, "exclusive", "perf",
                               "[[models]]\nname = \"bert-tiny\"\nprecisions = [\"f32\", \"q8_0\"]\n"
                               "seq_len = [16]\nplacement = \"each-device\"\noverrides = { layers = 1 }\n");
  Process serve(serve_args(plan, db, "tcp://127.0.0.1:*", ep_file, /*expect_workers=*/2), dir / "serve.log");
  const std::string ep = wait_for_endpoint(ep_file);
  ASSERT_FALSE(ep.empty()) << serve.log();
  Process w1(worker_args(ep, "excl-1", dir), dir / "w1.log");
  Process w2(worker_args(ep, "excl-2", dir), dir / "w2.log");
  ASSERT_EQ(serve.wait(180s), 0) << serve.log();

  expect_exactly_one_terminal_result_per_job(db, 4);
  const auto rows = sql_rows(db, "SELECT a.started_at, a.finished_at, a.exclusive, a.metrics_json, a.worker_id "
                                 "FROM attempts a WHERE a.state = 'done' ORDER BY a.started_at");
  ASSERT_EQ(rows.size(), 4u);
  std::set<std::string> workers;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i][2], "1") << "attempt not recorded as exclusive";
    const auto metrics = nlohmann::json::parse(rows[i][3]);
    ASSERT_TRUE(metrics.contains("host")) << metrics.dump();
    EXPECT_GE(metrics["host"]["load_start"].get<double>(), 0.0);
    EXPECT_GE(metrics["host"]["load_end"].get<double>(), 0.0);
    workers.insert(rows[i][4]);
    if (i + 1 < rows.size()) {
      // Sorted by start: each job ended before the next one started.
      EXPECT_LE(std::stoll(rows[i][1]), std::stoll(rows[i + 1][0]))
          << "perf job " << i << " overlaps the next one on the same host";
    }
  }
  EXPECT_EQ(workers.size(), 2u);
}

}  // namespace
}  // namespace am::testing
