#include "jobs/usage_error.h"

#include <algorithm>

#include "jobs/suggest.h"

namespace am::jobs {
namespace {

constexpr std::string_view kExtrasPrefix = "The following arguments were not expected: ";
constexpr std::string_view kExtraPrefix = "The following argument was not expected: ";

bool looks_like_option(std::string_view word) { return word.size() > 1 && word.front() == '-' && word != "--"; }

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

}  // namespace

std::string usage_error_text(std::string_view cli_message, const UsageCommand& command,
                             const std::vector<std::string>& words) {
  std::string what;
  const bool extras = cli_message.starts_with(kExtrasPrefix) || cli_message.starts_with(kExtraPrefix);
  if (extras) {
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
      if (!what.empty()) what += "; ";
      what += "unknown option '" + name + "'" + did_you_mean(name, long_names);
    }
    if (what.empty()) {
      // Only surplus words (a second plan file, a value without its flag).
      const std::string_view list = cli_message.substr(
          cli_message.starts_with(kExtrasPrefix) ? kExtrasPrefix.size() : kExtraPrefix.size());
      what = "unexpected argument" + std::string(list.find(' ') == std::string_view::npos ? "" : "s") + ": " +
             std::string(list);
    }
  } else {
    what = std::string(cli_message);
  }
  return "error: " + command.path + ": " + what + "\nsee '" + command.path + " --help'";
}

}  // namespace am::jobs
