// LogTail: keeps the last N bytes of a stream that may be arbitrarily long (a job's output).
//
// Contract: append() is O(bytes appended) and memory stays at `capacity` bytes however much is
// written. str() returns the kept bytes in order, with every byte that is not part of a valid
// UTF-8 sequence (including a character cut in half at the start of the window) replaced by '?'
// so the text can travel in JSON/msgpack strings; its length is min(total appended, capacity).
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

// Replaces bytes that are not part of well-formed UTF-8 with '?', keeping the length.
std::string sanitize_utf8(std::string text);

}  // namespace am::worker
