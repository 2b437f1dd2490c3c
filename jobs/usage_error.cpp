#include "jobs/usage_error.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>

#include "jobs/suggest.h"

namespace am::jobs {
namespace {

constexpr std::string_view kExtrasPrefix = "The following arguments were not expected: ";
constexpr std::string_view kExtraPrefix = "The following argument was not expected: ";

// "-1" and "-.5" are negative numbers (a flag's value), not options.
bool looks_like_option(std::string_view word) {
  return word.size() > 1 && word.front() == '-' && word != "--" &&
         !(std::isdigit(static_cast<unsigned char>(word[1])) || word[1] == '.');
}

std::string option_name(std::string_view word) {
  const std::size_t eq = word.find('=');
  return std::string(eq == std::string_view::npos ? word : word.substr(0, eq));
}

bool is_known(const UsageCommand& command, const std::string& name) {
  if (std::find(command.options.begin(), command.options.end(), name) != command.options.end()) return true;
  if (std::find(command.hidden.begin(), command.hidden.end(), name) != command.hidden.end()) return true;
  // Bundled short flags (-vv, -qv): every letter a known short flag.
  if (name.size() > 2 && name[1] != '-') {
    return std::all_of(name.begin() + 1, name.end(), [&](char c) {
      return std::find(command.options.begin(), command.options.end(), std::string{'-', c}) != command.options.end();
    });
  }
  return false;
}

// "12.500000" -> "12.5", "1e-09" stays; a bound past 1e300 (a "no upper bound" range) is "".
std::string shown_bound(std::string_view text) {
  std::string t(text);
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  if (end == t.c_str()) return t;
  if (v > 1e300) return "";
  if (t.find('.') != std::string::npos && t.find_first_of("eE") == std::string::npos) {
    while (!t.empty() && t.back() == '0') t.pop_back();
    if (!t.empty() && t.back() == '.') t.pop_back();
  }
  if (v != 0.0 && t == "0") {   // a small bound printed with six decimals
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    t = buf;
  }
  return t;
}

// CLI11's range check says "--x: Value abc not in range 1 to 64" for a word that is no number,
// and prints DBL_MAX in full for "at least 0". Said plainly; other messages as they are.
std::string plain_range_message(std::string_view message) {
  constexpr std::string_view kValue = ": Value ";
  constexpr std::string_view kRange = " not in range ";
  constexpr std::string_view kTo = " to ";
  const std::size_t v = message.find(kValue);
  const std::size_t r = message.find(kRange);
  if (v == std::string_view::npos || r == std::string_view::npos || r < v) return std::string(message);
  const std::size_t to = message.find(kTo, r + kRange.size());
  if (to == std::string_view::npos) return std::string(message);
  const std::string flag(message.substr(0, v));
  const std::string value(message.substr(v + kValue.size(), r - v - kValue.size()));
  const std::string low = shown_bound(message.substr(r + kRange.size(), to - r - kRange.size()));
  const std::string high = shown_bound(message.substr(to + kTo.size()));
  const std::string range = high.empty() ? "at least " + low : low + " to " + high;
  char* end = nullptr;
  std::strtod(value.c_str(), &end);
  if (value.empty() || end != value.c_str() + value.size()) return flag + ": '" + value + "' is not a number (" + range + ")";
  return flag + ": " + value + " is out of range (" + range + ")";
}

}  // namespace

std::string usage_error_text(std::string_view cli_message, const UsageCommand& command,
                             const std::vector<std::string>& words) {
  // Every word that looks like an option and is none of the command's, with the option meant.
  std::string unknown;
  {
    std::vector<std::string> long_names;
    for (const std::string& o : command.options) {
      if (o.starts_with("--")) long_names.push_back(o);
    }
    bool after_separator = false;
    for (const std::string& word : words) {
      if (word == "--") after_separator = true;
      if (after_separator || !looks_like_option(word)) continue;
      const std::string name = option_name(word);
      if (is_known(command, name)) continue;
      if (!unknown.empty()) unknown += "; ";
      unknown += "unknown option '" + name + "'" + did_you_mean(name, long_names);
    }
  }
  std::string what;
  const bool extras = cli_message.starts_with(kExtrasPrefix) || cli_message.starts_with(kExtraPrefix);
  if (extras) {
    what = unknown;
    if (what.empty()) {
      // Only surplus words (a second plan file, a value without its flag).
      const std::string_view list = cli_message.substr(
          cli_message.starts_with(kExtrasPrefix) ? kExtrasPrefix.size() : kExtraPrefix.size());
      what = "unexpected argument" + std::string(list.find(' ') == std::string_view::npos ? "" : "s") + ": " +
             std::string(list);
    }
  } else {
    // CLI11 names a missing required option before a mistyped one ("--plan is required" for
    // `serve --expect-worker 1`): both are said.
    what = plain_range_message(cli_message);
    if (!unknown.empty()) what += "; " + unknown;
  }
  return "error: " + command.path + ": " + what + "\nsee '" + command.path + " --help'";
}

}  // namespace am::jobs
