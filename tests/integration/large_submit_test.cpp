// A large plan submitted to a live coordinator: its workers stay connected through the pause.
// Its own executable and CTest test: it times the coordinator's pauses against a worker's
// liveness, so it runs alone (RUN_SERIAL) and not under a sanitizer (no_sanitizer), whose
// slowdown stretches every step between two heartbeats.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/integration/harness.h"
#include "tests/integration/run_helpers.h"

namespace am::testing {
namespace {

using namespace std::chrono_literals;

std::filesystem::path write_selftest_plan(const std::filesystem::path& path, const std::string& name,
                                          const std::vector<std::string>& models) {
  std::string text = "[plan]\nname = \"" + name + "\"\nmode = \"accuracy\"\n\n[defaults]\nbackends = [\"cpu\"]\n"
                     "precisions = [\"f32\"]\n";
  for (const auto& m : models) text += "\n[[models]]\nname = \"selftest:" + m + "\"\n";
  return write_file(path, text);
}

// A large plan submitted to a live coordinator kept its loop from reading or sending for the
// whole store write: its worker heard no heartbeat for longer than its liveness and reconnected,
// and the coordinator, reading the worker's queued heartbeats only afterwards, dropped it as
// silent. Heartbeats now go out during the write and the liveness restarts after it.
TEST(LargeSubmit, ALargeSubmitKeepsItsWorkersConnected) {
  ScratchDir dir("ctl-big-submit");
  const auto db = dir / "b.db";
  const auto own = write_selftest_plan(dir / "own.toml", "own", {"pass"});
  // 100 batches x 1000 lengths: 100,000 jobs, stored in two seconds or more here.
  std::string big = "[plan]\nname = \"big\"\nmode = \"accuracy\"\n\n[[models]]\nname = \"selftest:pass\"\nbatch = [";
  for (int i = 1; i <= 100; ++i) big += std::to_string(i) + (i < 100 ? ", " : "]\nseq_len = [");
  for (int i = 1; i <= 1000; ++i) big += std::to_string(i) + (i < 1000 ? ", " : "]\n");
  const auto big_plan = write_file(dir / "big.toml", big);
  // A liveness of 5 x 300 ms: a pause of the loop longer than 1.5 s shows (the defaults give 5 s).
  Process serve({coordinator_binary().string(), "--log-level", "info", "serve", "--plan", own.string(), "--db",
                 db.string(), "--bind", "tcp://127.0.0.1:*", "--catalog", catalog_dir(), "--endpoint-file",
                 (dir / "ep").string(), "--heartbeat-ms", "300", "--liveness", "5", "--health-interval", "0"},
                dir / "serve.log");
  const std::string ep = wait_for_endpoint(dir / "ep");
  ASSERT_FALSE(ep.empty()) << serve.log();
  Process worker({worker_binary().string(), "--coordinator", ep, "--id", "steady", "--state-dir",
                  (dir / "state").string(), "--heartbeat-ms", "300", "--liveness", "5", "--log-level", "info"},
                 dir / "w.log");
  ASSERT_TRUE(wait_until([&] { return sql_int(db, "SELECT COUNT(*) FROM jobs WHERE run_id = 'own' AND state = 'done'") == 1; },
                         60s)) << serve.log() << worker.log();
  int code = -1;
  const std::string out = run_capture(cli({"submit", big_plan.string()}, db), &code, 120s);
  ASSERT_EQ(code, 0) << out;
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM jobs WHERE run_id = 'big'"), 100000);
  // The worker goes on with the new run's jobs over the same session.
  ASSERT_TRUE(wait_until([&] { return sql_int(db, "SELECT COUNT(*) FROM jobs WHERE run_id = 'big' AND state = 'done'") >= 3; },
                         60s)) << serve.log();
  const auto has = [](const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; };
  const std::string log = serve.log();
  EXPECT_TRUE(has(log, "the loop was busy for")) << "the submit did not pause the loop: nothing was tested\n" << log;
  EXPECT_FALSE(has(log, "silent for more than")) << log;
  EXPECT_FALSE(has(worker.log(), "unreachable")) << worker.log();
  const std::size_t first = log.find("worker steady");
  EXPECT_NE(first, std::string::npos) << log;
  EXPECT_EQ(log.find("registered with", log.find("registered with") + 1), std::string::npos)
      << "the worker registered again\n" << log;
  serve.kill_hard();
  worker.kill_hard();
}

}  // namespace
}  // namespace am::testing
