// Small, forgiving readers for the JSON documents probes exchange (recorded answers, the
// capability record). Every reader returns a neutral value for an absent key or a value of the
// wrong type, because answers can come from a hand-edited recording; none throws.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace am::worker {

// The string at `key`, or "" when `doc` is not an object or the value is not a string.
std::string json_string(const nlohmann::json& doc, std::string_view key);

// A non-negative integer at `key`. Accepts JSON integers and "0x..." hex strings (recordings
// write register values in hex); nullopt otherwise.
std::optional<uint64_t> json_u64(const nlohmann::json& doc, std::string_view key);

// A signed integer at `key` (status codes), or nullopt.
std::optional<int64_t> json_i64(const nlohmann::json& doc, std::string_view key);

// The object at `key`, or a (shared, immutable) empty object.
const nlohmann::json& json_object(const nlohmann::json& doc, std::string_view key);

// The array at `key`, or an empty array.
nlohmann::json json_array(const nlohmann::json& doc, std::string_view key);

// The boolean at `key`, or `fallback`.
bool json_bool(const nlohmann::json& doc, std::string_view key, bool fallback);

// `s` without leading and trailing whitespace and NUL bytes (drivers pad some strings).
std::string trim_copy(std::string_view s);

// "0x" followed by `digits` lowercase hex digits.
std::string hex_string(uint64_t value, int digits);

// Whether the space-separated extension list `extensions` contains `name` exactly.
bool has_extension(std::string_view extensions, std::string_view name);

}  // namespace am::worker
