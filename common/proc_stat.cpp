#include "common/proc_stat.h"

#include <fstream>
#include <sstream>
#include <string>

namespace am {

std::optional<ProcStat> read_proc_stat(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return std::nullopt;
  const std::size_t close = line.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(line.substr(close + 1));
  ProcStat out;
  long parent = -1;
  if (!(rest >> out.state >> parent)) return std::nullopt;
  out.parent = static_cast<pid_t>(parent);
  return out;
}

}  // namespace am
