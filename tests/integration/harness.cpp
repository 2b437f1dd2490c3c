#include "tests/integration/harness.h"

#include <sqlite3.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace am::testing {

std::filesystem::path build_dir() { return ACCELMATRIX_BINARY_DIR; }
std::filesystem::path source_dir() { return ACCELMATRIX_SOURCE_DIR; }
std::filesystem::path coordinator_binary() { return build_dir() / "accelmatrix"; }
std::filesystem::path worker_binary() { return build_dir() / "accelmatrix-worker"; }

ScratchDir::ScratchDir(const std::string& name) {
  std::string tmpl = (std::filesystem::temp_directory_path() / ("am-" + name + "-XXXXXX")).string();
  if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

ScratchDir::~ScratchDir() {
  if (std::getenv("ACCELMATRIX_KEEP_TEST_DIRS")) return;
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

Process::Process(const std::vector<std::string>& argv, const std::filesystem::path& log_file)
    : log_file_(log_file) {
  SpawnOptions options;
  options.output = SpawnOptions::Output::kFile;
  options.output_file = log_file;
  options.append = true;
  options.new_process_group = false;  // tests signal the process itself, as a user would
  auto spawned = ChildProcess::spawn(argv, options);
  if (!spawned.ok()) throw std::runtime_error(spawned.status().message());
  child_.emplace(std::move(spawned).value());
}

Process::~Process() {
  if (pid() > 0) kill_hard();
}

pid_t Process::pid() const { return child_ ? child_->pid() : -1; }

bool Process::running() {
  if (pid() <= 0) return false;
  if (auto exit = child_->try_wait()) {
    exit_code_ = exit->shell_code();
    return false;
  }
  return true;
}

void Process::kill_hard() {
  if (pid() <= 0) return;
  child_->signal(SIGKILL);
  auto exit = child_->wait();
  exit_code_ = exit.ok() ? exit->shell_code() : 128 + SIGKILL;
}

void Process::terminate() {
  if (pid() > 0) child_->signal(SIGTERM);
}

void Process::signal(int sig) {
  if (pid() > 0) child_->signal(sig);
}

int Process::wait(std::chrono::milliseconds timeout) {
  wait_until([&] { return !running(); }, timeout);
  return pid() > 0 ? -1 : exit_code_;
}

std::string Process::log() const { return read_file(log_file_); }

bool wait_until(const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return pred();
}

std::vector<std::vector<std::string>> sql_rows(const std::filesystem::path& db,
                                               const std::string& query) {
  std::vector<std::vector<std::string>> rows;
  if (!std::filesystem::exists(db)) return rows;
  sqlite3* h = nullptr;
  if (sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    sqlite3_close(h);
    return rows;
  }
  sqlite3_busy_timeout(h, 5000);
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(h, query.c_str(), -1, &st, nullptr) == SQLITE_OK) {
    while (sqlite3_step(st) == SQLITE_ROW) {
      std::vector<std::string> row;
      for (int i = 0; i < sqlite3_column_count(st); ++i) {
        const auto* t = sqlite3_column_text(st, i);
        row.emplace_back(t ? reinterpret_cast<const char*>(t) : "");
      }
      rows.push_back(std::move(row));
    }
  }
  sqlite3_finalize(st);
  sqlite3_close(h);
  return rows;
}

int64_t sql_int(const std::filesystem::path& db, const std::string& query) {
  auto rows = sql_rows(db, query);
  if (rows.empty() || rows[0].empty() || rows[0][0].empty()) return 0;
  return std::stoll(rows[0][0]);
}

std::string sql_exec(const std::filesystem::path& db, const std::string& statements) {
  sqlite3* h = nullptr;
  if (sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) {
    const std::string why = h != nullptr ? sqlite3_errmsg(h) : "out of memory";
    sqlite3_close(h);
    return "cannot open " + db.string() + ": " + why;
  }
  sqlite3_busy_timeout(h, 5000);
  char* err = nullptr;
  std::string why;
  if (sqlite3_exec(h, statements.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    why = err != nullptr ? err : "sqlite3_exec failed";
  }
  sqlite3_free(err);
  sqlite3_close(h);
  return why;
}

std::filesystem::path write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  return path;
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string run_capture(const std::vector<std::string>& argv, int* exit_code,
                        std::chrono::milliseconds timeout) {
  char tmpl[] = "/tmp/am-capture-XXXXXX";
  int fd = mkstemp(tmpl);
  if (fd >= 0) close(fd);
  std::string out;
  {
    Process p(argv, tmpl);
    *exit_code = p.wait(timeout);
    out = p.log();
  }
  unlink(tmpl);
  return out;
}

pid_t pid_with_argument(const std::string& needle) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmdline = read_file(entry.path() / "cmdline");
    for (char& c : cmdline) c = c == '\0' ? ' ' : c;
    if (cmdline.find(needle) != std::string::npos) return static_cast<pid_t>(std::stol(name));
  }
  return -1;
}

}  // namespace am::testing
