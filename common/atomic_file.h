// Whole-file replacement that readers never see half done.
//
// Contract: write_file_atomically() writes `content` to a temporary "<name>.<pid>-<random>.tmp"
// beside `path` (".accelmatrix-output.<pid>-<random>.tmp" where the name is too long for that),
// made with O_EXCL, so no existing file is ever opened, truncated or removed in its place;
// permission bits `mode`, set at creation and again with fchmod so the umask cannot widen or
// narrow them: a secret is never readable by others, not even for a moment; where `path` is a
// regular file already, its group and other bits only where it had them too, so a replacement
// never widens who may read it. It flushes the temporary to disk and renames it over `path`. A
// reader sees the old file or the whole new one; on failure the old file is untouched and the
// temporary is removed. A temporary left by a writer that was killed (no such process here,
// nothing written for a minute) is removed by the next writer of the same path. Thread- and
// process-safe: writers of the same path each finish, the last rename wins.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

#include "common/status.h"

namespace am {

inline constexpr mode_t kPublicFileMode = 0644;
inline constexpr mode_t kSecretFileMode = 0600;

Status write_file_atomically(const std::filesystem::path& path, std::string_view content,
                             mode_t mode = kPublicFileMode);

// The same for content made a piece at a time (a report of a million results): create() makes
// the temporary as above, append() writes through to it, commit() flushes, closes and renames it
// over `path`. Destroyed without a successful commit() (an error on the way), it removes the
// temporary and `path` stays as it was. append() and commit() after a failure fail again.
// A `path` that exists and is no regular file or directory (a FIFO, a character device), or that
// names a descriptor (/dev/stdout, /dev/fd/N, /proc/PID/fd/N, also through symlinks; appended to,
// whatever it points at) is written straight through instead: nothing is made beside
// it and nothing renamed over it (a temporary in /dev renamed over /dev/stdout replaced the
// system's link with a file); commit() then only closes, and nothing of it is atomic.
class AtomicFileWriter {
 public:
  static Result<AtomicFileWriter> create(const std::filesystem::path& path, mode_t mode = kPublicFileMode);
  AtomicFileWriter(AtomicFileWriter&& other) noexcept;
  AtomicFileWriter& operator=(AtomicFileWriter&&) = delete;
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;
  ~AtomicFileWriter();

  Status append(std::string_view content);
  Status commit();
  // Written straight through (above) and a write found the reading end closed (EPIPE: a pipe
  // whose reader left, `-o /dev/stdout | head`): the caller may treat that as the reader having
  // taken what it wanted, as it does for its own standard output.
  bool reader_gone() const { return reader_gone_; }

 private:
  AtomicFileWriter(std::filesystem::path path, std::filesystem::path tmp, int fd);
  Status fail(const std::string& what);

  // Written-back in the background every this many bytes (append()).
  static constexpr std::size_t kWritebackBytes = 64u << 20;

  std::filesystem::path path_;
  std::filesystem::path tmp_;   // where the writes go: the temporary, or path itself when direct_
  int fd_ = -1;           // -1 once committed or failed
  bool direct_ = false;   // written straight to path (not a regular file)
  bool failed_ = false;
  bool reader_gone_ = false;
  std::size_t synced_to_ = 0;   // offset up to which write-back was started
  std::size_t unsynced_ = 0;    // bytes written after it
};

}  // namespace am
