// Chaos over real processes: plans of >= 1,000 short jobs while workers are SIGKILLed and
// restarted in a loop, while the coordinator is SIGKILLed and restarted at least five times, and
// while a worker and then the coordinator are SIGSTOPped for longer than the heartbeat limit.
// Every run must end with exactly one terminal result per job, nothing lost, and a database
// that passes PRAGMA integrity_check. Kills are driven by progress in the database (every N
// newly finished jobs), not by timers. Each test prints its figures (jobs, kills, wall time).
#include <gtest/gtest.h>

#include <csignal>
#include <memory>
#include <thread>

#include "tests/integration/run_helpers.h"

namespace am::testing {
namespace {

// 250 sequence lengths x 4 precisions = 1,000 accuracy jobs of a one-layer bert-tiny with a
// 256-token vocabulary: a job is little more than a process start (about 20 ms, against 300 ms
// with the full 30522-token embedding to synthesise), so the run measures the protocol.
std::filesystem::path write_chaos_plan(const std::filesystem::path& dir, const std::string& name, int seq_lens) {
  std::string lens = "[";
  for (int i = 0; i < seq_lens; ++i) lens += (i ? ", " : "") + std::to_string(2 + i);
  lens += "]";
  return write_bert_plan(dir / (name + ".toml"), name, 0.0, lens, "[\"f32\", \"f16\", \"q8_0\", \"q4_0\"]",
                         "accuracy", "timeout_s = 30\n", "[models.overrides]\nlayers = 1\nvocab = 256\n");
}

int64_t done_jobs(const std::filesystem::path& db) {
  return sql_int(db, "SELECT COUNT(*) FROM jobs WHERE state = 'done'");
}

void expect_clean_end(const std::filesystem::path& db, int64_t jobs) {
  expect_exactly_one_terminal_result_per_job(db, jobs);
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM jobs WHERE status = 'lost'"), 0);
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM jobs WHERE status <> 'pass'"), 0)
      << sql_rows(db, "SELECT status, reason FROM jobs WHERE status <> 'pass' LIMIT 1")[0][1];
  // No attempt left dangling, and no attempt stored twice (the primary key forbids it; the
  // count of results equals the count of distinct attempts).
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM attempts WHERE state = 'leased'"), 0);
}

void print_figures(const std::string& test, const std::filesystem::path& db, int kills,
                   std::chrono::steady_clock::time_point started) {
  const auto secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::printf("[chaos] %s: jobs=%lld kills=%d terminal=%lld attempts=%lld results=%lld "
              "late_results=%lld lost=%lld wall=%.1fs\n",
              test.c_str(), static_cast<long long>(sql_int(db, "SELECT COUNT(*) FROM jobs")), kills,
              static_cast<long long>(sql_int(db, "SELECT COUNT(*) FROM jobs WHERE state = 'done'")),
              static_cast<long long>(sql_int(db, "SELECT COUNT(*) FROM attempts")),
              static_cast<long long>(sql_int(db, "SELECT COUNT(*) FROM attempts WHERE state = 'done'")),
              static_cast<long long>(sql_int(db, "SELECT COUNT(*) FROM attempts a JOIN jobs j ON "
                                                 "a.job_id = j.job_id WHERE a.state = 'done' AND "
                                                 "a.attempt <> j.terminal_attempt")),
              static_cast<long long>(sql_int(db, "SELECT COUNT(*) FROM jobs WHERE status = 'lost'")), secs);
}

TEST(Chaos, WorkersKilledInALoopLoseAndDuplicateNothing) {
  ScratchDir dir("chaos-workers");
  const auto db = dir / "cw.db";
  const auto plan = write_chaos_plan(dir.path(), "chaos-workers", 250);
  const auto started = std::chrono::steady_clock::now();
  Process serve(serve_args(plan, db, "tcp://127.0.0.1:*", dir / "ep", 2), dir / "serve.log");
  const std::string ep = wait_for_endpoint(dir / "ep");
  ASSERT_FALSE(ep.empty()) << serve.log();
  const std::vector<std::string> ids = {"cw-a", "cw-b"};
  std::vector<std::unique_ptr<Process>> workers;
  int generation = 0;
  auto start = [&](std::size_t i) {
    workers[i] = std::make_unique<Process>(worker_args(ep, ids[i], dir, 2),
                                           dir / (ids[i] + "-" + std::to_string(generation++) + ".log"));
  };
  workers.resize(ids.size());
  for (std::size_t i = 0; i < ids.size(); ++i) start(i);

  int kills = 0;
  int64_t next_kill_at = 40;
  while (serve.running()) {
    if (!wait_until([&] { return !serve.running() || done_jobs(db) >= next_kill_at; }, 120s)) break;
    if (!serve.running() || done_jobs(db) >= 960) break;
    const std::size_t victim = static_cast<std::size_t>(kills) % ids.size();
    workers[victim]->kill_hard();   // mid-job: its job processes die with it or are orphaned
    ++kills;
    start(victim);
    next_kill_at = done_jobs(db) + 40;
  }
  ASSERT_EQ(serve.wait(180s), 0) << serve.log();
  print_figures("worker SIGKILL loop", db, kills, started);
  EXPECT_GE(kills, 10);
  expect_clean_end(db, 1000);
}

TEST(Chaos, CoordinatorKilledFiveTimesResumesWithNothingLostOrDuplicated) {
  ScratchDir dir("chaos-coord");
  const auto db = dir / "cc.db";
  const auto plan = write_chaos_plan(dir.path(), "chaos-coord", 250);
  const auto started = std::chrono::steady_clock::now();
  auto serve = std::make_unique<Process>(serve_args(plan, db, "tcp://127.0.0.1:*", dir / "ep0", 2),
                                         dir / "serve0.log");
  const std::string ep = wait_for_endpoint(dir / "ep0");
  ASSERT_FALSE(ep.empty()) << serve->log();
  Process w1(worker_args(ep, "cc-a", dir, 2), dir / "w1.log");
  Process w2(worker_args(ep, "cc-b", dir, 2), dir / "w2.log");

  int kills = 0;
  for (int round = 1; round <= 5; ++round) {
    const int64_t target = done_jobs(db) + 120;
    ASSERT_TRUE(wait_until([&] { return done_jobs(db) >= target || !serve->running(); }, 120s))
        << "round " << round << ": no progress after a restart\n" << serve->log();
    ASSERT_TRUE(serve->running()) << "the run finished before kill " << round;
    serve->kill_hard();
    ++kills;
    const auto ep_file = dir / ("ep" + std::to_string(round));
    serve = std::make_unique<Process>(serve_args(plan, db, ep, ep_file, 2),
                                      dir / ("serve" + std::to_string(round) + ".log"));
    ASSERT_FALSE(wait_for_endpoint(ep_file).empty()) << serve->log();
  }
  ASSERT_EQ(serve->wait(180s), 0) << serve->log();
  EXPECT_EQ(w1.wait(15s), 0) << w1.log();
  EXPECT_EQ(w2.wait(15s), 0) << w2.log();
  print_figures("coordinator SIGKILL loop", db, kills, started);
  expect_clean_end(db, 1000);
}

TEST(Chaos, WorkerAndCoordinatorStoppedBeyondTheHeartbeatLimitRecover) {
  ScratchDir dir("chaos-stop");
  const auto db = dir / "cs.db";
  const auto plan = write_chaos_plan(dir.path(), "chaos-stop", 75);   // 300 jobs
  const auto started = std::chrono::steady_clock::now();
  Process serve(serve_args(plan, db, "tcp://127.0.0.1:*", dir / "ep", 2), dir / "serve.log");
  const std::string ep = wait_for_endpoint(dir / "ep");
  ASSERT_FALSE(ep.empty()) << serve.log();
  Process w1(worker_args(ep, "cs-a", dir, 2), dir / "w1.log");
  Process w2(worker_args(ep, "cs-b", dir, 2), dir / "w2.log");

  // The heartbeat limit is 5 x 100 ms; each stop lasts three times that, and the resumed side
  // must notice the other declared it dead (a worker reclaimed, a coordinator reconnected to).
  ASSERT_TRUE(wait_until([&] { return done_jobs(db) >= 60; }, 120s)) << serve.log();
  // Waits for `needle` in `log` after the first `from` bytes.
  auto logged_after = [](const std::filesystem::path& log, std::size_t from, const std::string& needle) {
    const std::string text = read_file(log);
    return text.size() > from && text.find(needle, from) != std::string::npos;
  };
  std::size_t mark = read_file(dir / "serve.log").size();
  w1.signal(SIGSTOP);
  ASSERT_TRUE(wait_until([&] { return logged_after(dir / "serve.log", mark, "worker cs-a gone"); }, 30s))
      << serve.log();
  std::this_thread::sleep_for(1s);   // the stop itself: longer than the limit, on purpose
  w1.signal(SIGCONT);

  ASSERT_TRUE(wait_until([&] { return done_jobs(db) >= 160; }, 120s)) << serve.log();
  mark = read_file(dir / "w2.log").size();
  serve.signal(SIGSTOP);
  ASSERT_TRUE(wait_until([&] { return logged_after(dir / "w2.log", mark, "coordinator unreachable"); }, 30s))
      << read_file(dir / "w2.log");
  std::this_thread::sleep_for(1s);
  serve.signal(SIGCONT);

  ASSERT_EQ(serve.wait(180s), 0) << serve.log();
  EXPECT_EQ(w1.wait(15s), 0) << w1.log();
  EXPECT_EQ(w2.wait(15s), 0) << w2.log();
  print_figures("SIGSTOP worker then coordinator", db, 2, started);
  expect_clean_end(db, 300);
}

}  // namespace
}  // namespace am::testing
