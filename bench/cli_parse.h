// The benches' command lines end as accelmatrix's do: exit 0 after --help or --version, 2 for a
// usage error (CLI11_PARSE returned CLI11's own codes, 104-109), with CLI11's message.
#pragma once

#include <CLI/CLI.hpp>

#define AM_BENCH_PARSE(app, argc, argv)                      \
  do {                                                       \
    try {                                                    \
      (app).parse((argc), (argv));                           \
    } catch (const CLI::ParseError& e) {                     \
      return (app).exit(e) == 0 ? 0 : 2;                     \
    }                                                        \
  } while (false)
