#include "coordinator/output_guard.h"

#include <sys/stat.h>

#include <string>
#include <vector>

namespace am::coord {
namespace {

// Same file: the same inode when both exist; otherwise the same path once `.`, `..` and
// symlinks of the parts that exist are resolved.
bool same_file(const std::filesystem::path& a, const std::filesystem::path& b) {
  struct stat sa {}, sb {};
  const bool a_exists = ::stat(a.c_str(), &sa) == 0;
  const bool b_exists = ::stat(b.c_str(), &sb) == 0;
  if (a_exists && b_exists) return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  if (a_exists != b_exists) return false;
  std::error_code ea, eb;
  const auto ca = std::filesystem::weakly_canonical(std::filesystem::absolute(a), ea);
  const auto cb = std::filesystem::weakly_canonical(std::filesystem::absolute(b), eb);
  return !ea && !eb && ca == cb;
}

}  // namespace

Status refuse_output_over_database(const std::filesystem::path& output, const std::filesystem::path& db,
                                   std::string_view option) {
  if (output.empty() || db.empty()) return Status::Ok();
  // SQLite names the -wal and -shm after the database's resolved path, and DbLock its .lock: a
  // --db that is a symlink has its files beside its target.
  std::error_code ec;
  std::vector<std::filesystem::path> bases = {db};
  const std::filesystem::path resolved = std::filesystem::weakly_canonical(std::filesystem::absolute(db), ec);
  if (!ec && resolved != db) bases.push_back(resolved);
  for (const std::filesystem::path& base : bases) {
    for (const char* suffix : {"", "-wal", "-shm", "-journal", ".lock"}) {
      const std::filesystem::path guarded = base.string() + suffix;
      if (same_file(output, guarded)) {
        return invalid_argument(std::string(option) + " " + output.string() + " is " +
                                (*suffix == '\0' ? "the database" : "a file of the database") + " " +
                                guarded.string() + "; writing there would destroy the stored runs");
      }
    }
  }
  return Status::Ok();
}

}  // namespace am::coord
