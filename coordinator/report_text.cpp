#include "coordinator/report_text.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <system_error>

#include "common/utf8.h"

namespace am::coord {

namespace {

// One table cell's text: repaired UTF-8, one line, '|' escaped, control characters inert,
// HTML's markup characters as entities unless the text goes into a code span (where entities
// are not decoded and markup is not interpreted anyway).
std::string cell_body(std::string_view raw, std::size_t max_chars, bool html_entities) {
  const std::string text = terminal_safe(raw);   // one line, no control character (common/utf8.h)
  std::string out;
  out.reserve(text.size());
  std::size_t kept = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const auto byte = static_cast<unsigned char>(c);
    const bool starts_char = (byte & 0xC0) != 0x80;
    if (starts_char && kept == max_chars) {
      out += "…";
      break;
    }
    if (starts_char) ++kept;
    if (c == '|') {
      out += "\\|";
    } else if (html_entities && (c == '\\' || c == '[' || c == ']' || c == '`')) {
      // Backslash first (a text "a\\|b" must not unescape its pipe), brackets (no link or image
      // a renderer would fetch), backticks (no code span of the text's own).
      out += '\\';
      out += c;
    } else if (html_entities && c == '<') {
      out += "&lt;";
    } else if (html_entities && c == '>') {
      out += "&gt;";
    } else if (html_entities && c == '&') {
      out += "&amp;";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::string markdown_cell(std::string_view raw, std::size_t max_chars) { return cell_body(raw, max_chars, true); }

std::string markdown_code(std::string_view raw, std::size_t max_chars) {
  const std::string body = cell_body(raw, max_chars, false);
  // A fence one backtick longer than the longest run inside, padded with a space where the
  // text starts or ends with a backtick (CommonMark code spans).
  std::size_t longest = 0;
  for (std::size_t i = 0, run = 0; i < body.size(); ++i) {
    run = body[i] == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  const std::string fence(longest + 1, '`');
  const bool pad = !body.empty() && (body.front() == '`' || body.back() == '`');
  return fence + (pad ? " " : "") + body + (pad ? " " : "") + fence;
}

std::string report_text(std::string_view text) {
  const std::string repaired = repair_utf8(text);
  std::string out;
  out.reserve(repaired.size());
  for (std::size_t i = 0; i < repaired.size(); ++i) {
    const auto byte = static_cast<unsigned char>(repaired[i]);
    if (byte < 0x20 && byte != '\t' && byte != '\n' && byte != '\r') {
      out += kUtf8Replacement;
      continue;
    }
    // U+FFFE and U+FFFF (EF BF BE, EF BF BF). In repaired UTF-8 an 0xEF byte always starts a
    // three-byte sequence, so matching here never splits a character.
    if (byte == 0xEF && i + 2 < repaired.size() && static_cast<unsigned char>(repaired[i + 1]) == 0xBF &&
        (static_cast<unsigned char>(repaired[i + 2]) == 0xBE ||
         static_cast<unsigned char>(repaired[i + 2]) == 0xBF)) {
      out += kUtf8Replacement;
      i += 2;
      continue;
    }
    out += repaired[i];
  }
  return out;
}

std::string format_number(double value) {
  if (!std::isfinite(value)) return "";
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value);
  if (ec != std::errc()) return "";
  return std::string(buf, end);
}

std::string format_fixed(double value, int decimals) {
  if (!std::isfinite(value)) return "";
  char buf[400];   // the largest double in fixed notation is 309 digits before the point
  const auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::fixed, decimals);
  if (ec != std::errc()) return "";
  return std::string(buf, end);
}

std::string json_number_text(const nlohmann::json* value) {
  if (value == nullptr) return "";
  if (value->is_number_unsigned()) return std::to_string(value->get<uint64_t>());
  if (value->is_number_integer()) return std::to_string(value->get<int64_t>());
  if (value->is_number_float()) return format_number(value->get<double>());
  return "";
}

const nlohmann::json* metric_value(const nlohmann::json& metrics, std::string_view group,
                                   std::string_view key) {
  if (!metrics.is_object()) return nullptr;
  auto g = metrics.find(group);
  if (g == metrics.end() || !g->is_object()) return nullptr;
  auto v = g->find(key);
  if (v == g->end() || v->is_null()) return nullptr;
  return &*v;
}

std::string xml_escape_text(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;   // "]]>" may not appear in character data
      case '\r': out += "&#13;"; break;  // a literal CR would be read back as LF
      default: out += c;
    }
  }
  return out;
}

std::string xml_escape_attribute(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      // Attribute-value normalization turns literal TAB/LF/CR into spaces; references survive.
      case '\t': out += "&#9;"; break;
      case '\n': out += "&#10;"; break;
      case '\r': out += "&#13;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace am::coord
