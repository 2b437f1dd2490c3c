#include "worker/log_tail.h"

#include <algorithm>

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
  return sanitize_utf8(std::move(out));
}

std::string sanitize_utf8(std::string text) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t n = text.size();
  std::size_t i = 0;
  while (i < n) {
    const unsigned char c = s[i];
    std::size_t len = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte (RFC 3629 table)
    if (c < 0x80) {
      ++i;
      continue;
    } else if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;  // no UTF-16 surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    }
    bool ok = len > 0 && i + len <= n && s[i + 1] >= lo && s[i + 1] <= hi;
    for (std::size_t k = 2; ok && k < len; ++k) ok = s[i + k] >= 0x80 && s[i + k] <= 0xBF;
    if (ok) {
      i += len;
    } else {
      text[i] = '?';
      ++i;
    }
  }
  return text;
}

}  // namespace am::worker
