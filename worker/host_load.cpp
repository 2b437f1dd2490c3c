#include "worker/host_load.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

namespace am::worker {

std::optional<HostSample> read_host_sample(const std::filesystem::path& proc_root) {
  HostSample s;
  {
    std::ifstream in(proc_root / "loadavg");
    if (!(in >> s.load_1m) || s.load_1m < 0) return std::nullopt;
  }
  std::ifstream in(proc_root / "stat");
  if (!in) return std::nullopt;
  std::string line;
  bool have_total = false;
  while (std::getline(in, line)) {
    if (line.rfind("cpu", 0) != 0) continue;
    if (line.size() > 3 && line[3] >= '0' && line[3] <= '9') {
      ++s.cpus;
      continue;
    }
    // cpu  user nice system idle iowait irq softirq steal guest guest_nice (guest time is
    // already inside user and nice, so it is not added again).
    std::istringstream fields(line.substr(3));
    uint64_t v[8] = {};
    int n = 0;
    while (n < 8 && fields >> v[n]) ++n;
    if (n < 4) return std::nullopt;
    s.busy_ticks = v[0] + v[1] + v[2] + v[5] + v[6];
    s.steal_ticks = v[7];
    s.total_ticks = s.busy_ticks + v[3] + v[4] + v[7];
    have_total = true;
  }
  if (!have_total || s.cpus == 0) return std::nullopt;
  return s;
}

nlohmann::json host_metrics(const HostSample& start, const HostSample& end, double job_cpu_s, double wall_s,
                            double ticks_per_s) {
  nlohmann::json out = {{"load_start", start.load_1m}, {"load_end", end.load_1m}, {"cpus", end.cpus}};
  // Counters only grow; a smaller end value means the samples do not belong together.
  if (end.total_ticks > start.total_ticks && end.busy_ticks >= start.busy_ticks &&
      end.steal_ticks >= start.steal_ticks) {
    const double total = static_cast<double>(end.total_ticks - start.total_ticks);
    out["steal_fraction"] = static_cast<double>(end.steal_ticks - start.steal_ticks) / total;
    if (wall_s > 0 && ticks_per_s > 0) {
      const double busy_s = static_cast<double>(end.busy_ticks - start.busy_ticks) / ticks_per_s;
      out["other_load"] = std::clamp((busy_s - job_cpu_s) / wall_s, 0.0, static_cast<double>(end.cpus));
    }
  }
  return out;
}

}  // namespace am::worker
