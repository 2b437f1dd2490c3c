// Recording and Recorder. A recording is meant to be read by people too (a hand-built machine
// is written in an editor), so documents are pretty-printed with sorted keys and every problem
// found when opening one names the file it is in.
#include "worker/recording.h"

#include <fstream>
#include <system_error>

#include "common/build_info.h"
#include "common/clock.h"
#include "worker/probe_files.h"

namespace am::worker {
namespace {

constexpr std::string_view kManifestFile = "manifest.json";
constexpr std::string_view kAnswersDir = "answers";
constexpr std::string_view kRootDir = "root";
constexpr std::string_view kHwlocFile = "hwloc.xml";
constexpr std::size_t kMaxSourceNameChars = 64;
// Documents of a recording are small (the largest, hwloc XML of a big server, is a few MiB).
constexpr std::size_t kMaxRecordedFileBytes = 64u << 20;
constexpr int kJsonIndent = 2;

bool is_safe_absolute(std::string_view path) {
  if (path.empty() || path.front() != '/') return false;
  for (const auto& part : std::filesystem::path(path)) {
    if (part == "..") return false;
  }
  return true;
}

Result<std::string> read_whole(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return not_found("cannot open " + file.string());
  std::string out;
  char buf[1 << 14];
  while (in) {
    in.read(buf, sizeof buf);
    out.append(buf, static_cast<std::size_t>(in.gcount()));
    if (out.size() > kMaxRecordedFileBytes) return resource_exhausted(file.string() + " is too large");
  }
  if (in.bad()) return io_error("cannot read " + file.string());
  return out;
}

Result<nlohmann::json> read_json(const std::filesystem::path& file) {
  AM_ASSIGN_OR_RETURN(std::string text, read_whole(file));
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return invalid_argument(file.string() + ": not valid JSON");
  return doc;
}

Result<std::vector<std::string>> string_list(const nlohmann::json& manifest, const char* key,
                                             const std::filesystem::path& file) {
  std::vector<std::string> out;
  auto it = manifest.find(key);
  if (it == manifest.end()) return out;
  if (!it->is_array()) return invalid_argument(file.string() + ": \"" + key + "\" must be an array");
  for (const auto& v : *it) {
    if (!v.is_string()) {
      return invalid_argument(file.string() + ": \"" + key + "\" must hold strings");
    }
    out.push_back(v.get<std::string>());
  }
  return out;
}

}  // namespace

bool is_valid_source_name(std::string_view source) {
  if (source.empty() || source.size() > kMaxSourceNameChars) return false;
  for (char c : source) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

// ---- Recording ---------------------------------------------------------------------------

Result<std::shared_ptr<const Recording>> Recording::open(const std::filesystem::path& dir) {
  const std::filesystem::path manifest_file = dir / kManifestFile;
  AM_ASSIGN_OR_RETURN(nlohmann::json manifest, read_json(manifest_file));
  if (!manifest.is_object()) return invalid_argument(manifest_file.string() + ": not an object");
  if (manifest.value("format", std::string()) != kRecordingFormat) {
    return invalid_argument(manifest_file.string() + ": \"format\" is not \"" +
                            std::string(kRecordingFormat) + "\"");
  }
  auto version = manifest.find("version");
  if (version == manifest.end() || !version->is_number_integer() ||
      version->get<int64_t>() != kRecordingVersion) {
    return unsupported(manifest_file.string() + ": recording version must be " +
                       std::to_string(kRecordingVersion));
  }

  std::shared_ptr<Recording> rec(new Recording());
  rec->dir_ = dir;

  AM_ASSIGN_OR_RETURN(std::vector<std::string> sources, string_list(manifest, "answers", manifest_file));
  for (const std::string& source : sources) {
    if (!is_valid_source_name(source)) {
      return invalid_argument(manifest_file.string() + ": bad answers source name '" + source + "'");
    }
    const std::filesystem::path file = dir / kAnswersDir / (source + ".json");
    AM_ASSIGN_OR_RETURN(nlohmann::json doc, read_json(file));
    if (!doc.is_object()) return invalid_argument(file.string() + ": answers must be an object");
    rec->answers_.emplace(source, std::move(doc));
  }

  AM_ASSIGN_OR_RETURN(std::vector<std::string> files, string_list(manifest, "files", manifest_file));
  for (const std::string& f : files) {
    if (!is_safe_absolute(f)) {
      return invalid_argument(manifest_file.string() + ": file '" + f + "' is not a plain absolute path");
    }
    std::error_code ec;
    if (!std::filesystem::is_regular_file(rooted(rec->files_root(), f), ec)) {
      return not_found(manifest_file.string() + " lists " + f + " but " +
                       rooted(rec->files_root(), f).string() + " is missing");
    }
  }

  if (auto x = manifest.find("hwloc_xml"); x != manifest.end()) {
    if (!x->is_string() || x->get<std::string>().empty() ||
        x->get<std::string>().find('/') != std::string::npos) {
      return invalid_argument(manifest_file.string() + ": \"hwloc_xml\" must be a file name");
    }
    std::error_code ec;
    if (!std::filesystem::is_regular_file(dir / x->get<std::string>(), ec)) {
      return not_found(manifest_file.string() + ": hwloc topology " +
                       (dir / x->get<std::string>()).string() + " is missing");
    }
  }
  rec->manifest_ = std::move(manifest);
  return std::shared_ptr<const Recording>(std::move(rec));
}

std::filesystem::path Recording::hwloc_xml() const {
  auto x = manifest_.find("hwloc_xml");
  if (x == manifest_.end() || !x->is_string()) return {};
  return dir_ / x->get<std::string>();
}

Result<nlohmann::json> Recording::answers(std::string_view source) const {
  auto it = answers_.find(source);
  if (it == answers_.end()) {
    return not_found("recording " + dir_.string() + " has no answers for '" + std::string(source) + "'");
  }
  return it->second;
}

// ---- Recorder ----------------------------------------------------------------------------

Result<std::shared_ptr<Recorder>> Recorder::create(const std::filesystem::path& dir) {
  std::error_code ec;
  if (std::filesystem::exists(dir, ec)) {
    if (!std::filesystem::is_directory(dir, ec)) return invalid_argument(dir.string() + " is not a directory");
    if (!std::filesystem::is_empty(dir, ec)) {
      return Status(StatusCode::kAlreadyExists,
                    dir.string() + " is not empty; a recording needs a directory of its own");
    }
  } else if (!std::filesystem::create_directories(dir, ec) || ec) {
    return io_error("cannot create " + dir.string() + ": " + ec.message());
  }
  return std::shared_ptr<Recorder>(new Recorder(dir));
}

void Recorder::remember(Status status) {
  if (!status.ok() && first_error_.ok()) first_error_ = std::move(status);
}

Status Recorder::write(const std::filesystem::path& relative, std::string_view contents) {
  const std::filesystem::path file = dir_ / relative;
  std::error_code ec;
  std::filesystem::create_directories(file.parent_path(), ec);
  if (ec) return io_error("cannot create " + file.parent_path().string() + ": " + ec.message());
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  if (!out) return io_error("cannot write " + file.string());
  out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
  out.close();
  if (!out) return io_error("cannot write " + file.string());
  return Status::Ok();
}

void Recorder::add_file(std::string_view absolute_path, std::string_view contents) {
  if (!is_safe_absolute(absolute_path)) {
    remember(invalid_argument("recorded file '" + std::string(absolute_path) +
                              "' is not a plain absolute path"));
    return;
  }
  std::string_view relative = absolute_path;
  while (!relative.empty() && relative.front() == '/') relative.remove_prefix(1);
  Status s = write(std::filesystem::path(kRootDir) / relative, contents);
  if (s.ok()) files_.insert(std::string(absolute_path));
  remember(std::move(s));
}

void Recorder::add_answers(std::string_view source, const nlohmann::json& answers) {
  if (!is_valid_source_name(source)) {
    remember(invalid_argument("bad answers source name '" + std::string(source) + "'"));
    return;
  }
  // Replace invalid UTF-8 (a driver's odd string) instead of failing the dump.
  const std::string text =
      answers.dump(kJsonIndent, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  Status s = write(std::filesystem::path(kAnswersDir) / (std::string(source) + ".json"), text);
  if (s.ok()) answers_.insert(std::string(source));
  remember(std::move(s));
}

void Recorder::add_hwloc_xml(std::string_view xml) {
  Status s = write(kHwlocFile, xml);
  if (s.ok()) has_hwloc_xml_ = true;
  remember(std::move(s));
}

Status Recorder::finish(std::string_view description) {
  nlohmann::json manifest = {
      {"format", std::string(kRecordingFormat)},
      {"version", kRecordingVersion},
      {"description", std::string(description)},
      {"recorded_by", build_string()},
      {"recorded_at_ms", now_epoch_ms()},
      {"files", files_},
      {"answers", answers_},
  };
  if (has_hwloc_xml_) manifest["hwloc_xml"] = std::string(kHwlocFile);
  remember(write(kManifestFile, manifest.dump(kJsonIndent) + "\n"));
  return first_error_;
}

}  // namespace am::worker
