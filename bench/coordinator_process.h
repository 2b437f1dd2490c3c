// The coordinator as the whole-system benches (bench_dispatch, bench_scale) run it: the shipped
// `accelmatrix serve` binary in a process of its own, on a database in a scratch directory, its
// endpoint read from --endpoint-file; and small read-only SQLite queries on what it stored.
//
// Contract: start_coordinator() returns once the coordinator has submitted its plan and bound its
// endpoint (the endpoint file appears after both), or an error with the tail of its log.
// stop_coordinator() sends SIGTERM (a clean stop) and returns the exit code (-1 if unknown).
// sql_int() returns -1 when the query fails. Not thread-safe.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "common/spawn.h"
#include "common/status.h"

namespace am::bench {

struct Served {
  std::unique_ptr<ChildProcess> child;
  std::string endpoint;
  std::filesystem::path db;
  std::filesystem::path log;
  double startup_s = 0;   // spawn -> endpoint file written (plan parsed, expanded, stored, loaded)
};

struct ServeOptions {
  std::string accelmatrix;                 // the binary
  std::filesystem::path dir;               // scratch: plan.toml, c.db, serve.log, endpoint
  std::string plan_toml;
  std::filesystem::path catalog;           // --catalog
  std::vector<std::string> extra_args;     // e.g. --exit-when-done, --quiet
  double timeout_s = 900;
};

Result<Served> start_coordinator(const ServeOptions& options);
int stop_coordinator(Served& served);

std::string read_text(const std::filesystem::path& path);
// Waits for a child to write its endpoint file; "" on timeout or when the child died.
std::string wait_for_endpoint(ChildProcess& child, const std::filesystem::path& file, double timeout_s);
int64_t sql_int(const std::filesystem::path& db, const std::string& query);
// The directory of the running executable (the benches find each other there).
std::filesystem::path self_dir();

}  // namespace am::bench
