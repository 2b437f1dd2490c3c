// run_job_mode() in-process for the modes that return: result documents, exit codes, bad specs.
#include <unistd.h>

#include <fstream>
#include <random>
#include <sstream>

#include <gtest/gtest.h>

#include "jobs/job_spec.h"
#include "worker/executor.h"

namespace am::worker {
namespace {

using nlohmann::json;

class JobModeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::mt19937_64 rng(std::random_device{}());
    seed_ = rng();
    dir_ = std::filesystem::temp_directory_path() /
           ("am-jobmode-test-" + std::to_string(getpid()) + "-" + std::to_string(seed_));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::filesystem::path write_spec(const json& doc) {
    const auto file = dir_ / "spec.json";
    std::ofstream(file) << doc.dump();
    return file;
  }
  json spec_doc(const std::string& model) {
    jobs::JobSpec spec;
    spec.model = model;
    spec.architecture = "decoder-only";
    spec.seed = seed_;
    return jobs::to_json(spec);
  }
  json read_result() {
    std::ifstream in(result_);
    std::stringstream text;
    text << in.rdbuf();
    return json::parse(text.str());
  }

  uint64_t seed_ = 0;
  std::filesystem::path dir_;
  std::filesystem::path result_ = std::filesystem::temp_directory_path() / "unused";
};

TEST_F(JobModeTest, WritesTheResultDocumentAtomically) {
  result_ = dir_ / "out.json";
  EXPECT_EQ(run_job_mode(write_spec(spec_doc("selftest:pass")), result_, 0), 0);
  const json doc = read_result();
  EXPECT_EQ(doc.at("status"), "pass");
  EXPECT_EQ(doc.at("reason"), "");
  EXPECT_EQ(doc.at("metrics").at("seed").get<uint64_t>(), seed_);
  for (const auto& e : std::filesystem::directory_iterator(dir_)) {
    const std::string f = e.path().filename().string();
    EXPECT_FALSE(f.rfind("out.json.", 0) == 0 && f.size() > 4 && f.compare(f.size() - 4, 4, ".tmp") == 0)
        << "temporary left: " << f;
  }
}

TEST_F(JobModeTest, FailingSelftestReportsFailWithReason) {
  result_ = dir_ / "out.json";
  EXPECT_EQ(run_job_mode(write_spec(spec_doc("selftest:fail")), result_, 0), 0);
  const json doc = read_result();
  EXPECT_EQ(doc.at("status"), "fail");
  EXPECT_EQ(doc.at("reason"), "selftest: deliberate failure");
}

TEST_F(JobModeTest, ExitCodesWithoutResult) {
  result_ = dir_ / "out.json";
  EXPECT_EQ(run_job_mode(write_spec(spec_doc("selftest:exit3")), result_, 0), 3);
  EXPECT_EQ(run_job_mode(write_spec(spec_doc("selftest:noresult")), result_, 0), 0);
  EXPECT_EQ(run_job_mode(write_spec(spec_doc("selftest:no-such-mode")), result_, 0), 2);
  EXPECT_FALSE(std::filesystem::exists(result_));
}

TEST_F(JobModeTest, BadSpecFilesExitWithCode2) {
  result_ = dir_ / "out.json";
  EXPECT_EQ(run_job_mode(dir_ / "missing.json", result_, 0), 2);
  {
    std::ofstream(dir_ / "garbage.json") << "{not json";
  }
  EXPECT_EQ(run_job_mode(dir_ / "garbage.json", result_, 0), 2);
  json doc = spec_doc("selftest:pass");
  doc["architecture"] = "no-such-family";
  EXPECT_EQ(run_job_mode(write_spec(doc), result_, 0), 2);
  EXPECT_FALSE(std::filesystem::exists(result_));
}

// Its own code, which the executor reads as the worker's fault (its state dir), not the job's.
TEST_F(JobModeTest, UnwritableResultLocationExitsWithTheResultUnwritableCode) {
  result_ = dir_ / "no-such-dir" / "out.json";
  EXPECT_EQ(run_job_mode(write_spec(spec_doc("selftest:pass")), result_, 0), kExitResultUnwritable);
}

}  // namespace
}  // namespace am::worker
