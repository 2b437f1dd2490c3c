// What `run` and `serve` show while a run goes on.
//
// On a terminal: one line, rewritten in place, with done/total, pass and failure counts, jobs
// running, elapsed time and an ETA from the durations of the jobs measured so far; each finished
// job is printed once above it. Colour (green pass, red failures) unless NO_COLOR is set to a
// non-empty value (https://no-color.org) or TERM is "dumb". Elsewhere (a pipe, a file, a CI
// log): plain "[n/N] event" lines, one per finished job, no control characters.
//
// Contract: the format_* and estimate_* functions are pure and thread-safe. ProgressDisplay
// writes to the FILE it was given from the thread that calls it; not thread-safe.
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

#include "coordinator/server.h"

namespace am::coord {

struct ProgressStyle {
  bool tty = false;     // rewrite one line in place ("\r", erase line)
  bool color = false;   // ANSI colours
};

// The style for `fd`: tty when isatty(fd) and TERM is not "dumb"; color when tty and NO_COLOR is
// unset or empty. `no_color_env` and `term_env` are the variables' values (nullptr = unset).
ProgressStyle progress_style(bool is_tty, const char* term_env, const char* no_color_env);
ProgressStyle progress_style_for_fd(int fd);

// Milliseconds until the jobs not done yet are done, from the mean measured job duration and
// the number of jobs that run at once (`slots`, at least 1): ceil(remaining / slots) × mean.
// nullopt while nothing has been measured; 0 when nothing remains.
std::optional<int64_t> estimate_eta_ms(const Progress& p);

// "850ms", "12s", "3m05s", "1h02m".
std::string format_duration(int64_t ms);

// The status line, e.g. "[3/8] 2 pass, 1 failed, 2 running  00:12 elapsed, ETA 20s".
std::string format_status_line(const Progress& p, int64_t elapsed_ms, bool color);

class ProgressDisplay {
 public:
  ProgressDisplay(ProgressStyle style, std::FILE* out);
  // Shows `p`: a new event as its own line, then (tty) the status line redrawn.
  void update(const Progress& p);
  // Ends the display: on a tty the status line is left as the last line, with a newline.
  void finish();

 private:
  ProgressStyle style_;
  std::FILE* out_;
  int64_t started_ms_;
  std::string last_event_;
  uint64_t last_event_seq_ = 0;
  bool line_shown_ = false;
  std::optional<Progress> last_;
};

}  // namespace am::coord
