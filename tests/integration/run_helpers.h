// Shared pieces of the reliability and chaos integration tests: argv builders for `serve` and
// the worker with fast heartbeats, plan writers, and the exactly-once checks on the database.
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "common/transport.h"
#include "tests/integration/harness.h"

namespace am::testing {

using namespace std::chrono_literals;

// A peer is dead after 5 × 100 ms of silence.
inline const std::vector<std::string>& fast_beats() {
  static const std::vector<std::string> v = {"--heartbeat-ms", "100", "--liveness", "5"};
  return v;
}

inline std::string catalog_dir() { return (source_dir() / "jobs/models").string(); }

// bert-tiny jobs on the cpu: `seq_lens` and `precisions` are TOML arrays; every job measures for
// about `min_time_s`. `extra_defaults` goes into [defaults]; `overrides` into the model entry.
inline std::filesystem::path write_bert_plan(const std::filesystem::path& path, const std::string& name,
                                             double min_time_s, const std::string& seq_lens,
                                             const std::string& precisions,
                                             const std::string& mode = "both",
                                             const std::string& extra_defaults = "timeout_s = 60\n",
                                             const std::string& overrides = "") {
  return write_file(path, "[plan]\nname = \"" + name + "\"\nmode = \"" + mode + "\"\nseed = 7\n\n"
                    "[defaults]\nbackends = [\"cpu\"]\nprecisions = " + precisions + "\n"
                    "batch = [1]\nseq_len = " + seq_lens + "\nwarmup = 0\nmin_reps = 1\nmax_reps = 100000\n"
                    "min_time_s = " + std::to_string(min_time_s) + "\n" + extra_defaults + "\n"
                    "[[models]]\nname = \"bert-tiny\"\n" + overrides);
}

inline std::vector<std::string> serve_args(const std::filesystem::path& plan, const std::filesystem::path& db,
                                           const std::string& bind, const std::filesystem::path& endpoint_file,
                                           int expect_workers = 1, const std::string& lease_grace_ms = "5000") {
  std::vector<std::string> a = {coordinator_binary().string(), "--log-level", "info", "serve",
                                "--plan", plan.string(), "--db", db.string(),
                                "--bind", bind, "--catalog", catalog_dir(),
                                "--exit-when-done", "--endpoint-file", endpoint_file.string(),
                                "--expect-workers", std::to_string(expect_workers),
                                "--lease-grace-ms", lease_grace_ms, "--quiet"};
  a.insert(a.end(), fast_beats().begin(), fast_beats().end());
  return a;
}

inline std::vector<std::string> worker_args(const std::string& endpoint, const std::string& id,
                                            const ScratchDir& dir, int slots = 1) {
  std::vector<std::string> a = {worker_binary().string(), "--coordinator", endpoint, "--id", id,
                                "--state-dir", (dir / ("state-" + id)).string(),
                                "--reconnect-max-ms", "500", "--log-level", "info",
                                "--slots", std::to_string(slots)};
  a.insert(a.end(), fast_beats().begin(), fast_beats().end());
  return a;
}

inline std::string wait_for_endpoint(const std::filesystem::path& file) {
  std::string ep;
  wait_until([&] {
    ep = read_file(file);
    while (!ep.empty() && (ep.back() == '\n' || ep.back() == '\r')) ep.pop_back();
    return !ep.empty();
  }, 20s);
  return ep;
}

// Every job has exactly one terminal result, and the attempt it names holds that result.
inline void expect_exactly_one_terminal_result_per_job(const std::filesystem::path& db, int64_t jobs) {
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM jobs"), jobs);
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM jobs WHERE state = 'done' AND status <> ''"), jobs);
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM jobs j JOIN attempts a ON a.run_id = j.run_id AND "
                        "a.job_id = j.job_id AND a.attempt = j.terminal_attempt "
                        "WHERE a.status = j.status AND a.state = 'done'"),
            jobs);
  EXPECT_EQ(sql_rows(db, "PRAGMA integrity_check"), (std::vector<std::vector<std::string>>{{"ok"}}));
}

// `accelmatrix ARGS... --db DB`, as argv.
inline std::vector<std::string> cli(std::vector<std::string> args, const std::filesystem::path& db) {
  args.insert(args.begin(), coordinator_binary().string());
  args.push_back("--db");
  args.push_back(db.string());
  return args;
}

// `accelmatrix status --json` against the coordinator of `db`; nullopt when it fails.
inline std::optional<nlohmann::json> status_of(const std::filesystem::path& db) {
  int code = -1;
  const std::string out = run_capture(cli({"status", "--json"}, db), &code);
  if (code != 0) return std::nullopt;
  try {
    return nlohmann::json::parse(out);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// One message from a raw DEALER peer, or nullopt after timeout_ms (or on a decode error).
inline std::optional<proto::Message> recv_one(DealerEndpoint& d, int timeout_ms) {
  auto r = d.recv(timeout_ms);
  if (!r.ok() || !r->has_value()) return std::nullopt;
  return **r;
}

// Waits up to ~10 s for a message of type T, skipping any other (heartbeats, ...).
template <typename T>
std::optional<T> expect_message(DealerEndpoint& d) {
  for (int i = 0; i < 50; ++i) {
    auto m = recv_one(d, 200);
    if (!m) continue;
    if (const T* t = std::get_if<T>(&m->body)) return *t;
  }
  return std::nullopt;
}

}  // namespace am::testing
