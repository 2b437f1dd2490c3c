#include "worker/probe_json.h"

#include <charconv>
#include <cstdint>
#include <cstdio>

namespace am::worker {
namespace {

const nlohmann::json* find(const nlohmann::json& doc, std::string_view key) {
  if (!doc.is_object()) return nullptr;
  auto it = doc.find(key);
  return it == doc.end() ? nullptr : &*it;
}

}  // namespace

std::string json_string(const nlohmann::json& doc, std::string_view key) {
  const nlohmann::json* v = find(doc, key);
  return v != nullptr && v->is_string() ? v->get<std::string>() : std::string();
}

std::optional<uint64_t> json_u64(const nlohmann::json& doc, std::string_view key) {
  const nlohmann::json* v = find(doc, key);
  if (v == nullptr) return std::nullopt;
  if (v->is_number_unsigned()) return v->get<uint64_t>();
  if (v->is_number_integer()) {
    const int64_t i = v->get<int64_t>();
    if (i < 0) return std::nullopt;
    return static_cast<uint64_t>(i);
  }
  if (v->is_string()) {
    const std::string& s = v->get_ref<const std::string&>();
    if (s.size() < 3 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X')) return std::nullopt;
    uint64_t out = 0;
    auto [ptr, ec] = std::from_chars(s.data() + 2, s.data() + s.size(), out, 16);
    if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
    return out;
  }
  return std::nullopt;
}

std::optional<int64_t> json_i64(const nlohmann::json& doc, std::string_view key) {
  const nlohmann::json* v = find(doc, key);
  if (v == nullptr || !v->is_number_integer()) return std::nullopt;
  if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
  return v->get<int64_t>();
}

const nlohmann::json& json_object(const nlohmann::json& doc, std::string_view key) {
  static const nlohmann::json kEmpty = nlohmann::json::object();
  const nlohmann::json* v = find(doc, key);
  return v != nullptr && v->is_object() ? *v : kEmpty;
}

nlohmann::json json_array(const nlohmann::json& doc, std::string_view key) {
  const nlohmann::json* v = find(doc, key);
  return v != nullptr && v->is_array() ? *v : nlohmann::json::array();
}

bool json_bool(const nlohmann::json& doc, std::string_view key, bool fallback) {
  const nlohmann::json* v = find(doc, key);
  return v != nullptr && v->is_boolean() ? v->get<bool>() : fallback;
}

std::string trim_copy(std::string_view s) {
  auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\0'; };
  while (!s.empty() && blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && blank(s.back())) s.remove_suffix(1);
  return std::string(s);
}

std::string hex_string(uint64_t value, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%0*llx", digits, static_cast<unsigned long long>(value));
  return buf;
}

bool has_extension(std::string_view extensions, std::string_view name) {
  std::size_t pos = 0;
  while (pos < extensions.size()) {
    while (pos < extensions.size() && extensions[pos] == ' ') ++pos;
    std::size_t end = extensions.find(' ', pos);
    if (end == std::string_view::npos) end = extensions.size();
    if (extensions.substr(pos, end - pos) == name) return true;
    pos = end;
  }
  return false;
}

}  // namespace am::worker
