// Issue 9's finding, end to end: the OpenCL backend runs bf16 and q4_1 weights, so the probe must
// advertise them and the coordinator must schedule such jobs on PoCL. Before precisions came
// from the backend's own supports(), these jobs were settled `unsupported` by the coordinator
// without ever running. A real coordinator, a real worker (which probes PoCL) and real job
// processes over loopback. Label: opencl.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "tests/integration/harness.h"

namespace am::testing {
namespace {

using namespace std::chrono_literals;

TEST(OpenClFormatsRun, Bf16AndQ4_1JobsRunOnPocl) {
  std::error_code ec;
  if (!std::filesystem::exists("/etc/OpenCL/vendors/pocl.icd", ec)) {
    GTEST_SKIP() << "PoCL's ICD (/etc/OpenCL/vendors/pocl.icd) is not installed";
  }
  ScratchDir dir("opencl-formats");
  const auto db = dir / "d.db";
  const auto ep_file = dir / "endpoint";
  const auto plan = write_file(dir / "formats.toml",
                               "[plan]\nname = \"opencl-formats\"\nmode = \"accuracy\"\nseed = 3\n\n"
                               "[defaults]\nbackends = [\"opencl\"]\nprecisions = [\"bf16\", \"q4_1\"]\n"
                               "batch = [1]\nseq_len = [16]\ntimeout_s = 120\n\n"
                               "[[models]]\nname = \"bert-tiny\"\n");
  Process serve({coordinator_binary().string(), "--log-level", "info", "serve", "--plan", plan.string(),
                 "--db", db.string(), "--bind", "tcp://127.0.0.1:*", "--catalog",
                 (source_dir() / "jobs/models").string(), "--exit-when-done", "--endpoint-file",
                 ep_file.string(), "--expect-workers", "1", "--heartbeat-ms", "200", "--liveness", "10"},
                dir / "serve.log");
  std::string ep;
  ASSERT_TRUE(wait_until([&] {
    ep = read_file(ep_file);
    while (!ep.empty() && (ep.back() == '\n' || ep.back() == '\r')) ep.pop_back();
    return !ep.empty();
  }, 20s)) << serve.log();
  Process worker({worker_binary().string(), "--coordinator", ep, "--id", "ocl-w", "--state-dir",
                  (dir / "state").string(), "--heartbeat-ms", "200", "--liveness", "10",
                  "--log-level", "info"},
                 dir / "worker.log");
  const int code = serve.wait(240s);
  ASSERT_EQ(code, 0) << serve.log() << worker.log();

  const auto rows = sql_rows(db, "SELECT precision, status, reason FROM jobs ORDER BY precision");
  ASSERT_EQ(rows.size(), 2u) << serve.log();
  EXPECT_EQ(rows[0][0], "bf16");
  EXPECT_EQ(rows[1][0], "q4_1");
  for (const auto& r : rows) {
    EXPECT_TRUE(r[1] == "pass" || r[1] == "degraded") << r[0] << ": " << r[1] << " " << r[2];
  }
}

}  // namespace
}  // namespace am::testing
