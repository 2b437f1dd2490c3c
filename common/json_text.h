// JSON text written straight from values and nlohmann trees, without nlohmann's serializer.
//
// Why: dump() formats every double with its own Grisu2 and builds a string per call; a result's
// ~1.6 KiB of metrics cost ~30 µs to dump (a third of storing a result, docs/SCALE.md), and a
// report of a million results writes tens of millions of values.
//
// Contract: the text is what nlohmann's dump() (compact, ensure_ascii off, invalid UTF-8
// replaced) writes, with one allowance: a double is written as the shortest text that reads
// back as the same double (std::to_chars), so it may pick fixed notation where dump() picks an
// exponent; integral doubles keep dump()'s ".0", and NaN and infinities are null as in dump().
// Strings: quote, backslash and control characters escaped as dump() escapes them (\b \f \n \r
// \t, else \u00xx, lower-case hex); invalid UTF-8 repaired (common/utf8.h) first. Objects keep
// the tree's member order (nlohmann's: sorted). Thread-safe (no state).
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace am {

void append_json_string(std::string& out, std::string_view text);   // text must be valid UTF-8
void append_json_double(std::string& out, double value);
// Any value; strings are repaired when they are not valid UTF-8.
void append_json(std::string& out, const nlohmann::json& value);
std::string to_json_text(const nlohmann::json& value);

}  // namespace am
