// UniqueFd: owns one file descriptor (RAII, move-only) and closes it on destruction.
// Thread-safety: none of its own; one owner at a time.
#pragma once

#include <unistd.h>

#include <utility>

namespace am {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  // Gives up ownership; the caller closes the returned descriptor.
  int release() { return std::exchange(fd_, -1); }
  // Closes the owned descriptor (if any) and takes `fd`. close() is not retried on EINTR: on
  // Linux the descriptor is released either way.
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

}  // namespace am
