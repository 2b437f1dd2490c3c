// bench_scale: the coordinator at a million jobs (issue 15, docs/SCALE.md). Every figure is a
// measurement of the shipped code on this machine, in one run:
//   1. expand:   the plan (bert-tiny at 9 precisions x batches x lengths, placement `any`) expanded
//                in this process (jobs::load_plan_text), then `accelmatrix serve` started on a fresh
//                database: spawn -> endpoint written = parse + expand + insert + load; its RSS then,
//                with every job queued.
//   2. ingest:   the store (coordinator/store.h, WAL, the production synchronous setting, on disk)
//                takes leases and ~1 KiB results for half of the jobs (each RESULT decoded from
//                its wire bytes under the clock, as the coordinator does), in batches of each size of
//                --batch; rows/s per batch size (all of the store's indexes in place); beside it the
//                raw SQLite ceiling: the same rows by a bare INSERT into an integer-keyed table of
//                a database of its own with the store's settings (ingest_ceiling()).
//   3. restart:  `accelmatrix serve` started again on that database (half done): spawn -> endpoint,
//                spawn -> first ASSIGN of a run job to one simulated worker (tests/sim_fleet), RSS.
//   4. status:   `accelmatrix status --json` against that coordinator, wall time.
//   5. report:   the other half ingested, then `accelmatrix report --format F` (json, md, html, csv)
//                on the complete run, wall time and output size.
#include <sys/resource.h>

#include <csignal>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench/cli_parse.h"
#include "bench/coordinator_process.h"
#include "bench/process_stats.h"
#include "common/atomic_file.h"
#include "common/clock.h"
#include "common/json_text.h"
#include "common/protocol.h"
#include "common/spawn.h"
#include "coordinator/sqlite_db.h"
#include "coordinator/sqlite_statement.h"
#include "coordinator/sqlite_transaction.h"
#include "coordinator/store.h"
#include "jobs/plan.h"
#include "tests/sim_fleet/sim_fleet.h"
#include "tests/sim_fleet/sim_plan.h"
#include "tests/sim_fleet/sim_records.h"

#ifndef ACCELMATRIX_SOURCE_DIR
#error "ACCELMATRIX_SOURCE_DIR must be defined by the build (bench/CMakeLists.txt)"
#endif

namespace {

using nlohmann::json;
namespace fs = std::filesystem;

constexpr const char* kRun = "scale";

struct Args {
  int64_t jobs = 1'000'000;
  std::vector<int> batches{64, 256, 1024, 4096};
  int64_t rows_per_batch_size = 20'000;   // measured rows per batch size before the rest
  std::string json_path;
  std::string accelmatrix;
  std::string dir;
  bool keep = false;
  bool reports = true;
  std::vector<std::string> report_formats{"json", "md", "csv", "html"};
  double timeout_s = 1800;
};

fs::path catalog() { return fs::path(ACCELMATRIX_SOURCE_DIR) / "jobs" / "models"; }

double mib(int64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }

// Runs the accelmatrix CLI to completion; its wall time, or an error naming the command.
// The serving coordinator's RSS is read every kRssSettleInterval until two reads differ by less
// than kRssSettledBytes (at most kRssSettleMaxSamples reads).
constexpr auto kRssSettleInterval = std::chrono::milliseconds(1000);
constexpr int64_t kRssSettledBytes = 2 << 20;
constexpr int kRssSettleMaxSamples = 60;

// How often a timed command's memory high-water mark is read while it runs.
constexpr auto kRssSampleInterval = std::chrono::milliseconds(20);

// Wall seconds of `bin args`; its peak RSS (VmHWM, read while it runs) into `peak_rss_bytes`.
am::Result<double> timed_cli(const std::string& bin, const std::vector<std::string>& args, const fs::path& log,
                             int64_t* peak_rss_bytes = nullptr) {
  am::SpawnOptions so;
  so.output = am::SpawnOptions::Output::kFile;
  so.output_file = log;
  std::vector<std::string> argv{bin};
  argv.insert(argv.end(), args.begin(), args.end());
  const auto t0 = am::SteadyClock::now();
  auto child = am::ChildProcess::spawn(argv, so);
  if (!child.ok()) return child.status();
  int64_t peak = 0;
  const pid_t pid = child->pid();
  while (!child->exited()) {
    peak = std::max(peak, am::bench::sample_process(pid).peak_rss_bytes);
    std::this_thread::sleep_for(kRssSampleInterval);
  }
  if (peak_rss_bytes != nullptr) *peak_rss_bytes = peak;
  auto exit = child->wait();
  const double s = am::seconds_since(t0);
  if (!exit.ok()) return exit.status();
  if (exit->shell_code() != 0) {
    return am::internal_error(fmt::format("{} {} exited {}: {}", bin, args.front(), exit->shell_code(),
                                          am::bench::read_text(log).substr(0, 2000)));
  }
  return s;
}

// CPU seconds of this process during the store calls of ingest(), summed: against their wall
// time it says whether ingest waits for the disk or computes.
double g_ingest_cpu_s = 0;
double g_lease_s = 0;

// Leases and stores results for jobs [from, to) of `ids` in batches of `batch`; returns rows/s of
// what the coordinator does per result from the wire to the store: each RESULT is made and
// encoded before the clock runs (as a worker sends it), then under the clock decoded
// (proto::decode: the metrics straight to JSON text), made a ResultRecord by result_record_of()
// as Server::on_result makes it, and stored with the leases of its batch.
am::Result<double> ingest(am::coord::Store& store, const std::vector<std::string>& ids, std::size_t from,
                          std::size_t to, int batch) {
  double stored_s = 0;
  std::vector<am::coord::LeaseRecord> leases;
  std::vector<am::coord::ResultRecord> results;
  std::vector<am::proto::Frames> wire;
  for (std::size_t i = from; i < to;) {
    const std::size_t end = std::min(to, i + static_cast<std::size_t>(batch));
    leases.clear();
    results.clear();
    wire.clear();
    const int64_t now = am::now_epoch_ms();
    for (std::size_t k = i; k < end; ++k) {
      am::coord::LeaseRecord l;
      l.run_id = kRun;
      l.job_id = ids[k];
      l.attempt = 1;
      l.worker_id = "sim-scale-0";
      l.device = "cpu:0";
      l.hardware_class = am::sim::kSimHardwareClass;
      l.leased_at_ms = now;
      l.lease_expires_at_ms = now + 150'000;
      leases.push_back(std::move(l));
      am::proto::JobResult r;
      r.job_id = ids[k];
      r.attempt = 1;
      r.status = am::ResultStatus::kPass;
      r.metrics = am::sim::sim_metrics(k);
      r.log_tail = "simulated job: finished at once\n";
      r.started_at_ms = now - 5;
      r.finished_at_ms = now;
      wire.push_back(am::proto::encode(am::proto::Message{std::move(r)}));
    }
    // As the coordinator does: the leases of a scheduling pass in one transaction, then the
    // results of a batch, decoded as they arrive, in one.
    const auto t0 = am::SteadyClock::now();
    const double cpu0 = am::bench::sample_self().cpu_s;
    AM_RETURN_IF_ERROR(store.record_leases(leases));
    g_lease_s += am::seconds_since(t0);
    for (const am::proto::Frames& f : wire) {
      AM_ASSIGN_OR_RETURN(am::proto::Message m, am::proto::decode(f.type, f.body));
      auto& got = std::get<am::proto::JobResult>(m.body);
      results.push_back(am::coord::result_record_of(got, kRun, "sim-scale-0", now));
    }
    AM_ASSIGN_OR_RETURN(auto outcomes, store.store_results(results));
    stored_s += am::seconds_since(t0);
    g_ingest_cpu_s += am::bench::sample_self().cpu_s - cpu0;
    (void)outcomes;
    i = end;
  }
  return static_cast<double>(to - from) / std::max(1e-9, stored_s);
}

// The raw SQLite ceiling of ingest, measured beside it: the same result rows (metrics already as
// text, made before the clock, as ingest() makes its records before the clock) inserted by one
// prepared INSERT into a bare table keyed by integers, one transaction per batch, in a database of
// its own in the same directory with the store's settings (WAL, synchronous NORMAL, its page size
// and page cache). What ingest costs beyond this is the store's own: the lease, the job's state, the
// text keys and indexes, and writing the metrics document as text.
// The writer connection's settings coordinator/store.cpp gives itself (kWriterCacheKib,
// kWalAutocheckpointBytes; per connection, so not readable from the store's file).
constexpr int64_t kStoreWriterCacheKib = 64 * 1024;
constexpr int64_t kStoreWalAutocheckpointBytes = 64 * 1024 * 1024;

am::Result<double> ingest_ceiling(const fs::path& store_db, const fs::path& dir, std::size_t rows, int batch) {
  int64_t page_bytes = 4096;
  {
    AM_ASSIGN_OR_RETURN(auto src, am::coord::sqlite::SqliteDb::open_read_only(store_db, /*immutable=*/false));
    AM_ASSIGN_OR_RETURN(auto page, am::coord::sqlite::Statement::prepare(src.get(), "PRAGMA page_size"));
    AM_ASSIGN_OR_RETURN(bool row, page.step());
    if (row) page_bytes = page.column_int64(0);
  }
  const fs::path path = dir / "ceiling.db";
  std::error_code ec;
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(path.string() + suffix, ec);
  double stored_s = 0;
  {
    AM_ASSIGN_OR_RETURN(auto db, am::coord::sqlite::SqliteDb::open(path));
    AM_RETURN_IF_ERROR(am::coord::sqlite::exec(
        db.get(), fmt::format("PRAGMA page_size = {}; PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; "
                              "PRAGMA cache_size = {}; PRAGMA wal_autocheckpoint = {};",
                              page_bytes, -kStoreWriterCacheKib, kStoreWalAutocheckpointBytes / page_bytes)));
    AM_RETURN_IF_ERROR(am::coord::sqlite::exec(db.get(), R"sql(
        CREATE TABLE results (job INTEGER NOT NULL, attempt INTEGER NOT NULL, worker_id TEXT NOT NULL,
                              status TEXT NOT NULL, reason TEXT NOT NULL, metrics_json TEXT NOT NULL,
                              log_tail TEXT NOT NULL, started_at INTEGER NOT NULL, finished_at INTEGER NOT NULL,
                              received_at INTEGER NOT NULL, PRIMARY KEY (job, attempt)))sql"));
    AM_ASSIGN_OR_RETURN(auto insert, am::coord::sqlite::Statement::prepare(
                                         db.get(), "INSERT INTO results VALUES (?1, 1, ?2, 'pass', '', ?3, ?4, ?5, ?6, ?6)"));
    std::vector<std::string> metrics;
    for (std::size_t i = 0; i < rows;) {
      const std::size_t end = std::min(rows, i + static_cast<std::size_t>(batch));
      metrics.clear();
      for (std::size_t k = i; k < end; ++k) metrics.push_back(am::to_json_text(am::sim::sim_metrics(k)));
      const int64_t now = am::now_epoch_ms();
      const auto t0 = am::SteadyClock::now();
      AM_ASSIGN_OR_RETURN(auto tx, am::coord::sqlite::Transaction::begin(db.get()));
      for (std::size_t k = i; k < end; ++k) {
        insert.reset();
        insert.bind(1, static_cast<int64_t>(k))
            .bind(2, std::string("sim-scale-0"))
            .bind(3, metrics[k - i])
            .bind(4, std::string("simulated job: finished at once\n"))
            .bind(5, now - 5)
            .bind(6, now);
        AM_RETURN_IF_ERROR(insert.run());
      }
      AM_RETURN_IF_ERROR(tx.commit());
      stored_s += am::seconds_since(t0);
      i = end;
    }
  }
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(path.string() + suffix, ec);
  return static_cast<double>(rows) / std::max(1e-9, stored_s);
}

}  // namespace

// The figures as JSON when asked: 0, or 1 with a message when the file cannot be written.
int write_json(const std::string& path, const nlohmann::json& doc) {
  if (path.empty()) return 0;
  if (am::Status st = am::write_file_atomically(path, doc.dump(2) + "\n"); !st.ok()) {
    std::fprintf(stderr, "bench_scale: cannot write %s: %s\n", path.c_str(), st.message().c_str());
    return 1;
  }
  return 0;
}

int main(int argc, char** argv) {
  CLI::App app{"bench_scale: coordinator expansion, RSS, ingest, restart, status and report at a million jobs"};
  Args args;
  app.add_option("--jobs", args.jobs, "Jobs in the plan (at least; the plan rounds up)")->check(CLI::Range(1000, 100'000'000));
  app.add_option("--batch", args.batches, "Ingest batch sizes to measure, e.g. 64,256,1024")
      ->delimiter(',')
      ->check(CLI::Range(1, 1'000'000));
  app.add_option("--rows-per-batch-size", args.rows_per_batch_size, "Rows measured per batch size")
      ->check(CLI::Range(1, 100'000'000));
  app.add_option("--json", args.json_path, "Write the figures as JSON to this file");
  app.add_option("--accelmatrix", args.accelmatrix, "The coordinator binary (default: ../accelmatrix beside this one)");
  app.add_option("--dir", args.dir, "Scratch directory on a disk (default: the system temp dir)");
  app.add_flag("--keep", args.keep, "Keep the scratch directory");
  app.add_flag("!--no-reports", args.reports, "Stop after the restart and status (no second half, no reports)");
  app.add_option("--report-formats", args.report_formats, "Report formats to time, e.g. json,md")
      ->delimiter(',')
      ->check(CLI::IsMember({"json", "md", "csv", "html", "junit"}));
  AM_BENCH_PARSE(app, argc, argv);
  if (args.accelmatrix.empty()) args.accelmatrix = (am::bench::self_dir().parent_path() / "accelmatrix").string();
  const fs::path base = args.dir.empty() ? fs::temp_directory_path() : fs::path(args.dir);
  if (am::Status disk = am::bench::require_disk_backed(base); !disk.ok()) {
    std::cerr << "bench_scale: " << disk.to_string() << " (use --dir on a disk)\n";
    return 2;
  }
  const fs::path dir = base / fmt::format("bench-scale-{}", ::getpid());
  fs::create_directories(dir);
  json out{{"cpu", am::bench::cpu_model_name()}, {"cpus", std::thread::hardware_concurrency()}};
  auto fail = [&](const std::string& what, const am::Status& st) {
    std::cerr << "bench_scale: " << what << ": " << st.to_string() << "\n";
    if (!args.keep) fs::remove_all(dir);
    return 1;
  };

  // 1. expansion, insert, RSS with every job queued
  const am::sim::SimPlan plan = am::sim::many_jobs_plan(kRun, args.jobs, "accuracy", "any");
  std::string toml = plan.toml;
  toml.insert(toml.find("\n\n[defaults]"), "\nmax_jobs = " + std::to_string(plan.jobs));
  double expand_s = 0;
  std::vector<std::string> ids;   // the bench keeps the job ids, not a million specs
  {
    const auto te = am::SteadyClock::now();
    auto parsed = am::jobs::load_plan_text(toml, "scale.toml", catalog());
    expand_s = am::seconds_since(te);
    if (!parsed.ok()) return fail("expanding the plan", parsed.status());
    ids.reserve(parsed->jobs.size());
    for (const auto& j : parsed->jobs) ids.push_back(j.job_id);
  }
  const std::size_t n = ids.size();
  std::printf("bench_scale on %s (%u CPUs online), %zu jobs\n", out["cpu"].get<std::string>().c_str(),
              std::thread::hardware_concurrency(), n);
  std::printf("  expand plan (in-process)           %8.2f s\n", expand_s);
  std::fflush(stdout);

  am::bench::ServeOptions so;
  so.accelmatrix = args.accelmatrix;
  so.dir = dir / "serve";
  so.plan_toml = toml;
  so.catalog = catalog();
  so.timeout_s = args.timeout_s;
  auto first = am::bench::start_coordinator(so);
  if (!first.ok()) return fail("starting the coordinator", first.status());
  // Sampled once serving and settled: the plan start_server() held is freed and the heap trimmed
  // (serve_loop's malloc_trim) after the endpoint is written; at a million jobs that takes
  // seconds, so the RSS is read until it stops moving (a fixed 2 s read 603 MB once, 283 MB once).
  am::bench::ProcessSample queued = am::bench::sample_process(first->child->pid());
  for (int i = 0; i < kRssSettleMaxSamples; ++i) {
    std::this_thread::sleep_for(kRssSettleInterval);
    const am::bench::ProcessSample next = am::bench::sample_process(first->child->pid());
    const bool settled = std::abs(next.rss_bytes - queued.rss_bytes) < kRssSettledBytes;
    queued = next;
    if (settled && i > 0) break;
  }
  am::bench::stop_coordinator(*first);
  std::printf("  serve: expand + insert + load      %8.2f s   RSS %7.1f MB with %zu queued (peak %.1f MB)\n",
              first->startup_s, mib(queued.rss_bytes), n, mib(queued.peak_rss_bytes));
  std::fflush(stdout);
  out["expand_s"] = expand_s;
  out["serve_start_s"] = first->startup_s;
  out["queued_rss_mb"] = mib(queued.rss_bytes);
  out["queued_peak_rss_mb"] = mib(queued.peak_rss_bytes);
  out["jobs"] = n;

  // 2. ingest half, by batch size first
  const std::size_t half = n / 2;
  {
    auto store = am::coord::Store::open(first->db);
    if (!store.ok()) return fail("opening the store", store.status());
    am::coord::WorkerRecord w;
    w.worker_id = "sim-scale-0";
    w.hostname = "simhost";
    w.capabilities = am::sim::sim_capabilities("simhost", "simhost");
    if (am::Status st = (*store)->upsert_worker(w); !st.ok()) return fail("storing the worker", st);
    std::size_t at = 0;
    json rates = json::array();
    int best_batch = args.batches.empty() ? 256 : args.batches.front();
    double best = 0;
    for (int b : args.batches) {
      const std::size_t to = std::min(half, at + static_cast<std::size_t>(args.rows_per_batch_size));
      if (to <= at) break;
      g_ingest_cpu_s = 0;
      g_lease_s = 0;
      auto rate = ingest(**store, ids, at, to, b);
      if (!rate.ok()) return fail("ingesting", rate.status());
      const double wall_s = static_cast<double>(to - at) / *rate;
      std::printf("  ingest batch %5d                  %8.0f rows/s (lease + result per row), CPU %.0f%% of the wall time, leases %.0f%%\n",
                  b, *rate, 100.0 * g_ingest_cpu_s / wall_s, 100.0 * g_lease_s / wall_s);
      std::fflush(stdout);
      rates.push_back({{"batch", b}, {"rows_per_s", *rate}, {"rows", to - at}, {"cpu_fraction", g_ingest_cpu_s / wall_s}});
      if (*rate > best) {
        best = *rate;
        best_batch = b;
      }
      at = to;
    }
    auto rest = ingest(**store, ids, at, half, best_batch);
    if (!rest.ok()) return fail("ingesting", rest.status());
    std::printf("  ingest to half done (batch %d)    %8.0f rows/s over %zu rows\n", best_batch, *rest, half - at);
    std::fflush(stdout);
    out["ingest"] = rates;
    out["ingest_rest"] = {{"batch", best_batch}, {"rows_per_s", *rest}, {"rows", half - at}};
    const std::size_t ceiling_rows = static_cast<std::size_t>(std::max<int64_t>(1, args.rows_per_batch_size));
    auto ceiling = ingest_ceiling(first->db, dir, ceiling_rows, best_batch);
    if (!ceiling.ok()) return fail("measuring the raw insert ceiling", ceiling.status());
    std::printf("  raw SQLite insert, same rows       %8.0f rows/s (batch %d); ingest at %.3f of it\n", *ceiling,
                best_batch, best / *ceiling);
    out["ingest_ceiling"] = {{"batch", best_batch}, {"rows_per_s", *ceiling}, {"rows", ceiling_rows},
                             {"ratio", best / *ceiling}};
  }

  // 3. restart on the half-done database, 4. status
  {
    const auto t0 = am::steady_ms();
    auto second = am::bench::start_coordinator(so);
    if (!second.ok()) return fail("restarting the coordinator", second.status());
    am::sim::FleetOptions fo;
    fo.endpoint = second->endpoint;
    fo.workers = 1;
    fo.slots = 1;
    fo.prefix = "scale";
    auto fleet = am::sim::SimFleet::start(fo);
    if (!fleet.ok()) return fail("starting the simulated worker", fleet.status());
    const bool assigned = am::sim::SimFleet::wait_until([&] { return (*fleet)->stats().first_assign_ms != 0; },
                                                        std::chrono::seconds(600));
    const double to_assign = assigned ? static_cast<double>((*fleet)->stats().first_assign_ms - t0) / 1000.0 : -1;
    std::this_thread::sleep_for(std::chrono::seconds(2));
    const am::bench::ProcessSample rs = am::bench::sample_process(second->child->pid());
    std::printf("  restart: spawn -> endpoint         %8.2f s\n", second->startup_s);
    std::printf("  restart: spawn -> first ASSIGN     %8.2f s   RSS %7.1f MB with %zu queued\n", to_assign,
                mib(rs.rss_bytes), n - half);
    auto status_s = timed_cli(args.accelmatrix, {"status", "--json", "--coordinator", second->endpoint, "--timeout-ms", "600000"},
                              dir / "status.json");
    (*fleet)->stop();
    am::bench::stop_coordinator(*second);
    if (!status_s.ok()) return fail("accelmatrix status", status_s.status());
    std::printf("  status --json                      %8.2f s\n", *status_s);
    std::fflush(stdout);
    out["restart_endpoint_s"] = second->startup_s;
    out["restart_first_assign_s"] = to_assign;
    out["restart_rss_mb"] = mib(rs.rss_bytes);
    out["status_s"] = *status_s;
  }

  // 5. the rest ingested, then reports on every result
  if (!args.reports) {
    const int written = write_json(args.json_path, out);
    if (!args.keep) fs::remove_all(dir);
    return written;
  }
  {
    auto store = am::coord::Store::open(first->db);
    if (!store.ok()) return fail("opening the store", store.status());
    const int64_t done = am::bench::sql_int(first->db, "SELECT count(*) FROM jobs WHERE state = 'done'");
    // Jobs the restarted coordinator's worker finished are done already; ingest the rest.
    std::vector<std::string> rest;
    {
      auto rows = (*store)->load_jobs(kRun);
      if (!rows.ok()) return fail("loading jobs", rows.status());
      for (const auto& r : *rows) {
        if (r.state != am::coord::JobState::kDone && r.attempts == 0) rest.push_back(r.job_id);
      }
    }
    auto rate = ingest(**store, rest, 0, rest.size(), out["ingest_rest"]["batch"].get<int>());
    if (!rate.ok()) return fail("ingesting", rate.status());
    std::printf("  ingest the other half              %8.0f rows/s over %zu rows (%lld done before)\n", *rate,
                rest.size(), static_cast<long long>(done));
  }
  const int64_t results = am::bench::sql_int(first->db, "SELECT count(*) FROM attempts WHERE state = 'done'");
  out["results"] = results;
  json reports = json::object();
  for (const std::string& format : args.report_formats) {
    const fs::path file = dir / ("report." + format);
    int64_t peak = 0;
    auto s = timed_cli(args.accelmatrix, {"report", "--db", first->db.string(), "--format", format, "-o", file.string()},
                       dir / "report.log", &peak);
    if (!s.ok()) return fail("report --format " + format, s.status());
    std::error_code ec;
    const auto size = fs::file_size(file, ec);
    std::printf("  report --format %-4s on %lld results %8.2f s   %7.1f MB   peak RSS %7.1f MB\n", format.c_str(),
                static_cast<long long>(results), *s, ec ? 0.0 : mib(static_cast<int64_t>(size)), mib(peak));
    std::fflush(stdout);
    reports[format] = {{"seconds", *s}, {"bytes", ec ? 0 : size}, {"peak_rss_mb", mib(peak)}};
  }
  out["reports"] = reports;
  std::error_code ec;
  out["db_mb"] = mib(static_cast<int64_t>(fs::file_size(first->db, ec)));
  std::printf("  database %.1f MB\n", out["db_mb"].get<double>());
  const int written = write_json(args.json_path, out);
  if (!args.keep) fs::remove_all(dir);
  return written;
}
