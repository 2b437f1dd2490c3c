#include "bench/process_stats.h"

#include <fstream>
#include <sstream>

#include <linux/magic.h>
#include <sys/resource.h>
#include <sys/vfs.h>
#include <unistd.h>

namespace am::bench {
namespace {

// "VmRSS:    1234 kB" -> bytes.
int64_t status_kb(const std::string& status, const std::string& key) {
  const auto at = status.find(key + ":");
  if (at == std::string::npos) return 0;
  std::istringstream in(status.substr(at + key.size() + 1));
  int64_t kb = 0;
  in >> kb;
  return kb * 1024;
}

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

ProcessSample sample_process(pid_t pid) {
  ProcessSample s;
  const std::string base = "/proc/" + std::to_string(pid);
  const std::string stat = read_all(base + "/stat");
  // Fields after the command name (which may hold spaces) start after the last ')'.
  if (const auto close = stat.rfind(')'); close != std::string::npos) {
    std::istringstream in(stat.substr(close + 2));
    std::string field;
    long long utime = 0, stime = 0;
    // state(3) ... utime is field 14, stime 15: 11 fields to skip after the state.
    for (int i = 3; i <= 13 && in >> field; ++i) {
    }
    in >> utime >> stime;
    s.cpu_s = static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
  }
  const std::string status = read_all(base + "/status");
  s.rss_bytes = status_kb(status, "VmRSS");
  s.peak_rss_bytes = status_kb(status, "VmHWM");
  return s;
}

ProcessSample sample_self() {
  ProcessSample s = sample_process(getpid());
  rusage u{};
  if (getrusage(RUSAGE_SELF, &u) == 0) {
    s.cpu_s = static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
              static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
  }
  return s;
}

double load_average_1m() {
  std::ifstream in("/proc/loadavg");
  double load = 0;
  in >> load;
  return load;
}

std::string cpu_model_name() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const std::size_t colon = line.find(':');
    if (colon == std::string::npos) break;
    const std::size_t start = line.find_first_not_of(" \t", colon + 1);
    return start == std::string::npos ? "unknown CPU" : line.substr(start);
  }
  return "unknown CPU";
}

Status require_disk_backed(const std::filesystem::path& dir) {
  struct statfs fs {};
  if (statfs(dir.c_str(), &fs) != 0) return io_error("cannot statfs " + dir.string());
  if (fs.f_type == TMPFS_MAGIC || fs.f_type == RAMFS_MAGIC) {
    return failed_precondition(dir.string() + " is on tmpfs/ramfs: a durable commit there costs no disk write; "
                               "give --dir a directory on a disk");
  }
  return Status::Ok();
}

}  // namespace am::bench
