#include "common/utf8.h"

#include <cstdint>

namespace am {
namespace {

bool is_continuation(unsigned char c) { return (c & 0xC0) == 0x80; }

// Length of the well-formed sequence starting at text[i], or 0 when there is none.
std::size_t sequence_length(std::string_view text, std::size_t i) {
  const auto b0 = static_cast<unsigned char>(text[i]);
  if (b0 < 0x80) return 1;
  std::size_t len = 0;
  uint32_t min_cp = 0;
  uint32_t cp = 0;
  if ((b0 & 0xE0) == 0xC0) {
    len = 2, min_cp = 0x80, cp = b0 & 0x1F;
  } else if ((b0 & 0xF0) == 0xE0) {
    len = 3, min_cp = 0x800, cp = b0 & 0x0F;
  } else if ((b0 & 0xF8) == 0xF0) {
    len = 4, min_cp = 0x10000, cp = b0 & 0x07;
  } else {
    return 0;
  }
  if (i + len > text.size()) return 0;
  for (std::size_t k = 1; k < len; ++k) {
    const auto b = static_cast<unsigned char>(text[i + k]);
    if (!is_continuation(b)) return 0;
    cp = (cp << 6) | (b & 0x3F);
  }
  if (cp < min_cp || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return len;
}

}  // namespace

bool is_valid_utf8(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = sequence_length(text, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string repair_utf8(std::string_view text) {
  if (is_valid_utf8(text)) return std::string(text);
  std::string out;
  out.reserve(text.size() + 8);
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = sequence_length(text, i);
    if (n == 0) {
      out += kUtf8Replacement;
      ++i;
    } else {
      out.append(text.substr(i, n));
      i += n;
    }
  }
  return out;
}

std::string utf8_tail(std::string_view text, std::size_t max_bytes, std::string_view cut_marker) {
  // Repair first, so the cut is made in the text as it will be shown and its size is bounded.
  std::string repaired = repair_utf8(text);
  if (repaired.size() <= max_bytes) return repaired;
  std::size_t start = repaired.size() - max_bytes;
  // Valid text: at most three continuation bytes precede the next character.
  while (start < repaired.size() && is_continuation(static_cast<unsigned char>(repaired[start]))) {
    ++start;
  }
  std::string out(cut_marker);
  out.append(repaired, start, std::string::npos);
  return out;
}

std::string terminal_safe(std::string_view text, bool keep_newlines) {
  const std::string repaired = repair_utf8(text);
  std::string out;
  out.reserve(repaired.size());
  for (std::size_t i = 0; i < repaired.size(); ++i) {
    const auto byte = static_cast<unsigned char>(repaired[i]);
    if (byte == '\n' || byte == '\t') {
      out += keep_newlines ? static_cast<char>(byte) : ' ';
    } else if (byte == '\r' && !keep_newlines) {
      out += ' ';
    } else if (byte < 0x20 || byte == 0x7F) {
      out += kUtf8Replacement;
    } else if (byte == 0xC2 && i + 1 < repaired.size() && static_cast<unsigned char>(repaired[i + 1]) <= 0x9F) {
      // U+0080-U+009F, C2 80-C2 9F in (repaired, so well-formed) UTF-8: CSI, OSC, ... as one byte.
      out += kUtf8Replacement;
      ++i;
    } else {
      out += repaired[i];
    }
  }
  return out;
}

}  // namespace am
