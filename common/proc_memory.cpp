#include "common/proc_memory.h"

#include <cstdio>
#include <cstring>
#include <string>

namespace am {

std::optional<int64_t> vm_hwm_bytes(pid_t pid) {
  const std::string path = pid == 0 ? std::string("/proc/self/status") : "/proc/" + std::to_string(pid) + "/status";
  std::FILE* f = std::fopen(path.c_str(), "re");
  if (f == nullptr) return std::nullopt;
  std::optional<int64_t> bytes;
  char line[256];
  while (std::fgets(line, sizeof line, f) != nullptr) {
    long long kib = 0;
    if (std::strncmp(line, "VmHWM:", 6) == 0 && std::sscanf(line + 6, "%lld", &kib) == 1 && kib >= 0) {
      bytes = static_cast<int64_t>(kib) * 1024;   // the kernel writes "VmHWM:   1234 kB"
      break;
    }
  }
  std::fclose(f);
  return bytes;
}

}  // namespace am
