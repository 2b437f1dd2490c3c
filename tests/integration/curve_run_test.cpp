// CURVE end to end: a coordinator with an allow-list runs a plan for an allowed worker; a worker
// whose key is not on the list (or that speaks plain TCP) never registers.
#include <gtest/gtest.h>

#include <thread>

#include "common/curve.h"
#include "tests/integration/harness.h"

namespace am::testing {
namespace {

using namespace std::chrono_literals;

TEST(Curve, OnlyAllowListedWorkersRegisterAndTheRunCompletes) {
  if (!curve_available()) GTEST_SKIP() << "libzmq without CURVE";
  ScratchDir dir("curve");
  const auto keys = dir / "keys";
  const auto allowed = dir / "allowed";
  int code = -1;
  for (const char* name : {"coordinator", "good", "evil"}) {
    run_capture({coordinator_binary().string(), "keys", name, "--out", keys.string()}, &code);
    ASSERT_EQ(code, 0) << name;
  }
  std::filesystem::create_directories(allowed);
  std::filesystem::copy_file(keys / "good.pub", allowed / "good.pub");

  const auto plan = write_file(dir / "curve.toml",
                               "[plan]\nname = \"curve\"\nmode = \"both\"\nseed = 9\n\n"
                               "[defaults]\nbackends = [\"cpu\"]\nprecisions = [\"f32\", \"q8_0\"]\n"
                               "batch = [1]\nseq_len = [16]\nmin_reps = 3\nmin_time_s = 0.05\n\n"
                               "[[models]]\nname = \"bert-tiny\"\n");
  const auto db = dir / "c.db";
  const auto ep_file = dir / "endpoint";
  Process serve({coordinator_binary().string(), "--log-level", "info", "serve", "--plan", plan.string(),
                 "--db", db.string(), "--bind", "tcp://127.0.0.1:*", "--catalog",
                 (source_dir() / "jobs/models").string(), "--exit-when-done", "--endpoint-file",
                 ep_file.string(), "--expect-workers", "1", "--curve-key", (keys / "coordinator.key").string(),
                 "--curve-allow", allowed.string()},
                dir / "serve.log");
  std::string ep;
  ASSERT_TRUE(wait_until([&] {
    ep = read_file(ep_file);
    if (!ep.empty() && ep.back() == '\n') ep.pop_back();
    return !ep.empty();
  }, 20s)) << serve.log();

  auto worker = [&](const std::string& id, std::vector<std::string> extra) {
    std::vector<std::string> a = {worker_binary().string(), "--coordinator", ep, "--id", id, "--state-dir",
                                  (dir / ("state-" + id)).string(), "--log-level", "info"};
    a.insert(a.end(), extra.begin(), extra.end());
    return std::make_unique<Process>(a, dir / (id + ".log"));
  };
  auto evil = worker("evil", {"--curve-key", (keys / "evil.key").string(), "--curve-server",
                              (keys / "coordinator.pub").string()});
  auto plain = worker("plain", {});
  std::this_thread::sleep_for(2s);
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM workers"), 0) << serve.log();
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM attempts"), 0);

  auto good = worker("good", {"--curve-key", (keys / "good.key").string(), "--curve-server",
                              (keys / "coordinator.pub").string()});
  ASSERT_EQ(serve.wait(60s), 0) << serve.log();
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM jobs WHERE status = 'pass'"), 2);
  EXPECT_EQ(sql_rows(db, "SELECT worker_id FROM workers"), (std::vector<std::vector<std::string>>{{"good"}}));
}

}  // namespace
}  // namespace am::testing
