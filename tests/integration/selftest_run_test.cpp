// Diagnostic models named in a plan run through the whole system: a real coordinator and worker
// over loopback, a real job child process, the real store. selftest:nan and selftest:inf produce
// outputs holding NaN/Inf; they must be stored as "fail" with a reason naming NaN/Inf.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "tests/integration/harness.h"

namespace am::testing {
namespace {

using namespace std::chrono_literals;

TEST(SelftestRun, NanAndInfOutputsAreStoredAsFailNamingNanInf) {
  ScratchDir dir("selftest-nan");
  const auto db = dir / "d.db";
  const auto ep_file = dir / "endpoint";
  const auto plan = write_file(dir / "diag.toml",
                               "[plan]\nname = \"diag\"\nmode = \"accuracy\"\n\n"
                               "[defaults]\nbackends = [\"cpu\"]\nprecisions = [\"f32\", \"q8_0\"]\n"
                               "batch = [1]\nseq_len = [8]\ntimeout_s = 30\n\n"
                               "[[models]]\nname = \"selftest:nan\"\n\n"
                               "[[models]]\nname = \"selftest:inf\"\n\n"
                               "[[models]]\nname = \"selftest:pass\"\nprecisions = [\"f32\"]\n");
  Process serve({coordinator_binary().string(), "--log-level", "info", "serve", "--plan", plan.string(),
                 "--db", db.string(), "--bind", "tcp://127.0.0.1:*", "--catalog",
                 (source_dir() / "jobs/models").string(), "--exit-when-done", "--endpoint-file",
                 ep_file.string(), "--expect-workers", "1", "--heartbeat-ms", "100", "--liveness", "5"},
                dir / "serve.log");
  std::string ep;
  ASSERT_TRUE(wait_until([&] {
    ep = read_file(ep_file);
    while (!ep.empty() && (ep.back() == '\n' || ep.back() == '\r')) ep.pop_back();
    return !ep.empty();
  }, 20s)) << serve.log();
  Process worker({worker_binary().string(), "--coordinator", ep, "--id", "diag-w", "--state-dir",
                  (dir / "state").string(), "--heartbeat-ms", "100", "--liveness", "5", "--log-level", "info"},
                 dir / "worker.log");

  const int code = serve.wait(120s);
  ASSERT_GE(code, 0) << "coordinator did not finish\n" << serve.log();
  // 1 when some job failed (DECISIONS.md exit codes); the older rule says 0.
  EXPECT_TRUE(code == 0 || code == 1) << code << "\n" << serve.log();

  const auto rows = sql_rows(db, "SELECT model, precision, status, reason FROM jobs ORDER BY model, precision");
  ASSERT_EQ(rows.size(), 5u) << serve.log();
  std::map<std::string, int> failed_nonfinite;
  for (const auto& r : rows) {
    const std::string& model = r[0];
    if (model == "selftest:pass") {
      EXPECT_EQ(r[2], "pass") << r[3];
      continue;
    }
    EXPECT_EQ(r[2], "fail") << model << " " << r[1] << ": " << r[3];
    EXPECT_NE(r[3].find("NaN/Inf values in the output"), std::string::npos) << model << ": " << r[3];
    ++failed_nonfinite[model];
  }
  EXPECT_EQ(failed_nonfinite, (std::map<std::string, int>{{"selftest:inf", 2}, {"selftest:nan", 2}}));
  // The attempt that settled each job carries the same verdict.
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM attempts WHERE status = 'fail' AND reason LIKE '%NaN/Inf%'"), 4);
}

}  // namespace
}  // namespace am::testing
