#include "worker/probe_files.h"

#include <fstream>

#include "worker/recording.h"

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

std::optional<std::string> read_machine_file(const ProbeOptions& options, std::string_view absolute) {
  std::optional<std::string> text = read_probe_file(rooted(options.root, absolute));
  if (text && options.recorder && !options.replay) options.recorder->add_file(absolute, *text);
  return text;
}

Result<nlohmann::json> probe_answers(const ProbeOptions& options, std::string_view source,
                                     const std::function<nlohmann::json()>& gather) {
  if (options.replay) return options.replay->answers(source);
  nlohmann::json answers = gather();
  if (options.recorder) options.recorder->add_answers(source, answers);
  return answers;
}

ProbeOptions replay_options(std::shared_ptr<const Recording> recording) {
  ProbeOptions options;
  if (!recording) return options;
  options.root = recording->files_root();
  options.hwloc_xml = recording->hwloc_xml();
  options.replay = std::move(recording);
  return options;
}

}  // namespace am::worker
