// Internal to accelmatrix_jobs: reading TOML files (toml++) and reporting problems in them as
// "file:line:col: what". toml++ is a private dependency, so this header must not be included
// from a public header of the library.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>
#include <toml++/toml.h>

#include "common/status.h"

namespace am::jobs::detail {

// Reads and parses `file`. Syntax errors come back as "file:line:col: <toml++ description>";
// an unreadable file as NotFound/IoError naming it. Never throws.
// A file's bytes; errors name the file (missing, a directory, unreadable).
Result<std::string> read_text_file(const std::filesystem::path& file);
Result<toml::table> parse_toml_file(const std::filesystem::path& file);
// The same for text that did not come from a file (a plan sent to a live coordinator):
// `display_name` stands in for the file name in messages.
Result<toml::table> parse_toml_text(const std::string& text, const std::filesystem::path& display_name);

// Collects every problem found in one file so a user sees them all at once, like a compiler.
class ErrorList {
 public:
  explicit ErrorList(std::filesystem::path file) : file_(std::move(file)) {}

  void add(const toml::source_region& where, std::string_view what);
  void add(const toml::node& node, std::string_view what) { add(node.source(), what); }
  void add(const toml::key& key, std::string_view what) { add(key.source(), what); }
  void add_unplaced(std::string_view what);  // "file: what"

  bool empty() const { return messages_.empty(); }
  std::size_t size() const { return messages_.size(); }
  // InvalidArgument with one problem per line in file order (capped), or OK when there are none.
  Status status() const;

 private:
  struct Message {
    uint32_t line = 0;  // 0: about the whole file
    uint32_t column = 0;
    std::string text;
  };
  void push(uint32_t line, uint32_t column, std::string text);

  std::filesystem::path file_;
  std::vector<Message> messages_;
};

// "integer", "string", "table", ... for "expected X, got Y" messages.
std::string_view type_name(const toml::node& node);

// The keys a table holds, for "did you mean" suggestions.
std::vector<std::string> key_names(const toml::table& table);

// Converts a scalar (integer, float, string, boolean) or an array of scalars into JSON.
// Returns nullopt and sets `why` for dates, times, tables, nested arrays and non-finite floats.
std::optional<nlohmann::json> config_value_to_json(const toml::node& node, std::string& why);

}  // namespace am::jobs::detail
