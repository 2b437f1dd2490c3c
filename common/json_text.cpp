#include "common/json_text.h"

#include <charconv>
#include <cmath>

#include "common/utf8.h"

namespace am {

void append_json_string(std::string& out, std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  std::size_t plain = 0;   // start of the run of characters copied as they are
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto u = static_cast<unsigned char>(text[i]);
    if (u >= 0x20 && u != '"' && u != '\\') continue;
    out.append(text.data() + plain, i - plain);
    plain = i + 1;
    switch (u) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        out += "\\u00";
        out += kHex[u >> 4];
        out += kHex[u & 0xf];
    }
  }
  out.append(text.data() + plain, text.size() - plain);
  out += '"';
}

void append_json_double(std::string& out, double value) {
  if (!std::isfinite(value)) {
    out += "null";
    return;
  }
  char buf[64];
  const auto result = std::to_chars(buf, buf + sizeof buf, value);
  const std::string_view text(buf, static_cast<std::size_t>(result.ptr - buf));
  out += text;
  if (text.find_first_of(".e") == std::string_view::npos) out += ".0";
}

void append_json(std::string& out, const nlohmann::json& value) {
  using nlohmann::json;
  switch (value.type()) {
    case json::value_t::null:
    case json::value_t::discarded:
      out += "null";
      return;
    case json::value_t::boolean:
      out += value.get<bool>() ? "true" : "false";
      return;
    case json::value_t::number_integer: {
      char buf[24];
      const auto r = std::to_chars(buf, buf + sizeof buf, value.get<int64_t>());
      out.append(buf, r.ptr);
      return;
    }
    case json::value_t::number_unsigned: {
      char buf[24];
      const auto r = std::to_chars(buf, buf + sizeof buf, value.get<uint64_t>());
      out.append(buf, r.ptr);
      return;
    }
    case json::value_t::number_float:
      append_json_double(out, value.get<double>());
      return;
    case json::value_t::string: {
      const std::string& s = value.get_ref<const std::string&>();
      if (is_valid_utf8(s)) {
        append_json_string(out, s);
      } else {
        append_json_string(out, repair_utf8(s));
      }
      return;
    }
    case json::value_t::array: {
      out += '[';
      bool first = true;
      for (const json& v : value) {
        if (!first) out += ',';
        first = false;
        append_json(out, v);
      }
      out += ']';
      return;
    }
    case json::value_t::object: {
      out += '{';
      bool first = true;
      for (auto it = value.begin(); it != value.end(); ++it) {
        if (!first) out += ',';
        first = false;
        const std::string& key = it.key();
        if (is_valid_utf8(key)) {
          append_json_string(out, key);
        } else {
          append_json_string(out, repair_utf8(key));
        }
        out += ':';
        append_json(out, *it);
      }
      out += '}';
      return;
    }
    case json::value_t::binary:
      // Never in our documents (msgpack bin is refused on the wire); as dump() would write it.
      out += value.dump(-1, ' ', false, json::error_handler_t::replace);
      return;
  }
}

std::string to_json_text(const nlohmann::json& value) {
  std::string out;
  append_json(out, value);
  return out;
}

}  // namespace am
