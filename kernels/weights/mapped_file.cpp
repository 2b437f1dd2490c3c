#include "kernels/weights/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace am::kernels {
namespace {

// Closes a descriptor on every path out of open(); the mapping outlives it.
struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

MappedFile::~MappedFile() { release(); }

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void MappedFile::release() {
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
  data_ = nullptr;
  size_ = 0;
}

Result<MappedFile> MappedFile::open(const std::string& path) {
  // O_NONBLOCK: opening a FIFO without a writer would otherwise wait for one for ever (until the
  // job's time limit); it is refused below as not a regular file. Reads of a regular file and
  // its mapping do not see the flag.
  FdCloser fd{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK)};
  if (fd.fd < 0) {
    const int err = errno;
    if (err == ENOENT) return not_found("cannot open " + path + ": " + std::strerror(err));
    return io_error("cannot open " + path + ": " + std::strerror(err));
  }
  struct stat st {};
  if (::fstat(fd.fd, &st) != 0) return io_error("cannot stat " + path + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return io_error(path + " is not a regular file");
  MappedFile f;
  if (st.st_size == 0) return f;  // mmap refuses length 0; an empty mapping is still a valid file
  void* p = ::mmap(nullptr, static_cast<std::size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd.fd, 0);
  if (p == MAP_FAILED) return io_error("cannot map " + path + ": " + std::strerror(errno));
  f.data_ = static_cast<const uint8_t*>(p);
  f.size_ = static_cast<std::size_t>(st.st_size);
  return f;
}

}  // namespace am::kernels
