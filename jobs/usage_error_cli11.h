// usage_error_text()'s command description read off a CLI11 app, for the two binaries' parse
// error handlers (jobs/usage_error.h stays free of CLI11; this header needs it, and only the
// executables, which link CLI11, include it).
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "jobs/usage_error.h"

namespace am::jobs {

// `app`'s options by name ("--plan", "-q"); those of the hidden group ("") as taken, not offered.
inline UsageCommand usage_command_of(const CLI::App& app, std::string path) {
  UsageCommand c{std::move(path), {}, {}};
  for (const CLI::Option* o : app.get_options()) {
    auto& into = o->get_group().empty() ? c.hidden : c.options;
    for (const std::string& n : o->get_lnames()) into.push_back("--" + n);
    for (const std::string& n : o->get_snames()) into.push_back("-" + n);
  }
  return c;
}

}  // namespace am::jobs
