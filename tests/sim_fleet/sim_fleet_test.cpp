// The simulated fleet against the real coordinator (coord::Server in this process, its SQLite
// store on disk): what a benchmark or chaos test built on it may rely on.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <sqlite3.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "common/json_text.h"
#include "common/protocol.h"
#include "coordinator/matching.h"
#include "coordinator/server.h"
#include "jobs/plan.h"
#include "tests/sim_fleet/sim_fleet.h"
#include "tests/sim_fleet/sim_plan.h"

namespace am::sim {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() / ("accelmatrix-sim-fleet-" + std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

int64_t sql_int(const std::filesystem::path& db, const std::string& query) {
  sqlite3* h = nullptr;
  EXPECT_EQ(sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(h, query.c_str(), -1, &stmt, nullptr), SQLITE_OK) << query;
  int64_t v = 0;
  if (stmt && sqlite3_step(stmt) == SQLITE_ROW) v = sqlite3_column_int64(stmt, 0);
  sqlite3_finalize(stmt);
  sqlite3_close(h);
  return v;
}

// The first column of every row, as text.
std::set<std::string> sql_texts(const std::filesystem::path& db, const std::string& query) {
  sqlite3* h = nullptr;
  EXPECT_EQ(sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(h, query.c_str(), -1, &stmt, nullptr), SQLITE_OK) << query;
  std::set<std::string> out;
  while (stmt && sqlite3_step(stmt) == SQLITE_ROW) {
    const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
    out.insert(text != nullptr ? text : "");
  }
  sqlite3_finalize(stmt);
  sqlite3_close(h);
  return out;
}

jobs::Plan plan_of(const SimPlan& p) {
  auto plan = jobs::load_plan_text(p.toml, "sim.toml", std::filesystem::path(ACCELMATRIX_SOURCE_DIR) / "jobs" / "models");
  EXPECT_TRUE(plan.ok()) << plan.status().to_string();
  return plan.ok() ? *plan : jobs::Plan{};
}

// A coordinator serving on a thread; stop() ends it cleanly.
class Coordinator {
 public:
  Coordinator(const std::filesystem::path& db, const jobs::Plan& plan, const std::string& bind, bool exit_when_done,
              int64_t full_pass_interval_ms = reliability::kFullSchedulingPassMs) {
    coord::ServerOptions o;
    o.full_pass_interval_ms = full_pass_interval_ms;
    o.bind = bind;
    o.db_path = db;
    o.exit_when_done = exit_when_done;
    auto server = coord::Server::create(o);
    EXPECT_TRUE(server.ok()) << server.status().to_string();
    server_ = std::move(server).value();
    EXPECT_TRUE(server_->submit(plan, plan.name).ok());
    thread_ = std::thread([this] { status_ = server_->serve(stop_); });
  }
  ~Coordinator() { stop(); }
  void stop() {
    stop_.store(true);
    if (thread_.joinable()) thread_.join();
  }
  bool join_within(milliseconds timeout) {
    if (!SimFleet::wait_until([&] { return server_->all_done(); }, timeout)) return false;
    if (thread_.joinable()) thread_.join();
    return true;
  }
  std::string endpoint() const { return server_->endpoint(); }
  coord::ServerCounters counters() const { return server_->counters(); }
  coord::Progress progress() const { return server_->progress(); }
  const Status& status() const { return status_; }

 private:
  std::unique_ptr<coord::Server> server_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  Status status_ = Status::Ok();
};

TEST(SimRecords, CapabilityRecordIsReadByTheCoordinatorAsOneCpuDeviceOfTheSharedClass) {
  const auto devices = coord::devices_from_capabilities(sim_capabilities("box", "simhost-box"));
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_EQ(devices[0].key, "cpu:0");
  EXPECT_EQ(devices[0].backend, "cpu");
  EXPECT_EQ(devices[0].hardware_class, kSimHardwareClass);
  EXPECT_TRUE(devices[0].schedulable);
  EXPECT_TRUE(devices[0].host_cores);
  EXPECT_EQ(devices[0].precisions.size(), jobs::all_precisions().size());
  EXPECT_EQ(devices[0].memory_bytes, kSimDeviceMemoryBytes);
}

TEST(SimRecords, MetricsPayloadIsAboutOneKibibyteOnTheWireAndVariesWithTheSeed) {
  proto::JobResult r;
  r.job_id = "0123456789abcdef";
  r.attempt = 1;
  r.status = ResultStatus::kPass;
  r.metrics = sim_metrics(7);
  const std::size_t with = proto::encode(proto::Message{r}).body.size();
  r.metrics = nlohmann::json::object();
  const std::size_t without = proto::encode(proto::Message{r}).body.size();
  const std::size_t metrics_bytes = with - without;
  EXPECT_GE(metrics_bytes, kSimMetricsBytes * 8 / 10);
  EXPECT_LE(metrics_bytes, kSimMetricsBytes * 12 / 10);
  EXPECT_NE(sim_metrics(7).dump(), sim_metrics(8).dump());
  EXPECT_EQ(sim_metrics(7).dump(), sim_metrics(7).dump());
  EXPECT_FALSE(sim_metrics(7)["latency_ms"].contains("samples"));   // a summary, no raw samples
}

TEST(SimPlan, ExpandsToTheAnnouncedNumberOfJobs) {
  const SimPlan p = many_jobs_plan("count", 1000);
  EXPECT_GE(p.jobs, 1000);
  EXPECT_EQ(static_cast<int64_t>(plan_of(p).jobs.size()), p.jobs);
}

// Every job is stored once and acknowledged once; each device passes its health job first.
TEST(SimFleet, CompletesEveryJobOnceAgainstTheRealCoordinator) {
  TempDir dir;
  const SimPlan p = many_jobs_plan("fleet", 300);
  Coordinator c(dir.path() / "c.db", plan_of(p), "tcp://127.0.0.1:*", /*exit_when_done=*/true);
  FleetOptions o;
  o.endpoint = c.endpoint();
  o.workers = 8;
  o.slots = 2;
  o.threads = 2;
  auto fleet = SimFleet::start(o);
  ASSERT_TRUE(fleet.ok()) << fleet.status().to_string();
  ASSERT_TRUE(c.join_within(seconds(60)));
  EXPECT_TRUE(c.status().ok()) << c.status().to_string();
  const FleetStats s = (*fleet)->stats();
  (*fleet)->stop();
  EXPECT_EQ(s.welcomes, 8u);
  EXPECT_EQ(s.health_assigns, 8u);
  EXPECT_EQ(s.acks, static_cast<uint64_t>(p.jobs));
  EXPECT_EQ(s.assigns, static_cast<uint64_t>(p.jobs));
  EXPECT_EQ((*fleet)->take_latencies().size(), static_cast<std::size_t>(p.jobs));
  const auto db = dir.path() / "c.db";
  EXPECT_EQ(sql_int(db, "SELECT count(*) FROM jobs WHERE status = 'pass'"), p.jobs);
  EXPECT_EQ(sql_int(db, "SELECT count(*) FROM attempts WHERE state = 'done'"), p.jobs);
  EXPECT_EQ(sql_int(db, "SELECT count(DISTINCT worker_id) FROM attempts"), 8);
  EXPECT_GT(sql_int(db, "SELECT min(length(metrics_json)) FROM attempts"), 800);
  // The coordinator decodes a RESULT's metrics straight to JSON text: what it stores is, byte for
  // byte, the text of the tree each worker sent (its own sim_metrics()).
  std::set<std::string> sent;
  for (int i = 0; i < o.workers; ++i) sent.insert(to_json_text(sim_metrics(static_cast<uint64_t>(i) + 1)));
  EXPECT_EQ(sql_texts(db, "SELECT DISTINCT metrics_json FROM attempts"), sent);
  // The progress line of the last result summarizes its metrics, read from that text.
  std::set<std::string> summaries;
  for (int i = 0; i < o.workers; ++i) {
    const nlohmann::json m = sim_metrics(static_cast<uint64_t>(i) + 1);
    summaries.insert(fmt::format("  median {:.3f} ms  nmse {:.2e}", m["latency_ms"]["median"].get<double>(),
                                 m["accuracy"]["nmse"].get<double>()));
  }
  const std::string last = c.progress().last_event;
  EXPECT_EQ(last.rfind("pass  ", 0), 0u) << last;
  const std::size_t at = last.find("  median ");
  ASSERT_NE(at, std::string::npos) << last;
  EXPECT_EQ(summaries.count(last.substr(at)), 1u) << last;
}

// Between its full passes the scheduler walks only the workers whose own credit or result
// changed: with the full passes pushed past the run, those alone must hand every job out. One
// slot per worker, so each job after a worker's first waits on exactly that worker's events.
TEST(SimFleet, EachWorkersOwnCreditsAndResultsKeepItBusyWithoutFullPasses) {
  TempDir dir;
  const SimPlan p = many_jobs_plan("narrow", 200);
  Coordinator c(dir.path() / "c.db", plan_of(p), "tcp://127.0.0.1:*", /*exit_when_done=*/true,
                /*full_pass_interval_ms=*/3'600'000);
  FleetOptions o;
  o.endpoint = c.endpoint();
  o.workers = 3;
  o.slots = 1;
  o.threads = 1;
  auto fleet = SimFleet::start(o);
  ASSERT_TRUE(fleet.ok()) << fleet.status().to_string();
  ASSERT_TRUE(c.join_within(seconds(60))) << (*fleet)->stats().acks << " of " << p.jobs << " jobs acknowledged";
  EXPECT_TRUE(c.status().ok()) << c.status().to_string();
  const FleetStats s = (*fleet)->stats();
  (*fleet)->stop();
  EXPECT_EQ(s.acks, static_cast<uint64_t>(p.jobs));
  EXPECT_EQ(sql_int(dir.path() / "c.db", "SELECT count(DISTINCT worker_id) FROM attempts"), 3);
}

// A coordinator stopped while jobs run releases their leases and CANCELs them; the workers keep
// the `cancelled` RESULTs until a restarted coordinator on the same database and endpoint ACKs
// them, and every job still ends stored exactly once.
TEST(SimFleet, KeepsResultsUntilAcknowledgedAcrossACoordinatorRestart) {
  TempDir dir;
  const SimPlan p = many_jobs_plan("restart", 60);
  const auto db = dir.path() / "c.db";
  auto first = std::make_unique<Coordinator>(db, plan_of(p), "tcp://127.0.0.1:*", /*exit_when_done=*/false);
  const std::string endpoint = first->endpoint();
  FleetOptions o;
  o.endpoint = endpoint;
  o.workers = 4;
  o.slots = 2;
  o.job_ms = 150;
  o.heartbeat_interval_ms = 100;
  auto fleet = SimFleet::start(o);
  ASSERT_TRUE(fleet.ok());
  ASSERT_TRUE(SimFleet::wait_until([&] { return (*fleet)->stats().acks >= 8; }, seconds(20)));
  first->stop();
  EXPECT_GT(first->counters().leases_interrupted, 0u);
  first.reset();
  ASSERT_TRUE(SimFleet::wait_until([&] { return (*fleet)->stats().cancels > 0; }, seconds(5)));
  Coordinator second(db, plan_of(p), endpoint, /*exit_when_done=*/true);
  ASSERT_TRUE(second.join_within(seconds(60)));
  const FleetStats s = (*fleet)->stats();
  (*fleet)->stop();
  EXPECT_GT(s.results_resent, 0u);
  EXPECT_GE(s.welcomes, 8u);   // every worker registered with both coordinators
  EXPECT_EQ(sql_int(db, "SELECT count(*) FROM jobs WHERE status = 'pass'"), p.jobs);
  EXPECT_EQ(sql_int(db, "SELECT count(*) FROM attempts WHERE state = 'done' AND status = 'pass'"), p.jobs);
  EXPECT_GT(sql_int(db, "SELECT count(*) FROM attempts WHERE state = 'interrupted'"), 0);
}

// A coordinator that resumed a run from the store (Server::resume, no plan) sends each job the
// spec the plan's expansion gave it: family and scalars from the rows are the plan's, field for
// field, for every job.
TEST(SimFleet, AResumedCoordinatorSendsEveryJobTheSpecItsPlanGaveIt) {
  TempDir dir;
  const SimPlan p = many_jobs_plan("resumed", 150, "accuracy", "any");
  const jobs::Plan plan = plan_of(p);
  ASSERT_EQ(static_cast<int64_t>(plan.jobs.size()), p.jobs);
  const auto db = dir.path() / "c.db";
  coord::ServerOptions o;
  o.bind = "tcp://127.0.0.1:*";
  o.db_path = db;
  o.exit_when_done = true;
  {
    auto first = coord::Server::create(o);
    ASSERT_TRUE(first.ok()) << first.status().to_string();
    coord::SubmitOptions submit;
    submit.plan_digest = "d1:the-plans-inputs";
    ASSERT_TRUE((*first)->submit(plan, plan.name, submit).ok());
  }
  auto second = coord::Server::create(o);
  ASSERT_TRUE(second.ok()) << second.status().to_string();
  jobs::PlanSummary summary;
  summary.name = plan.name;
  EXPECT_EQ(*(*second)->resume(summary, plan.name, "d1:other-inputs"), coord::ResumeOutcome::kNotResumable);
  auto resumed = (*second)->resume(summary, plan.name, "d1:the-plans-inputs");
  ASSERT_TRUE(resumed.ok()) << resumed.status().to_string();
  ASSERT_EQ(*resumed, coord::ResumeOutcome::kResumed);

  std::mutex mu;
  std::map<std::string, nlohmann::json> sent;
  FleetOptions fo;
  fo.endpoint = (*second)->endpoint();
  fo.workers = 3;
  fo.slots = 2;
  fo.heartbeat_interval_ms = 100;
  fo.on_assign = [&](const proto::Assign& a) {
    std::lock_guard lock(mu);
    sent[a.job_id] = a.spec;
  };
  std::atomic<bool> stop{false};
  Status served = Status::Ok();
  std::thread serving([&] { served = (*second)->serve(stop); });
  auto fleet = SimFleet::start(fo);
  ASSERT_TRUE(fleet.ok());
  EXPECT_TRUE(SimFleet::wait_until([&] { return (*second)->all_done(); }, seconds(60)));
  stop.store(true);
  serving.join();
  (*fleet)->stop();
  EXPECT_TRUE(served.ok()) << served.to_string();
  std::lock_guard lock(mu);
  ASSERT_EQ(sent.size(), plan.jobs.size());
  for (const jobs::PlannedJob& job : plan.jobs) {
    auto it = sent.find(job.job_id);
    ASSERT_NE(it, sent.end()) << job.job_id;
    auto spec = jobs::job_spec_from_json(it->second);
    ASSERT_TRUE(spec.ok()) << spec.status().to_string();
    EXPECT_EQ(*spec, job.spec) << job.job_id << ": " << it->second.dump();
  }
}

// Every worker drops its connection and registers again in the same instant while holding
// leases: the coordinator keeps the leases they hold, loses none, and the run completes without
// waiting for a lease to expire.
TEST(SimFleet, ReconnectFloodLosesNoLease) {
  TempDir dir;
  const SimPlan p = many_jobs_plan("flood", 200);
  Coordinator c(dir.path() / "c.db", plan_of(p), "tcp://127.0.0.1:*", /*exit_when_done=*/true);
  FleetOptions o;
  o.endpoint = c.endpoint();
  o.workers = 40;
  o.slots = 1;
  o.threads = 2;
  o.job_ms = 100;
  auto fleet = SimFleet::start(o);
  ASSERT_TRUE(fleet.ok());
  ASSERT_TRUE(SimFleet::wait_until([&] { return (*fleet)->stats().acks >= 40; }, seconds(20)));
  (*fleet)->reconnect_all();
  ASSERT_TRUE(c.join_within(seconds(60)));
  const FleetStats s = (*fleet)->stats();
  (*fleet)->stop();
  const coord::ServerCounters k = c.counters();
  EXPECT_GE(s.reconnects, 40u);
  EXPECT_GE(k.reregistrations, 40u);
  EXPECT_EQ(k.leases_expired, 0u);
  const auto db = dir.path() / "c.db";
  EXPECT_EQ(sql_int(db, "SELECT count(*) FROM jobs WHERE status = 'pass'"), p.jobs);
  EXPECT_EQ(sql_int(db, "SELECT count(*) FROM jobs WHERE status = 'lost'"), 0);
  EXPECT_EQ(sql_int(db, "SELECT count(*) FROM attempts WHERE state = 'done'"), p.jobs);
}

}  // namespace
}  // namespace am::sim
