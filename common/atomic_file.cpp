#include "common/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "common/unique_fd.h"

namespace am {
namespace {

std::string errno_text() { return std::strerror(errno); }

}  // namespace

Status write_file_atomically(const std::filesystem::path& path, std::string_view content, mode_t mode) {
  std::filesystem::path tmp = path;
  tmp += ".tmp";
  // A leftover temporary keeps its old permissions under O_TRUNC: start from nothing.
  ::unlink(tmp.c_str());
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode));
  if (!fd.valid()) return io_error("cannot create " + tmp.string() + ": " + errno_text());
  auto fail = [&](const std::string& what) {
    const std::string message = what + " " + tmp.string() + ": " + errno_text();
    ::unlink(tmp.c_str());
    return io_error(message);
  };
  if (::fchmod(fd.get(), mode) != 0) return fail("cannot set permissions of");
  std::size_t written = 0;
  while (written < content.size()) {
    const ssize_t n = ::write(fd.get(), content.data() + written, content.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail("cannot write");
    written += static_cast<std::size_t>(n);
  }
  if (::fsync(fd.get()) != 0) return fail("cannot flush");
  if (::close(fd.release()) != 0) return fail("cannot close");
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string message = "cannot rename " + tmp.string() + " to " + path.string() + ": " + errno_text();
    ::unlink(tmp.c_str());
    return io_error(message);
  }
  return Status::Ok();
}

}  // namespace am
