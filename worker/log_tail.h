// LogTail: keeps the last N bytes of a stream that may be arbitrarily long (a job's output).
//
// Contract: append() is O(bytes appended) and memory stays at `capacity` bytes however much is
// written. str() returns the kept bytes (the last min(total appended, capacity)) in order, less
// the remainder of a character cut in half at the start of the window, repaired by the
// project's UTF-8 policy (common/utf8.h: each invalid byte becomes U+FFFD) so the text can
// travel in JSON/msgpack strings.
// Not thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace am::worker {

class LogTail {
 public:
  explicit LogTail(std::size_t capacity);

  void append(std::string_view data);
  std::string str() const;
  std::size_t total_bytes() const { return total_; }

 private:
  std::string ring_;
  std::size_t capacity_;
  std::size_t next_ = 0;     // where the next byte goes once the ring is full
  std::size_t total_ = 0;
};

}  // namespace am::worker
