#include "coordinator/report_common.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <iterator>

namespace am::coord {
namespace {

constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";   // U+FFFD in UTF-8
constexpr std::string_view kEllipsis = "\xE2\x80\xA6";          // U+2026

void remember(std::vector<std::string>& order, const std::string& name) {
  if (!name.empty() && std::find(order.begin(), order.end(), name) == order.end()) {
    order.push_back(name);
  }
}

bool is_continuation(unsigned char c) { return (c & 0xC0) == 0x80; }

// Length of the valid UTF-8 sequence starting at text[i], or 0 when it is not valid
// (overlong forms, surrogates and code points above U+10FFFF included).
std::size_t valid_sequence_length(std::string_view text, std::size_t i) {
  const auto c = static_cast<unsigned char>(text[i]);
  if (c < 0x80) return 1;
  std::size_t len = 0;
  uint32_t cp = 0;
  if ((c & 0xE0) == 0xC0) {
    len = 2;
    cp = c & 0x1F;
  } else if ((c & 0xF0) == 0xE0) {
    len = 3;
    cp = c & 0x0F;
  } else if ((c & 0xF8) == 0xF0) {
    len = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + len > text.size()) return 0;
  for (std::size_t k = 1; k < len; ++k) {
    const auto cc = static_cast<unsigned char>(text[i + k]);
    if (!is_continuation(cc)) return 0;
    cp = (cp << 6) | (cc & 0x3F);
  }
  static constexpr uint32_t kMinForLength[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMinForLength[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return len;
}

}  // namespace

RunSummary summarize_run(const std::vector<ReportRow>& rows) {
  RunSummary s;
  for (const ReportRow& row : rows) {
    ++s.total;
    if (row.status) {
      ++s.terminal;
      ++s.by_status[*row.status];
    } else {
      ++s.by_state[row.state];
    }
    remember(s.hardware_classes, row.hardware_class);
    remember(s.builds, row.build);
    if (row.worker_id.empty()) continue;
    auto it = std::find_if(s.workers.begin(), s.workers.end(),
                           [&](const WorkerSummary& w) { return w.worker_id == row.worker_id; });
    if (it == s.workers.end()) {
      WorkerSummary w;
      w.worker_id = row.worker_id;
      s.workers.push_back(std::move(w));
      it = std::prev(s.workers.end());
    }
    if (it->hostname.empty()) it->hostname = row.hostname;
    if (it->build.empty()) it->build = row.build;
    remember(it->hardware_classes, row.hardware_class);
    remember(it->devices, row.device);
    ++it->jobs;
  }
  return s;
}

std::string format_utc(int64_t epoch_ms) {
  if (epoch_ms == 0) return "";
  const auto seconds = static_cast<std::time_t>(epoch_ms / 1000);
  const int millis = static_cast<int>(((epoch_ms % 1000) + 1000) % 1000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buf[96];
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, millis);
  return buf;
}

std::string sanitize_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  std::size_t i = 0;
  while (i < text.size()) {
    const std::size_t len = valid_sequence_length(text, i);
    if (len == 0) {
      out += kReplacementChar;
      ++i;
    } else {
      out.append(text.substr(i, len));
      i += len;
    }
  }
  return out;
}

std::string utf8_tail(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  std::size_t start = text.size() - max_bytes;
  while (start < text.size() && is_continuation(static_cast<unsigned char>(text[start]))) ++start;
  return std::string(kEllipsis) + std::string(text.substr(start));
}

}  // namespace am::coord
