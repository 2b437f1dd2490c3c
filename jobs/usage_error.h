// The text of a command-line usage error, as both binaries print it.
//
// CLI11 says "The following arguments were not expected: x --plna" or "--db is required" with
// no hint of which command or what was meant. usage_error_text() says it the way the rest of
// the CLI reports bad input: "error: <command>: <what>", an unknown option named with the
// closest option of that command ("did you mean '--plan'?"), and where the help is.
//
// Contract: a pure function of its arguments (no CLI11 types, so it is tested without a parse).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace am::jobs {

struct UsageCommand {
  std::string path;                  // "accelmatrix run", "accelmatrix-worker"
  std::vector<std::string> options;  // the command's option names: "--plan", "-q", ...
  std::vector<std::string> hidden;   // options it takes but does not offer (internal ones)
};

// `cli_message`: the parse error's own message. `words`: the arguments given to the command
// (after its name); those that look like options and are none of `command.options` are named
// as unknown (an "--opt=value" word by its "--opt").
std::string usage_error_text(std::string_view cli_message, const UsageCommand& command,
                             const std::vector<std::string>& words);

}  // namespace am::jobs
