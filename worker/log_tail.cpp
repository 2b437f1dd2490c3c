#include "worker/log_tail.h"

#include <algorithm>

#include "common/utf8.h"

namespace am::worker {

LogTail::LogTail(std::size_t capacity) : capacity_(capacity) { ring_.reserve(capacity); }

void LogTail::append(std::string_view data) {
  total_ += data.size();
  if (capacity_ == 0) return;
  // Only the last `capacity_` bytes of this chunk can survive.
  if (data.size() > capacity_) data.remove_prefix(data.size() - capacity_);
  if (ring_.size() < capacity_) {
    const std::size_t room = capacity_ - ring_.size();
    const std::size_t n = std::min(room, data.size());
    ring_.append(data.substr(0, n));
    data.remove_prefix(n);
    if (data.empty()) return;
  }
  while (!data.empty()) {
    const std::size_t n = std::min(capacity_ - next_, data.size());
    ring_.replace(next_, n, data.substr(0, n));
    next_ = (next_ + n) % capacity_;
    data.remove_prefix(n);
  }
}

std::string LogTail::str() const {
  std::string out;
  if (ring_.size() < capacity_) {
    out = ring_;
  } else {
    out.reserve(capacity_);
    out.append(ring_, next_, std::string::npos);
    out.append(ring_, 0, next_);
  }
  std::string_view kept(out);
  // Once bytes were dropped, the window may begin inside a character: drop its remainder (at
  // most three continuation bytes) rather than show it as replacement characters.
  for (int k = 0; k < 3 && total_ > kept.size() && !kept.empty() &&
                  (static_cast<unsigned char>(kept.front()) & 0xC0) == 0x80;
       ++k) {
    kept.remove_prefix(1);
  }
  return repair_utf8(kept);
}

}  // namespace am::worker
