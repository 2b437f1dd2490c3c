// bench_dispatch: how fast the real coordinator hands out jobs and stores their results, against
// the raw ZeroMQ round-trip ceiling measured in the same run (issue 15, docs/SCALE.md).
//
// For each fleet size N (--workers 8,64,1000) it runs, in this order:
//   1. the ceiling: a bare ROUTER process (this binary, --raw-router) and N DEALER peers here with
//      the same credit, frames and message sizes as the real ASSIGN and RESULT;
//   2. the real thing: `accelmatrix serve` (the shipped binary: server, scheduler, SQLite store
//      in WAL mode with its production synchronous setting, on a disk-backed temp directory)
//      serving a plan of --jobs bert-tiny jobs to N simulated workers (tests/sim_fleet: HELLO with
//      a capability record, credit windows, PROGRESS, a ~1 KiB RESULT kept until ACKed,
//      heartbeats), which finish every job at once;
//   3. the ceiling again (the host's load moves: the ratio uses the mean of 1 and 3).
// Reported per N: durable jobs/s (ACKs, which the coordinator sends only after the commit), the
// steady rate between 10% and 90% of the jobs, the ratio to the ceiling, ASSIGN->ACK latency p50
// and p99, the coordinator's CPU (% of one core) and RSS, and the load average.
// Then, with the largest N: the coordinator's CPU with every worker connected and idle,
// heartbeating at the default interval (--idle-seconds), and a reconnect flood: every worker
// drops its connection and registers again at the same instant while holding leases; the run
// must complete with no lease expired, no job lost and every result stored once.
#include <sqlite3.h>
#include <unistd.h>

#include <csignal>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench/cli_parse.h"
#include "bench/coordinator_process.h"
#include "bench/process_stats.h"
#include "bench/zmq_ceiling.h"
#include "common/atomic_file.h"
#include "common/clock.h"
#include "common/protocol.h"
#include "common/reliability.h"
#include "common/spawn.h"
#include "jobs/plan.h"
#include "tests/sim_fleet/sim_fleet.h"
#include "tests/sim_fleet/sim_plan.h"

#ifndef ACCELMATRIX_SOURCE_DIR
#error "ACCELMATRIX_SOURCE_DIR must be defined by the build (bench/CMakeLists.txt)"
#endif

namespace {

using am::bench::ProcessSample;
using am::bench::Served;
using am::bench::read_text;
using am::bench::self_dir;
using am::bench::sql_int;
using am::bench::stop_coordinator;
using am::bench::wait_for_endpoint;
using am::bench::sample_process;
using am::bench::sample_self;
using am::sim::FleetOptions;
using am::sim::SimFleet;
using nlohmann::json;

struct Args {
  std::vector<int> workers{8, 64, 1000};
  int64_t jobs = 20'000;
  std::string json_path;
  std::string accelmatrix;
  std::string dir;
  int threads = 1;
  int credit = 0;                 // 0: by fleet size (credit_for)
  double raw_seconds = 2.0;
  double idle_seconds = 10.0;
  bool flood = true;
  double timeout_s = 900;
  bool progress = false;          // PROGRESS `started` per ASSIGN (the real worker sends it)
  bool keep = false;
  // Child mode: the raw ROUTER.
  std::string raw_router_file;
  std::size_t raw_assign_bytes = 0;
};

// Credit per worker by fleet size: enough jobs in flight to keep a small fleet busy, one each in
// a large one (the points docs/LIMITS.md measured the raw loop at: 8 x 16, 64 x 4, 1000 x 1).
int credit_for(int workers) {
  if (workers <= 8) return 16;
  if (workers <= 64) return 4;
  if (workers <= 256) return 2;
  return 1;
}

int64_t stored_counter(const std::filesystem::path& db, const std::string& name) {
  return sql_int(db, "SELECT coalesce((SELECT value FROM counters WHERE name = '" + name + "'), 0)");
}

// The encoded sizes of a real ASSIGN of the plan's first job and of a simulated worker's RESULT.
std::pair<std::size_t, std::size_t> message_sizes(const am::sim::SimPlan& plan) {
  auto parsed = am::jobs::load_plan_text(plan.toml, "dispatch.toml",
                                         std::filesystem::path(ACCELMATRIX_SOURCE_DIR) / "jobs" / "models");
  am::proto::Assign a;
  a.job_id = "0123456789abcdef";
  a.attempt = 1;
  a.lease_ms = 150'000;
  a.device = "cpu:0";
  if (parsed.ok() && !parsed->jobs.empty()) a.spec = am::jobs::to_json(parsed->jobs.front().spec);
  am::proto::JobResult r;
  r.job_id = a.job_id;
  r.attempt = 1;
  r.status = am::ResultStatus::kPass;
  r.metrics = am::sim::sim_metrics(1);
  r.log_tail = "simulated job: finished at once\n";
  r.started_at_ms = r.finished_at_ms = am::now_epoch_ms();
  return {am::proto::encode(am::proto::Message{a}).body.size(), am::proto::encode(am::proto::Message{r}).body.size()};
}

struct Ceiling {
  double rate = 0;
  double server_cpu_pct = 0;
  double client_cpu_pct = 0;
};

am::Result<Ceiling> measure_ceiling(const Args& args, const std::filesystem::path& dir, int workers, int credit,
                                    std::size_t assign_bytes, std::size_t result_bytes) {
  const auto endpoint_file = dir / "raw-endpoint";
  std::filesystem::remove(endpoint_file);
  am::SpawnOptions so;
  so.output = am::SpawnOptions::Output::kFile;
  so.output_file = dir / "raw-router.log";
  auto child = am::ChildProcess::spawn({(self_dir() / "bench_dispatch").string(), "--raw-router", endpoint_file.string(),
                                        "--raw-assign-bytes", std::to_string(assign_bytes)},
                                       so);
  if (!child.ok()) return child.status();
  const std::string endpoint = wait_for_endpoint(*child, endpoint_file, 30);
  if (endpoint.empty()) return am::internal_error("the raw ROUTER did not start (see " + so.output_file.string() + ")");
  am::bench::CeilingOptions o;
  o.endpoint = endpoint;
  o.peers = workers;
  o.credit = credit;
  o.threads = args.threads;
  o.result_bytes = result_bytes;
  o.seconds = args.raw_seconds;
  o.warmup_s = std::min(1.0, std::max(0.2, args.raw_seconds / 4));
  const ProcessSample s0 = sample_process(child->pid());
  auto r = am::bench::run_ceiling_dealers(o);
  const ProcessSample s1 = sample_process(child->pid());
  child->signal(SIGTERM);
  (void)child->wait();
  if (!r.ok()) return r.status();
  const double window = r->seconds + o.warmup_s;   // the server's CPU is sampled around both
  return Ceiling{r->round_trips_per_s, 100.0 * (s1.cpu_s - s0.cpu_s) / window, 100.0 * r->client_cpu_s / r->seconds};
}

am::Result<Served> start_coordinator(const Args& args, const std::filesystem::path& dir, const std::string& plan_toml,
                                     bool exit_when_done) {
  am::bench::ServeOptions o;
  o.accelmatrix = args.accelmatrix;
  o.dir = dir;
  o.plan_toml = plan_toml;
  o.catalog = std::filesystem::path(ACCELMATRIX_SOURCE_DIR) / "jobs" / "models";
  if (exit_when_done) o.extra_args.push_back("--exit-when-done");
  o.timeout_s = args.timeout_s;
  return am::bench::start_coordinator(o);
}

// The rate between the moments `from` and `to` of the jobs were acknowledged, from samples
// (time s, acks) taken by the polling loop.
double window_rate(const std::vector<std::pair<double, uint64_t>>& samples, uint64_t from, uint64_t to) {
  double t_from = -1, t_to = -1;
  uint64_t a_from = 0, a_to = 0;
  for (const auto& [t, acks] : samples) {
    if (t_from < 0 && acks >= from) {
      t_from = t;
      a_from = acks;
    }
    if (t_to < 0 && acks >= to) {
      t_to = t;
      a_to = acks;
    }
  }
  if (t_from < 0 || t_to <= t_from || a_to <= a_from) return 0;   // too few samples in the window
  return static_cast<double>(a_to - a_from) / (t_to - t_from);
}

struct DispatchResult {
  json row;
  bool ok = false;
};

DispatchResult measure_dispatch(const Args& args, const std::filesystem::path& dir, int workers, int credit,
                                const am::sim::SimPlan& plan, bool measure_idle) {
  DispatchResult out;
  json& row = out.row;
  auto served = start_coordinator(args, dir, plan.toml, /*exit_when_done=*/false);
  if (!served.ok()) {
    row["error"] = served.status().to_string();
    return out;
  }
  const pid_t pid = served->child->pid();
  const ProcessSample c0 = sample_process(pid);
  const ProcessSample f0 = sample_self();
  const double load0 = am::bench::load_average_1m();
  FleetOptions fo;
  fo.endpoint = served->endpoint;
  fo.workers = workers;
  fo.slots = credit;
  fo.threads = args.threads;
  fo.send_progress = args.progress;
  fo.prefix = std::to_string(workers);
  auto fleet = SimFleet::start(fo);
  if (!fleet.ok()) {
    row["error"] = fleet.status().to_string();
    stop_coordinator(*served);
    return out;
  }
  const auto t0 = am::SteadyClock::now();
  std::vector<std::pair<double, uint64_t>> samples;
  const uint64_t target = static_cast<uint64_t>(plan.jobs);
  bool done = false;
  while (am::seconds_since(t0) < args.timeout_s) {
    const uint64_t acks = (*fleet)->stats().acks;
    samples.emplace_back(am::seconds_since(t0), acks);
    if (acks >= target) {
      done = true;
      break;
    }
    if (served->child->exited()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const double wall = am::seconds_since(t0);
  const ProcessSample c1 = sample_process(pid);
  const ProcessSample f1 = sample_self();
  const double load1 = am::bench::load_average_1m();
  const am::sim::FleetStats st = (*fleet)->stats();
  std::vector<int64_t> lat = (*fleet)->take_latencies();
  const double active_s = st.last_ack_ms > st.first_assign_ms ? (st.last_ack_ms - st.first_assign_ms) / 1000.0 : 0;
  row["jobs"] = plan.jobs;
  row["completed"] = done;
  row["acks"] = st.acks;
  row["wall_s"] = wall;
  row["first_assign_to_last_ack_s"] = active_s;
  row["durable_jobs_per_s"] = active_s > 0 ? static_cast<double>(st.acks) / active_s : 0;
  // null when the 10-90% window holds too few samples to measure (a small --jobs): not a 0.
  if (const double steady = window_rate(samples, target / 10, target * 9 / 10); steady > 0) {
    row["steady_jobs_per_s"] = steady;
  } else {
    row["steady_jobs_per_s"] = nullptr;
  }
  row["p50_ack_latency_us"] = am::sim::percentile(lat, 50);
  row["p99_ack_latency_us"] = am::sim::percentile(lat, 99);
  row["coordinator_cpu_pct"] = 100.0 * (c1.cpu_s - c0.cpu_s) / wall;
  row["coordinator_rss_mb"] = c1.rss_bytes / 1e6;
  row["coordinator_peak_rss_mb"] = c1.peak_rss_bytes / 1e6;
  row["fleet_cpu_pct"] = 100.0 * (f1.cpu_s - f0.cpu_s) / wall;
  row["load_1m"] = {load0, load1};
  row["health_jobs"] = st.health_assigns;
  row["heartbeats_sent"] = st.heartbeats_sent;
  row["results_resent"] = st.results_resent;
  if (done && measure_idle && args.idle_seconds > 0) {
    // Idle: every worker connected and heartbeating, nothing left to run.
    std::this_thread::sleep_for(std::chrono::seconds(2));
    const ProcessSample i0 = sample_process(pid);
    const uint64_t hb0 = (*fleet)->stats().heartbeats_sent;
    const auto ti = am::SteadyClock::now();
    std::this_thread::sleep_for(std::chrono::duration<double>(args.idle_seconds));
    const double idle_wall = am::seconds_since(ti);
    const ProcessSample i1 = sample_process(pid);
    const uint64_t hb1 = (*fleet)->stats().heartbeats_sent;
    row["idle"] = {{"seconds", idle_wall},
                   {"coordinator_cpu_pct", 100.0 * (i1.cpu_s - i0.cpu_s) / idle_wall},
                   {"heartbeats_per_s", static_cast<double>(hb1 - hb0) / idle_wall},
                   {"heartbeat_interval_ms", am::reliability::kHeartbeatIntervalMs},
                   {"load_1m", am::bench::load_average_1m()}};
  }
  const int code = stop_coordinator(*served);
  (*fleet)->stop();
  const int64_t stored = sql_int(served->db, "SELECT count(*) FROM attempts WHERE state = 'done' AND status = 'pass'");
  const int64_t passed = sql_int(served->db, "SELECT count(*) FROM jobs WHERE status = 'pass'");
  row["stored_results"] = stored;
  row["coordinator_exit"] = code;
  out.ok = done && stored == plan.jobs && passed == plan.jobs;
  if (!out.ok) row["error"] = fmt::format("{} of {} jobs acknowledged, {} results stored", st.acks, plan.jobs, stored);
  return out;
}

json measure_flood(const Args& args, const std::filesystem::path& dir, int workers) {
  json row;
  // Jobs that take a while, so that every worker holds a lease when the flood comes.
  constexpr int64_t kJobMs = 1000;
  const am::sim::SimPlan plan = am::sim::many_jobs_plan("flood", 3 * static_cast<int64_t>(workers));
  auto served = start_coordinator(args, dir, plan.toml, /*exit_when_done=*/false);
  if (!served.ok()) return {{"error", served.status().to_string()}};
  FleetOptions fo;
  fo.endpoint = served->endpoint;
  fo.workers = workers;
  fo.slots = 1;
  fo.threads = args.threads;
  fo.job_ms = kJobMs;
  fo.send_progress = true;
  fo.prefix = "flood";
  auto fleet = SimFleet::start(fo);
  if (!fleet.ok()) return {{"error", fleet.status().to_string()}};
  const bool busy = SimFleet::wait_until([&] { return (*fleet)->stats().acks >= static_cast<uint64_t>(workers) / 2; },
                                         std::chrono::seconds(static_cast<int64_t>(args.timeout_s)));
  const uint64_t welcomes0 = (*fleet)->stats().welcomes;
  const auto t0 = am::SteadyClock::now();
  const double load0 = am::bench::load_average_1m();
  (*fleet)->reconnect_all();
  const bool absorbed = SimFleet::wait_until(
      [&] { return (*fleet)->stats().welcomes >= welcomes0 + static_cast<uint64_t>(workers); },
      std::chrono::seconds(static_cast<int64_t>(args.timeout_s)));
  const double absorb_s = am::seconds_since(t0);
  const bool done = SimFleet::wait_until([&] { return (*fleet)->stats().acks >= static_cast<uint64_t>(plan.jobs); },
                                         std::chrono::seconds(static_cast<int64_t>(args.timeout_s)));
  const double finish_s = am::seconds_since(t0);
  const am::sim::FleetStats st = (*fleet)->stats();
  stop_coordinator(*served);
  (*fleet)->stop();
  row = {{"workers", workers},
         {"jobs", plan.jobs},
         {"job_ms", kJobMs},
         {"busy_before_flood", busy},
         {"all_reregistered", absorbed},
         {"reregistered_within_s", absorb_s},
         {"completed", done},
         {"completed_within_s_of_flood", finish_s},
         {"load_1m", load0},
         {"reconnects", st.reconnects},
         {"results_resent", st.results_resent},
         {"leases_expired", stored_counter(served->db, "leases_expired")},
         {"leases_reclaimed", stored_counter(served->db, "leases_reclaimed")},
         {"reregistrations", stored_counter(served->db, "reregistrations")},
         {"jobs_lost", sql_int(served->db, "SELECT count(*) FROM jobs WHERE status = 'lost'")},
         {"jobs_passed", sql_int(served->db, "SELECT count(*) FROM jobs WHERE status = 'pass'")},
         {"results_stored", sql_int(served->db, "SELECT count(*) FROM attempts WHERE state = 'done'")},
         {"lease_ms", static_cast<int64_t>(am::reliability::kDefaultJobTimeoutMs + am::reliability::kLeaseGraceMs)}};
  row["ok"] = done && absorbed && row["leases_expired"] == 0 && row["jobs_lost"] == 0 &&
              row["jobs_passed"] == plan.jobs && row["results_stored"] == plan.jobs;
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  CLI::App app{"bench_dispatch: the real coordinator against N simulated workers, and the raw ZeroMQ ceiling"};
  app.add_option("--workers", args.workers, "Fleet sizes, e.g. 8,64,1000")->delimiter(',')->check(CLI::Range(1, 100'000));
  app.add_option("--jobs", args.jobs, "Jobs per fleet size (at least; the plan rounds up)")->check(CLI::Range(1, 100'000'000));
  app.add_option("--json", args.json_path, "Write the figures as JSON to this file");
  app.add_option("--accelmatrix", args.accelmatrix, "The coordinator binary (default: ../accelmatrix beside this one)");
  app.add_option("--dir", args.dir, "Scratch directory on a disk (default: the system temp dir)");
  app.add_option("--threads", args.threads, "Threads driving the simulated workers and raw peers")->check(CLI::Range(1, 256));
  app.add_option("--credit", args.credit, "Jobs in flight per worker (default: 16 for <= 8 workers, 4 for <= 64, 2, 1)")
      ->check(CLI::Range(1, 1024));
  app.add_option("--raw-seconds", args.raw_seconds, "Measured seconds of each raw-ceiling loop")->check(CLI::Range(0.1, 3600.0));
  app.add_option("--idle-seconds", args.idle_seconds, "Seconds of idle measurement with the largest fleet (0: none)")
      ->check(CLI::Range(0.0, 3600.0));
  app.add_option("--timeout-s", args.timeout_s, "Give up on a measurement after this long")->check(CLI::Range(1.0, 86400.0));
  app.add_flag("!--no-flood", args.flood, "Skip the reconnect flood");
  app.add_flag("--progress", args.progress, "Simulated workers send PROGRESS started per job, as the real worker");
  app.add_flag("--keep", args.keep, "Keep the scratch directory (databases, logs)");
  app.add_option("--raw-router", args.raw_router_file, "(internal) serve the raw ROUTER, endpoint to this file");
  app.add_option("--raw-assign-bytes", args.raw_assign_bytes, "(internal) ASSIGN body size of the raw ROUTER");
  AM_BENCH_PARSE(app, argc, argv);
  if (!args.raw_router_file.empty()) return am::bench::serve_ceiling_router(args.raw_router_file, args.raw_assign_bytes);

  if (args.accelmatrix.empty()) args.accelmatrix = (self_dir().parent_path() / "accelmatrix").string();
  if (!std::filesystem::exists(args.accelmatrix)) {
    std::cerr << "bench_dispatch: coordinator binary " << args.accelmatrix << " not found (--accelmatrix)\n";
    return 2;
  }
  std::random_device rd;
  const std::filesystem::path base = (args.dir.empty() ? std::filesystem::temp_directory_path() : std::filesystem::path(args.dir)) /
                                     ("bench-dispatch-" + std::to_string(getpid()) + "-" + std::to_string(rd() % 100000));
  std::filesystem::create_directories(base);
  if (auto st = am::bench::require_disk_backed(base); !st.ok()) {
    std::cerr << "bench_dispatch: " << st.to_string() << "\n";
    return 2;
  }
  const am::sim::SimPlan plan = am::sim::many_jobs_plan("dispatch", args.jobs);
  const auto [assign_bytes, result_bytes] = message_sizes(plan);

  json doc;
  doc["cpu"] = am::bench::cpu_model_name();
  doc["cpus_online"] = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  doc["assign_bytes"] = assign_bytes;
  doc["result_bytes"] = result_bytes;
  doc["jobs"] = plan.jobs;
  doc["threads"] = args.threads;
  doc["progress_messages"] = args.progress;
  doc["scratch"] = base.string();
  doc["runs"] = json::array();
  std::cout << fmt::format("bench_dispatch on {} ({} CPUs online), {} jobs per fleet size, ASSIGN {} B, RESULT {} B\n",
                           doc["cpu"].get<std::string>(), doc["cpus_online"].get<int>(), plan.jobs, assign_bytes,
                           result_bytes);
  std::cout << fmt::format("{:>6} {:>6} {:>11} {:>11} {:>11} {:>7} {:>9} {:>9} {:>9} {:>8} {:>6}\n", "N", "credit",
                           "jobs/s", "steady/s", "raw rt/s", "ratio", "p50 ms", "p99 ms", "coord CPU", "RSS MB", "load");
  bool all_ok = true;
  const int largest = args.workers.empty() ? 0 : *std::max_element(args.workers.begin(), args.workers.end());
  for (int n : args.workers) {
    const int credit = args.credit > 0 ? args.credit : credit_for(n);
    const auto dir = base / ("n" + std::to_string(n));
    std::filesystem::create_directories(dir);
    auto before = measure_ceiling(args, dir, n, credit, assign_bytes, result_bytes);
    DispatchResult real = measure_dispatch(args, dir / "serve", n, credit, plan, n == largest);
    auto after = measure_ceiling(args, dir, n, credit, assign_bytes, result_bytes);
    json row = real.row;
    row["workers"] = n;
    row["credit"] = credit;
    if (!before.ok() || !after.ok()) {
      row["error"] = (!before.ok() ? before.status() : after.status()).to_string();
      all_ok = false;
    } else {
      const double raw = (before->rate + after->rate) / 2;
      row["raw_round_trips_per_s"] = {before->rate, after->rate};
      row["raw_server_cpu_pct"] = {before->server_cpu_pct, after->server_cpu_pct};
      row["raw_mean"] = raw;
      const bool steady = row.contains("steady_jobs_per_s") && row["steady_jobs_per_s"].is_number();
      row["ratio"] = raw > 0 && steady ? nlohmann::json(row["steady_jobs_per_s"].get<double>() / raw) : nlohmann::json();
      row["ratio_overall"] = raw > 0 ? row.value("durable_jobs_per_s", 0.0) / raw : 0.0;
      std::cout << fmt::format("{:>6} {:>6} {:>11.0f} {:>11} {:>11.0f} {:>7} {:>9.2f} {:>9.2f} {:>8.0f}% {:>8.1f} {:>6.1f}\n", n,
                               credit, row.value("durable_jobs_per_s", 0.0),
                               steady ? fmt::format("{:.0f}", row["steady_jobs_per_s"].get<double>()) : std::string("n/a"), raw,
                               steady && row["ratio"].is_number() ? fmt::format("{:.3f}", row["ratio"].get<double>()) : std::string("n/a"),
                               row.value("p50_ack_latency_us", 0) / 1000.0,
                               row.value("p99_ack_latency_us", 0) / 1000.0, row.value("coordinator_cpu_pct", 0.0),
                               row.value("coordinator_peak_rss_mb", 0.0), row["load_1m"][1].get<double>());
    }
    if (!real.ok) {
      all_ok = false;
      std::cout << "  N=" << n << ": " << row.value("error", std::string("failed")) << "\n";
    }
    if (row.contains("idle")) {
      std::cout << fmt::format("  idle with {} workers heartbeating every {} ms: coordinator CPU {:.1f}% of a core "
                               "({:.0f} heartbeats/s, load {:.1f})\n",
                               n, am::reliability::kHeartbeatIntervalMs, row["idle"]["coordinator_cpu_pct"].get<double>(),
                               row["idle"]["heartbeats_per_s"].get<double>(), row["idle"]["load_1m"].get<double>());
    }
    doc["runs"].push_back(row);
  }
  if (args.flood && largest > 0) {
    json flood = measure_flood(args, base / "flood", largest);
    std::cout << fmt::format("  reconnect flood, {} workers holding leases: all re-registered within {:.2f} s, run "
                             "complete {:.2f} s after the flood; leases expired {}, reclaimed {}, jobs lost {}, "
                             "results stored {} of {} -> {}\n",
                             largest, flood.value("reregistered_within_s", 0.0), flood.value("completed_within_s_of_flood", 0.0),
                             flood.value("leases_expired", -1), flood.value("leases_reclaimed", -1), flood.value("jobs_lost", -1),
                             flood.value("results_stored", -1), flood.value("jobs", -1), flood.value("ok", false) ? "ok" : "FAILED");
    all_ok = all_ok && flood.value("ok", false);
    doc["flood"] = flood;
  }
  if (!args.json_path.empty()) {
    if (am::Status st = am::write_file_atomically(args.json_path, doc.dump(2) + "\n"); !st.ok()) {
      std::cerr << "bench_dispatch: cannot write " << args.json_path << ": " << st.message() << "\n";
      all_ok = false;
    }
  }
  if (!args.keep) {
    std::error_code ec;
    std::filesystem::remove_all(base, ec);
  }
  return all_ok ? 0 : 1;
}
