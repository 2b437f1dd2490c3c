#include "coordinator/progress_display.h"

#include <cstdlib>
#include <cstring>
#include <unistd.h>

#include <fmt/format.h>

#include "common/clock.h"
#include "common/utf8.h"

namespace am::coord {
namespace {

constexpr const char* kGreen = "\033[32m";
constexpr const char* kRed = "\033[31m";
constexpr const char* kReset = "\033[0m";
// Carriage return, then erase to the end of the line: the status line is redrawn in place.
constexpr const char* kRewriteLine = "\r\033[K";

std::string paint(const std::string& text, const char* colour, bool color) {
  return color ? std::string(colour) + text + kReset : text;
}

}  // namespace

ProgressStyle progress_style(bool is_tty, const char* term_env, const char* no_color_env) {
  ProgressStyle s;
  s.tty = is_tty && !(term_env != nullptr && std::strcmp(term_env, "dumb") == 0);
  s.color = s.tty && (no_color_env == nullptr || *no_color_env == '\0');
  return s;
}

ProgressStyle progress_style_for_fd(int fd) {
  return progress_style(::isatty(fd) == 1, std::getenv("TERM"), std::getenv("NO_COLOR"));
}

std::optional<int64_t> estimate_eta_ms(const Progress& p) {
  const int remaining = p.total - p.done;
  if (remaining <= 0) return int64_t{0};
  if (p.measured_jobs <= 0 || p.measured_job_ms < 0) return std::nullopt;
  const int64_t mean = p.measured_job_ms / p.measured_jobs;
  const int parallel = p.slots > 0 ? p.slots : 1;
  const int64_t rounds = (remaining + parallel - 1) / parallel;
  return rounds * mean;
}

std::string format_duration(int64_t ms) {
  if (ms < 0) ms = 0;
  if (ms < 1000) return fmt::format("{}ms", ms);
  const int64_t s = ms / 1000;
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}h{:02}m", s / 3600, (s % 3600) / 60);
}

std::string format_status_line(const Progress& p, int64_t elapsed_ms, bool color) {
  int pass = 0;
  int degraded = 0;
  int failed = 0;
  int other = 0;
  for (const auto& [status, n] : p.by_status) {
    if (status == ResultStatus::kPass) {
      pass += n;
    } else if (status == ResultStatus::kDegraded) {
      degraded += n;
    } else if (is_test_failure(status)) {
      failed += n;
    } else {
      other += n;
    }
  }
  std::string line = fmt::format("[{}/{}] ", p.done, p.total);
  line += paint(fmt::format("{} pass", pass), kGreen, color && pass > 0);
  if (degraded > 0) line += fmt::format(", {} degraded", degraded);
  line += ", " + paint(fmt::format("{} failed", failed), kRed, color && failed > 0);
  if (other > 0) line += fmt::format(", {} other", other);
  line += fmt::format(", {} running  {} elapsed", p.leased, format_duration(elapsed_ms));
  if (p.done < p.total) {
    const std::optional<int64_t> eta = estimate_eta_ms(p);
    line += ", ETA " + (eta ? format_duration(*eta) : std::string("?"));
  }
  return line;
}

ProgressDisplay::ProgressDisplay(ProgressStyle style, std::FILE* out)
    : style_(style), out_(out), started_ms_(steady_ms()) {}

void ProgressDisplay::update(const Progress& p) {
  const bool new_event = !p.last_event.empty() && (p.event_seq != last_event_seq_ || p.last_event != last_event_);
  if (new_event) {
    last_event_ = p.last_event;
    last_event_seq_ = p.event_seq;
  }
  last_ = p;
  // A job's line carries what its worker said (the reason): inert on a terminal, one line.
  const std::string event = new_event ? terminal_safe(p.last_event) : std::string();
  if (!style_.tty) {
    // As before the status line existed: one plain line per finished job.
    if (new_event) {
      std::fprintf(out_, "[%*d/%d] %s\n", static_cast<int>(std::to_string(p.total).size()), p.done, p.total,
                   event.c_str());
      std::fflush(out_);
    }
    return;
  }
  std::string text = kRewriteLine;
  if (new_event) {
    text += fmt::format("[{:>{}}/{}] {}\n", p.done, std::to_string(p.total).size(), p.total, event);
  }
  // The cursor goes back to the start of the status line: a log line written meanwhile (a
  // warning) overwrites it from the first column instead of being glued to its end, and the
  // next update redraws it.
  text += format_status_line(p, steady_ms() - started_ms_, style_.color) + "\r";
  std::fputs(text.c_str(), out_);
  std::fflush(out_);
  line_shown_ = true;
}

void ProgressDisplay::finish() {
  if (!style_.tty || !last_) return;
  std::string text = kRewriteLine + format_status_line(*last_, steady_ms() - started_ms_, style_.color) + "\n";
  std::fputs(text.c_str(), out_);
  std::fflush(out_);
  line_shown_ = false;
}

}  // namespace am::coord
