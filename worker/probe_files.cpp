#include "worker/probe_files.h"

#include <fstream>

namespace am::worker {

std::filesystem::path rooted(const std::filesystem::path& root, std::string_view absolute) {
  while (!absolute.empty() && absolute.front() == '/') absolute.remove_prefix(1);
  return root / std::filesystem::path(absolute);
}

std::optional<std::string> read_probe_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string out;
  char buf[4096];
  // /proc and /sys files report size 0, so read until EOF instead of trusting the size.
  while (out.size() < kMaxProbeFileBytes) {
    in.read(buf, sizeof buf);
    const std::streamsize n = in.gcount();
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  if (in.bad()) return std::nullopt;
  if (out.size() > kMaxProbeFileBytes) out.resize(kMaxProbeFileBytes);
  return out;
}

}  // namespace am::worker
