// Recorded machines: what the probes read from a machine, kept in a directory so that the same
// probes can rebuild that machine's capability record later, anywhere, without touching the
// machine they run on. `accelmatrix-worker --probe --record DIR` writes one; `--probe --replay DIR`
// and tests read one back. docs/RECORDINGS.md describes the format in full:
//
//   DIR/manifest.json        {"format": "accelmatrix-machine-recording", "version": 1,
//                             "description", "recorded_by", "recorded_at_ms",
//                             "hwloc_xml": "hwloc.xml" (optional), "files": [...], "answers": [...]}
//   DIR/hwloc.xml            the hwloc topology the hwloc probe saw
//   DIR/root/<absolute path> each /proc, /sys and /etc file a probe read ("files" lists them)
//   DIR/answers/<source>.json what a library, a system call or the CPU answered, one document per
//                            source ("host", "cpu", "sysconf", "opencl", "vulkan", "cuda", ...)
//
// Thread-safety: a Recording is immutable once opened and may be shared between threads; a
// Recorder belongs to one thread. Neither throws.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace am::worker {

inline constexpr std::string_view kRecordingFormat = "accelmatrix-machine-recording";
inline constexpr int kRecordingVersion = 1;

// Source names are file names: 1..64 characters of [a-z0-9_-].
bool is_valid_source_name(std::string_view source);

class Recording {
 public:
  // Reads and checks DIR/manifest.json, every answers document it lists (each must be valid
  // JSON) and the presence of every file and the hwloc XML it names. The error names the file.
  static Result<std::shared_ptr<const Recording>> open(const std::filesystem::path& dir);

  const std::filesystem::path& dir() const { return dir_; }
  // The directory standing in for "/" when probes read files (DIR/root).
  std::filesystem::path files_root() const { return dir_ / "root"; }
  // The recorded topology, or an empty path when the recording has none.
  std::filesystem::path hwloc_xml() const;
  const nlohmann::json& manifest() const { return manifest_; }
  // The recorded answers of `source`; not_found when the recording has none for it.
  Result<nlohmann::json> answers(std::string_view source) const;

 private:
  Recording() = default;
  std::filesystem::path dir_;
  nlohmann::json manifest_;
  std::map<std::string, nlohmann::json, std::less<>> answers_;
};

class Recorder {
 public:
  // Prepares `dir` for a recording: it is created when absent and must otherwise be empty, so
  // that a recording never mixes with files of another one.
  static Result<std::shared_ptr<Recorder>> create(const std::filesystem::path& dir);

  // Each add_* writes at once. A write that fails is remembered and reported by finish(); the
  // probes carry on, so one unwritable file does not cost the rest of the recording.
  // `absolute_path` must start with '/' and contain no ".." component.
  void add_file(std::string_view absolute_path, std::string_view contents);
  void add_answers(std::string_view source, const nlohmann::json& answers);
  void add_hwloc_xml(std::string_view xml);

  // Writes manifest.json. Returns the first failed write, if any, else the manifest's own.
  Status finish(std::string_view description);

  const std::filesystem::path& dir() const { return dir_; }

 private:
  explicit Recorder(std::filesystem::path dir) : dir_(std::move(dir)) {}
  void remember(Status status);
  Status write(const std::filesystem::path& relative, std::string_view contents);

  std::filesystem::path dir_;
  std::set<std::string> files_;
  std::set<std::string> answers_;
  bool has_hwloc_xml_ = false;
  Status first_error_;
};

}  // namespace am::worker
