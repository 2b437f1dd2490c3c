#include "bench/coordinator_process.h"

#include <unistd.h>

#include <sqlite3.h>

#include <csignal>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/clock.h"

namespace am::bench {

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::filesystem::path self_dir() {
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::current_path() : exe.parent_path();
}

std::string wait_for_endpoint(ChildProcess& child, const std::filesystem::path& file, double timeout_s) {
  const auto t0 = SteadyClock::now();
  while (seconds_since(t0) < timeout_s) {
    std::error_code ec;
    if (std::filesystem::exists(file, ec)) {
      std::string e = read_text(file);
      while (!e.empty() && (e.back() == '\n' || e.back() == ' ')) e.pop_back();
      if (!e.empty()) return e;
    }
    if (child.exited()) return "";
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return "";
}

Result<Served> start_coordinator(const ServeOptions& o) {
  std::filesystem::create_directories(o.dir);
  const auto plan = o.dir / "plan.toml";
  std::ofstream(plan) << o.plan_toml;
  const auto endpoint_file = o.dir / "endpoint";
  std::filesystem::remove(endpoint_file);
  SpawnOptions so;
  so.output = SpawnOptions::Output::kFile;
  so.output_file = o.dir / "serve.log";
  std::vector<std::string> argv = {o.accelmatrix, "serve", "--plan", plan.string(), "--db", (o.dir / "c.db").string(),
                                   "--bind", "tcp://127.0.0.1:*", "--endpoint-file", endpoint_file.string(),
                                   "--catalog", o.catalog.string(),
                                   // it stops when the bench ends, however (a timeout, SIGKILL)
                                   "--exit-with-parent", std::to_string(getpid())};
  argv.insert(argv.end(), o.extra_args.begin(), o.extra_args.end());
  const auto t0 = SteadyClock::now();
  auto child = ChildProcess::spawn(argv, so);
  if (!child.ok()) return child.status().with_context("starting " + o.accelmatrix);
  Served s;
  s.child = std::make_unique<ChildProcess>(std::move(child).value());
  s.db = o.dir / "c.db";
  s.log = so.output_file;
  s.endpoint = wait_for_endpoint(*s.child, endpoint_file, o.timeout_s);
  s.startup_s = seconds_since(t0);
  if (s.endpoint.empty()) {
    std::string log = read_text(so.output_file);
    if (log.size() > 4000) log = "..." + log.substr(log.size() - 4000);
    return internal_error("accelmatrix serve did not start: " + log);
  }
  return s;
}

int stop_coordinator(Served& s) {
  if (!s.child) return -1;
  s.child->signal(SIGTERM);
  auto exit = s.child->wait();
  return exit.ok() ? exit->shell_code() : -1;
}

int64_t sql_int(const std::filesystem::path& db, const std::string& query) {
  sqlite3* h = nullptr;
  int64_t v = -1;
  if (sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(h, query.c_str(), -1, &stmt, nullptr) == SQLITE_OK && sqlite3_step(stmt) == SQLITE_ROW) {
      v = sqlite3_column_int64(stmt, 0);
    }
    sqlite3_finalize(stmt);
  }
  sqlite3_close(h);
  return v;
}

}  // namespace am::bench
