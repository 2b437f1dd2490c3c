// Shared test scaffolding for the store, matrix and report tests: a temporary directory that
// removes itself, and a fixture that opens a real SQLite store there and drives jobs through
// lease and result like the coordinator does.
#pragma once

#include <gtest/gtest.h>

#include <sqlite3.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "coordinator/store.h"
#include "jobs/job_spec.h"
#include "jobs/plan.h"

namespace am::coord::testing {

// Tests spell statuses and precisions as the store and reports do; these turn the words into the
// enums through their one table ("" is a job without a terminal status).
inline std::optional<ResultStatus> status_named(std::string_view name) {
  if (name.empty()) return std::nullopt;
  const std::optional<ResultStatus> s = parse_result_status(name);
  EXPECT_TRUE(s.has_value()) << "no status named '" << name << "'";
  return s;
}

inline jobs::Precision precision_named(std::string_view name) {
  const std::optional<jobs::Precision> p = jobs::parse_precision(name);
  EXPECT_TRUE(p.has_value()) << "no precision named '" << name << "'";
  return p.value_or(jobs::Precision::kF32);
}

class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() /
            ("accelmatrix-store-test-" + std::to_string(rd()) + "-" + std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline std::string read_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Runs SQL on the file with a plain SQLite connection, bypassing the Store.
inline void raw_exec(const std::filesystem::path& db_path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(db_path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  const std::string message = err ? err : "";
  sqlite3_free(err);
  sqlite3_close(db);
  ASSERT_EQ(rc, SQLITE_OK) << message;
}

// First column of the first row as text ("" when no row).
inline std::string raw_query(const std::filesystem::path& db_path, const std::string& sql) {
  sqlite3* db = nullptr;
  if (sqlite3_open(db_path.c_str(), &db) != SQLITE_OK) return "<open failed>";
  sqlite3_stmt* stmt = nullptr;
  std::string out;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK) {
    out = std::string("<prepare failed: ") + sqlite3_errmsg(db) + ">";
  } else if (sqlite3_step(stmt) == SQLITE_ROW && sqlite3_column_text(stmt, 0)) {
    out = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return out;
}

inline jobs::JobSpec make_spec(const std::string& model, const std::string& architecture,
                               const std::string& backend, const std::string& precision,
                               int batch = 1, int seq_len = 32, uint64_t seed = 1234,
                               bool scaled = false) {
  jobs::JobSpec spec;
  spec.model = model;
  spec.architecture = architecture;
  spec.backend = backend;
  spec.precision = precision_named(precision);
  spec.batch = batch;
  spec.seq_len = seq_len;
  spec.seed = seed;
  spec.scaled = scaled;
  spec.model_config = {{"layers", 2}, {"hidden", 128}, {"heads", 2}};
  return spec;
}

// Raw samples around a median that make an exact speed-up interval: every sample is the median
// (a spread of zero), so ratings in tests follow the medians alone. Tests of the interval
// itself give their own samples.
inline std::vector<double> steady_samples(double median_ms, int count = 9) {
  return std::vector<double>(static_cast<std::size_t>(count), median_ms);
}

inline nlohmann::json perf_metrics(double median_ms, double p90_ms, double tokens_per_s,
                                   double nmse, double cosine, double top1) {
  return {{"latency_ms", {{"median", median_ms}, {"p90", p90_ms}, {"count", 20},
                          {"samples", steady_samples(median_ms)}}},
          {"throughput", {{"tokens_per_s", tokens_per_s}}},
          {"accuracy", {{"nmse", nmse}, {"cosine", cosine}, {"top1_agreement", top1}}}};
}

class StoreFixture : public ::testing::Test {
 protected:
  static constexpr const char* kRun = "run-1";
  static constexpr int64_t kT0 = 1'700'000'000'000;   // a fixed epoch ms so results are stable

  void SetUp() override {
    db_path_ = dir_.path() / "results.db";
    open_store();
    RunRecord run;
    run.run_id = kRun;
    run.plan_name = "smoke";
    run.plan_path = "jobs/plans/smoke.toml";
    run.description = "store tests";
    run.created_at_ms = kT0;
    ASSERT_TRUE(store_->upsert_run(run).ok());
  }

  void open_store() {
    store_.reset();
    auto opened = Store::open(db_path_);
    ASSERT_TRUE(opened.ok()) << opened.status().to_string();
    store_ = std::move(opened).value();
  }

  // Adds one job and returns its id.
  std::string add(const jobs::JobSpec& spec) {
    jobs::PlannedJob job{jobs::compute_job_id(kRun, spec), spec, std::string()};
    auto added = store_->add_jobs(kRun, {job});
    EXPECT_TRUE(added.ok()) << added.status().to_string();
    return job.job_id;
  }

  void lease(const std::string& job_id, int attempt, const std::string& worker = "worker-a",
             const std::string& hardware_class = "cpu-00112233aabbccdd") {
    LeaseRecord l;
    l.run_id = kRun;
    l.job_id = job_id;
    l.attempt = attempt;
    l.worker_id = worker;
    l.device = "cpu:0";
    l.hardware_class = hardware_class;
    l.leased_at_ms = kT0 + 1000 * attempt;
    l.lease_expires_at_ms = kT0 + 1000 * attempt + 60'000;
    Status s = store_->record_lease(l);
    ASSERT_TRUE(s.ok()) << s.to_string();
  }

  ResultRecord result(const std::string& job_id, int attempt, const std::string& status,
                      const std::string& reason = "", nlohmann::json metrics = nlohmann::json::object(),
                      const std::string& worker = "worker-a") {
    return result(job_id, attempt, status_named(status).value_or(ResultStatus::kError), reason,
                  std::move(metrics), worker);
  }

  ResultRecord result(const std::string& job_id, int attempt, ResultStatus status,
                      const std::string& reason = "", nlohmann::json metrics = nlohmann::json::object(),
                      const std::string& worker = "worker-a") {
    ResultRecord r;
    r.run_id = kRun;
    r.job_id = job_id;
    r.attempt = attempt;
    r.worker_id = worker;
    r.status = status;
    r.reason = reason;
    r.metrics = std::move(metrics);
    r.log_tail = "log of " + job_id + " attempt " + std::to_string(attempt);
    r.started_at_ms = kT0 + 2000 * attempt;
    r.finished_at_ms = kT0 + 2000 * attempt + 500;
    r.received_at_ms = kT0 + 2000 * attempt + 600;
    return r;
  }

  StoredOutcome store_one(const ResultRecord& r) {
    auto stored = store_->store_results({r});
    EXPECT_TRUE(stored.ok()) << stored.status().to_string();
    if (!stored.ok() || stored->size() != 1) return {};
    return stored->front();
  }

  // Lease attempt 1 and store its result: the usual life of a job.
  std::string run_job(const jobs::JobSpec& spec, const std::string& status,
                      const std::string& reason = "", nlohmann::json metrics = nlohmann::json::object()) {
    const std::string id = add(spec);
    lease(id, 1);
    const StoredOutcome out = store_one(result(id, 1, status, reason, std::move(metrics)));
    EXPECT_TRUE(out.became_terminal);
    return id;
  }

  std::vector<ReportRow> rows() {
    auto r = store_->report_rows(kRun);
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    return r.ok() ? *r : std::vector<ReportRow>{};
  }

  RunRecord run_record() {
    auto r = store_->get_run(kRun);
    EXPECT_TRUE(r.ok() && r->has_value());
    return r.ok() && r->has_value() ? **r : RunRecord{};
  }

  TempDir dir_;
  std::filesystem::path db_path_;
  std::unique_ptr<Store> store_;
};

}  // namespace am::coord::testing
