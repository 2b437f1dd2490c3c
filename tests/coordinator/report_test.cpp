// Markdown and JSON exports of a run stored in a real SQLite file.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>

#include "coordinator/report_common.h"
#include "coordinator/report_json.h"
#include "coordinator/report_markdown.h"
#include "store_fixture.h"

namespace am::coord {
namespace {

using testing::make_spec;
using testing::precision_named;
using testing::status_named;
using testing::perf_metrics;

std::string format(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, v);
  return buf;
}

// A run with every kind of outcome: baseline, a fast precision, an unsupported one (with a '|'
// in its reason), a crash, a scaled model, a pending job and a skipped one.
class Reports : public testing::StoreFixture {
 protected:
  void SetUp() override {
    StoreFixture::SetUp();
    ASSERT_TRUE(store_->upsert_worker({"worker-a", "lab-box-1", "accelmatrix 0.1.0 (abc123def456)", {}, {}, kT0, ""}).ok());
    std::mt19937 rng(31337);
    std::uniform_real_distribution<double> dist(2.0, 9.0);
    // Rounded to the microsecond so the report's 3 decimals show it exactly.
    base_ms_ = std::round(dist(rng) * 1000) / 1000;
    base_id_ = run_job(make_spec("bert-tiny", "encoder-only", "cpu", "f32"), "pass", "",
                       perf_metrics(base_ms_, base_ms_ * 1.5, 4321.5, 1.5e-12, 1.0, 1.0));
    fast_id_ = run_job(make_spec("bert-tiny", "encoder-only", "cpu", "q8_0"), "pass", "",
                       perf_metrics(base_ms_ / 2.5, base_ms_ / 2.0, 10803.75, 2.25e-5, 0.999876, 0.96875));
    unsupported_id_ = run_job(make_spec("bert-tiny", "encoder-only", "opencl", "q2_k"), "unsupported",
                              "no kernel for q2_k|matmul");
    crash_id_ = run_job(make_spec("bert-tiny", "encoder-only", "opencl", "f16"), "crash",
                        "killed by signal 11 (SIGSEGV)");
    scaled_id_ = run_job(make_spec("tinyllama-1.1b", "decoder-only", "cpu", "f32", 1, 64, 5, true),
                         "pass", "", perf_metrics(20.5, 22.0, 3121.95, 0, 1, 1));
    pending_id_ = add(make_spec("tinyllama-1.1b", "decoder-only", "cpu", "q4_0", 1, 64, 5, true));
    skipped_id_ = add(make_spec("tinyllama-1.1b", "decoder-only", "vulkan", "f16", 1, 64, 5, true));
    ASSERT_TRUE(store_->set_job_terminal(kRun, skipped_id_, *status_named("skipped"), "no eligible hardware", kT0 + 50).ok());
    ASSERT_TRUE(store_->mark_run_finished(kRun, kT0 + 3'600'000).ok());
  }

  std::string markdown() { return render_markdown(run_record(), rows()); }

  double base_ms_ = 0;
  std::string base_id_, fast_id_, unsupported_id_, crash_id_, scaled_id_, pending_id_, skipped_id_;
};

TEST_F(Reports, MarkdownHasProvenanceSummaryAndOverview) {
  const std::string md = markdown();
  EXPECT_EQ(md.rfind("# accelmatrix report: smoke\n", 0), 0u) << md.substr(0, 200);
  EXPECT_NE(md.find("| Run | `run-1` |"), std::string::npos);
  EXPECT_NE(md.find("| Plan | `smoke` (`jobs/plans/smoke.toml`) |"), std::string::npos);
  EXPECT_NE(md.find("| Created | " + format_utc(kT0) + " |"), std::string::npos);
  EXPECT_NE(md.find("| Finished | 2023-11-14T23:13:20.000Z |"), std::string::npos);
  EXPECT_NE(md.find("`worker-a` on lab-box-1 (`cpu-00112233aabbccdd`), 5 jobs"), std::string::npos);
  EXPECT_NE(md.find("| Builds | accelmatrix 0.1.0 (abc123def456) |"), std::string::npos);
  EXPECT_NE(md.find("| ✅ pass | 3 |"), std::string::npos);
  EXPECT_NE(md.find("| ❌ crash | 1 |"), std::string::npos);
  EXPECT_NE(md.find("| ⏳ queued | 1 |"), std::string::npos);
  EXPECT_NE(md.find("| **total** | **7** |"), std::string::npos);
  // Columns are backends on hardware classes; jobs that reached no hardware (pending, skipped)
  // form their backend's "unplaced" column.
  EXPECT_NE(md.find("| Architecture | cpu · cpu-00112233aabbccdd | cpu · unplaced | opencl · cpu-00112233aabbccdd | "
                    "vulkan · unplaced |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| encoder-only | ✅ 2/2 · best q8_0 2.50× | — | ❌ 0/2 · 1 unsupported · 1 failed | — |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| decoder-only | ✅ 1/1 | ⏳ 0/1 · 1 pending | — | not run |"), std::string::npos) << md;
}

TEST_F(Reports, MarkdownBackendTablesRateEveryCell) {
  const std::string md = markdown();
  const std::string base = format("%.3f", base_ms_);
  EXPECT_NE(md.find("| bert-tiny | encoder-only | f32 | ✅ pass | Baseline | " + base +
                    " | baseline | 1.50e-12 | 1.000000 | batch 1, seq 32 |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| bert-tiny | encoder-only | q8_0 | ✅ pass | Excellent | " + format("%.3f", base_ms_ / 2.5) +
                    " | 2.50× [2.50–2.50] | 2.25e-05 | 0.999876 | batch 1, seq 32 |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| bert-tiny | encoder-only | q2_k | ❌ unsupported | ❌ unsupported | — | — | — | — | "
                    "unsupported: no kernel for q2_k\\|matmul |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| bert-tiny | encoder-only | f16 | ❌ crash | ❌ crash | — | — | — | — | "
                    "crash: killed by signal 11 (SIGSEGV) |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| tinyllama-1.1b | decoder-only | f32 | ✅ pass | Baseline | 20.50 | baseline | "
                    "0.00e+00 | 1.000000 | scaled; batch 1, seq 64 |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| tinyllama-1.1b | decoder-only | q4_0 | ⏳ pending | ⏳ pending | — | — | — | — | scaled |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| tinyllama-1.1b | decoder-only | f16 | ⏭️ skipped | not run | — | — | — | — | "
                    "scaled; skipped: no eligible hardware |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("## cpu · cpu-00112233aabbccdd\n"), std::string::npos) << md;
  EXPECT_NE(md.find("## cpu · unplaced\n"), std::string::npos) << md;
  EXPECT_NE(md.find("## opencl · cpu-00112233aabbccdd\n"), std::string::npos) << md;
  EXPECT_NE(md.find("## vulkan · unplaced\n"), std::string::npos) << md;
}

TEST_F(Reports, MarkdownJobTableHasOneRowPerJob) {
  const std::string md = markdown();
  EXPECT_NE(md.find("| `" + fast_id_ + "` | bert-tiny | cpu | q8_0 | 1 | 32 | ✅ pass | 1 | worker-a | " +
                    format("%.3f", base_ms_ / 2.5) + " | " + format("%.3f", base_ms_ / 2.0) +
                    " | 10803.8 | 2.25e-05 | 0.999876 | 0.969 |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| `" + pending_id_ + "` | tinyllama-1.1b | cpu | q4_0 | 1 | 64 | ⏳ queued | — | — | — | — | — | — | — | — |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| `" + crash_id_ + "` | bert-tiny | opencl | f16 | 1 | 32 | ❌ crash: killed by signal 11 (SIGSEGV) | 1 | worker-a |"),
            std::string::npos)
      << md;
  const std::size_t jobs = md.find("## Jobs");
  ASSERT_NE(jobs, std::string::npos);
  int rows = 0;
  for (std::size_t at = md.find("\n| `", jobs); at != std::string::npos; at = md.find("\n| `", at + 1)) ++rows;
  EXPECT_EQ(rows, 7);
}

TEST_F(Reports, JsonHasEveryRequiredFieldForEveryJob) {
  const nlohmann::json doc = render_json(run_record(), rows());
  EXPECT_EQ(doc["schema"], 3);
  EXPECT_EQ(doc["run"]["run_id"], kRun);
  EXPECT_EQ(doc["run"]["plan_name"], "smoke");
  EXPECT_EQ(doc["run"]["finished_at_ms"], kT0 + 3'600'000);
  EXPECT_EQ(doc["run"]["builds"], nlohmann::json::array({"accelmatrix 0.1.0 (abc123def456)"}));
  EXPECT_EQ(doc["run"]["workers"][0]["hostname"], "lab-box-1");
  EXPECT_EQ(doc["summary"]["total"], 7);
  EXPECT_EQ(doc["summary"]["terminal"], 6);
  ASSERT_TRUE(doc["results"].is_array());
  ASSERT_EQ(doc["results"].size(), 7u);
  const char* strings[] = {"job_id", "model", "architecture", "backend", "precision", "status",
                           "worker", "state", "reason", "mode", "hostname", "hardware_class",
                           "device", "build", "log_tail"};
  const char* integers[] = {"attempt", "attempts", "batch", "seq_len", "seed", "started_at_ms", "finished_at_ms"};
  for (const auto& r : doc["results"]) {
    for (const char* key : strings) EXPECT_TRUE(r.contains(key) && r[key].is_string()) << key << " in " << r.dump();
    for (const char* key : integers) EXPECT_TRUE(r.contains(key) && r[key].is_number_integer()) << key << " in " << r.dump();
    EXPECT_TRUE(r["scaled"].is_boolean());
    EXPECT_TRUE(r["metrics"].is_object());
  }
  const auto& fast = doc["results"][1];
  EXPECT_EQ(fast["job_id"], fast_id_);
  EXPECT_EQ(fast["status"], "pass");
  EXPECT_EQ(fast["worker"], "worker-a");
  EXPECT_EQ(fast["seed"], 1234);
  EXPECT_EQ(fast["hardware_class"], "cpu-00112233aabbccdd");
  EXPECT_EQ(fast["build"], "accelmatrix 0.1.0 (abc123def456)");
  EXPECT_DOUBLE_EQ(fast["metrics"]["latency_ms"]["median"].get<double>(), base_ms_ / 2.5);
  const auto& pending = doc["results"][5];
  EXPECT_EQ(pending["job_id"], pending_id_);
  EXPECT_EQ(pending["status"], "");
  EXPECT_EQ(pending["state"], "queued");
  EXPECT_EQ(pending["attempt"], 0);
  EXPECT_EQ(doc["results"][6]["status"], "skipped");
  EXPECT_EQ(doc["results"][6]["reason"], "no eligible hardware");
}

TEST_F(Reports, JsonMatrixCellsLinkToTheirJobs) {
  const nlohmann::json doc = render_json(run_record(), rows());
  ASSERT_TRUE(doc["matrix"].is_array());
  ASSERT_EQ(doc["matrix"].size(), 7u);
  bool found_fast = false;
  for (const auto& cell : doc["matrix"]) {
    EXPECT_TRUE(cell["job_ids"].is_array() && !cell["job_ids"].empty());
    EXPECT_TRUE(cell["rating"].is_string());
    if (cell["precision"] == "q8_0") {
      found_fast = true;
      EXPECT_EQ(cell["rating"], "excellent");
      EXPECT_EQ(cell["job_ids"], nlohmann::json::array({fast_id_}));
      EXPECT_DOUBLE_EQ(cell["speedup"].get<double>(), 2.5);
      EXPECT_EQ(cell["representative_shape"]["seq_len"], 32);
    }
    if (cell["precision"] == "q2_k") {
      EXPECT_EQ(cell["rating"], "unsupported");
      EXPECT_EQ(cell["rating_label"], "❌");
      EXPECT_EQ(cell["reason"], "no kernel for q2_k|matmul");
      EXPECT_TRUE(cell["speedup"].is_null());
    }
  }
  EXPECT_TRUE(found_fast);
  EXPECT_EQ(doc["rating_rules"]["excellent_min_speedup"], 2.0);
  EXPECT_FALSE(doc["overview"].empty());
}

TEST_F(Reports, TextFromWorkersThatIsNotUtf8IsMadeSafe) {
  const std::string id = add(make_spec("bert-tiny", "encoder-only", "vulkan", "q4_1"));
  lease(id, 1);
  ResultRecord r = result(id, 1, "error", std::string("bad byte \xff here|and a\nnewline"));
  r.log_tail = std::string(6000, 'x') + "\xc3\xa9 end \xfe";
  ASSERT_TRUE(store_one(r).became_terminal);
  const nlohmann::json doc = render_json(run_record(), rows());
  std::string dumped;
  ASSERT_NO_THROW(dumped = doc.dump());
  const auto& last = doc["results"].back();
  EXPECT_EQ(last["reason"], "bad byte \xEF\xBF\xBD here|and a\nnewline");
  const std::string tail = last["log_tail"];
  EXPECT_LE(tail.size(), kJsonLogTailBytes + 3);   // + the leading "…"
  EXPECT_EQ(tail.rfind("\xE2\x80\xA6x", 0), 0u);
  EXPECT_EQ(tail.substr(tail.size() - 10), "\xc3\xa9 end \xEF\xBF\xBD");
  const std::string md = render_markdown(run_record(), rows());
  EXPECT_NE(md.find("error: bad byte \xEF\xBF\xBD here\\|and a newline"), std::string::npos);
}

TEST(ReportCommon, FormatsUtcTimestamps) {
  EXPECT_EQ(format_utc(0), "");
  EXPECT_EQ(format_utc(1'700'000'000'123), "2023-11-14T22:13:20.123Z");
}

// With the workers' capability records the columns carry readable names (issue 11 item 3), a
// software device is marked, and the measured memory table has a column per class.
TEST_F(Reports, MarkdownNamesColumnsFromCapabilityRecordsAndMeasuresMemory) {
  const nlohmann::json caps = {
      {"cpu", {{"model", "AMD EPYC 9R45"}, {"isa", {{"avx2", true}, {"avx512f", true}, {"avx512_vnni", true}}}}},
      {"topology", {{"cores", 2}}},
      {"devices", {{{"key", "cpu:0"}, {"backend", "cpu"}, {"name", "AMD EPYC 9R45"}, {"type", "cpu"},
                    {"hardware_class", "cpu-00112233aabbccdd"}},
                   {{"key", "opencl:0"}, {"backend", "opencl"}, {"name", "cpu-znver5"}, {"platform", "Portable Computing Language"},
                    {"software", true}, {"hardware_class", "opencl-0000000000000001"}}}}};
  WorkerRecord w{"worker-a", "lab-box-1", "accelmatrix 0.1.0 (abc123def456)", caps, {}, kT0, "m1"};
  nlohmann::json mem = perf_metrics(3.0, 3.5, 100.0, 1e-6, 0.9999, 1.0);
  mem["memory"] = {{"peak_rss_bytes", 96 * 1024 * 1024}, {"weights_bytes", 16 * 1024 * 1024}};
  const std::string id = add(make_spec("bert-tiny", "encoder-only", "opencl", "f32", 1, 32, 99));
  lease(id, 1, "worker-a", "opencl-0000000000000001");
  store_one(result(id, 1, "pass", "", mem));
  const std::string md = render_markdown(run_record(), rows(), {w});
  EXPECT_NE(md.find("## cpu · AMD EPYC 9R45 · 2 cores · AVX-512 VNNI (`cpu-00112233aabbccdd`)"), std::string::npos) << md;
  EXPECT_NE(md.find("## opencl · PoCL on AMD EPYC 9R45 · 2 cores · AVX-512 VNNI · software (`opencl-0000000000000001`)"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("## Memory: measured peak RSS / weights (MiB)"), std::string::npos) << md;
  EXPECT_NE(md.find("| bert-tiny | f32 | 96.0 / 16.0 |"), std::string::npos) << md;
}

}  // namespace
}  // namespace am::coord
