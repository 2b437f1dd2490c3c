#include "coordinator/output_guard.h"

#include "coordinator/sqlite_db.h"

#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <fstream>
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

Status check_output_path(const std::filesystem::path& output, const std::filesystem::path& db,
                                   std::string_view option) {
  if (output.empty()) return Status::Ok();
  // Where the output cannot be made, said now and in the user's words (the atomic write would
  // name its temporary file, as an I/O fault).
  std::error_code dir_ec;
  const std::filesystem::path parent = output.has_parent_path() ? output.parent_path() : std::filesystem::path(".");
  if (!std::filesystem::is_directory(parent, dir_ec)) {
    return invalid_argument(std::string(option) + " " + output.string() + ": no directory " + parent.string());
  }
  if (std::filesystem::is_directory(output, dir_ec)) {
    return invalid_argument(std::string(option) + " " + output.string() + " is a directory; name a file");
  }
  // A file the user made read-only is not replaced behind their back (`> file` refuses it too).
  if (struct stat existing {}; ::stat(output.c_str(), &existing) == 0 && S_ISREG(existing.st_mode) &&
                               ::access(output.c_str(), W_OK) != 0) {
    return invalid_argument(std::string(option) + " " + output.string() +
                            " exists and is not writable; it is not replaced (choose another file)");
  }
  if (db.empty()) return Status::Ok();
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
        const std::string what = *suffix == '\0' ? "the database " + guarded.string()
                                                 : guarded.string() + ", a file of the database " + db.string();
        return invalid_argument(std::string(option) + " " + output.string() + " is " + what +
                                "; writing there would destroy the stored runs");
      }
    }
  }
  // Any other SQLite database (another run's store, a copy kept aside) is no place for a report
  // either: it would be replaced whole.
  // Only a regular file is read: a FIFO or a pipe (-o /dev/stdout) would block on its reader.
  struct stat out_stat {};
  if (::stat(output.c_str(), &out_stat) != 0 || !S_ISREG(out_stat.st_mode)) return Status::Ok();
  if (std::ifstream in(output, std::ios::binary); in) {
    std::array<char, sqlite::kSqliteHeader.size()> head{};
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    if (in.gcount() == static_cast<std::streamsize>(head.size()) && head == sqlite::kSqliteHeader) {
      return invalid_argument(std::string(option) + " " + output.string() +
                              " is an SQLite database; it is not overwritten (choose another file)");
    }
  }
  return Status::Ok();
}

}  // namespace am::coord
