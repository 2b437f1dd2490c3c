// Text and numbers as the line-oriented exporters (CSV, JUnit XML) write them.
//
// Contract:
// - report_text(): text from workers (reasons, log tails, hostnames, device strings) made safe
//   for any text format. First the project's UTF-8 repair (common/utf8.h: every byte outside a
//   well-formed sequence becomes U+FFFD), then every code point that XML 1.0 forbids becomes
//   U+FFFD as well: the C0 controls other than TAB, LF and CR (NUL, ESC of terminal colour
//   codes, BEL, ...) and the non-characters U+FFFE and U+FFFF. TAB, LF, CR, DEL and the C1
//   controls are kept (XML 1.0 allows them). The result is valid UTF-8 and valid XML 1.0
//   character data once markup characters are escaped.
// - format_number(): locale-independent (std::to_chars), the shortest text that reads back as
//   the same double ("0.25", "1.5e-12", "2048"); "" for NaN and infinities.
// - format_fixed(): locale-independent fixed notation with `decimals` digits after the point.
// - json_number_text(): a metrics value as a cell: integers as integers, other numbers through
//   format_number(), "" for anything that is not a number (missing, null, string).
// - markdown_cell(): text for one Markdown table cell: repaired UTF-8, one line (CR, LF, TAB
//   become spaces), '|' escaped, other control characters (C0, DEL, C1) as U+FFFD, '<', '>' and
//   '&' as HTML entities (a renderer that allows inline HTML shows them as text), cut after
//   `max_chars` characters with a trailing "…".
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace am::coord {

std::string report_text(std::string_view text);

std::string markdown_cell(std::string_view text, std::size_t max_chars);
// The same text as a complete code span: no entities, and a fence of backticks that the text's
// own backticks cannot close.
std::string markdown_code(std::string_view text, std::size_t max_chars);

std::string format_number(double value);
std::string format_fixed(double value, int decimals);

std::string json_number_text(const nlohmann::json* value);

// Escaping for XML 1.0 character data and for attribute values (double-quoted), also what HTML
// text and attribute values need. `text` must already be report_text()'d (or valid UTF-8).
std::string xml_escape_text(std::string_view text);
std::string xml_escape_attribute(std::string_view text);

// metrics[group][key] when it exists, else nullptr (no copy).
const nlohmann::json* metric_value(const nlohmann::json& metrics, std::string_view group,
                                   std::string_view key);

}  // namespace am::coord
