#include "common/log.h"

#include <cstdlib>
#include <mutex>
#include <string>

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>

#include "common/utf8.h"

namespace am {
namespace {

constexpr std::string_view kContinuation = "    ";

class InertMessage : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&, spdlog::memory_buf_t& dest) override {
    // Every line after the first is indented: a peer's text with a line feed cannot pass for a
    // log line of its own.
    const std::string safe = terminal_safe(std::string_view(msg.payload.data(), msg.payload.size()), true);
    for (char c : safe) {
      dest.push_back(c);
      if (c == '\n') dest.append(kContinuation.data(), kContinuation.data() + kContinuation.size());
    }
  }
  std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<InertMessage>(); }
};

}  // namespace

std::shared_ptr<spdlog::logger> get_logger(std::string_view component) {
  // The registry lookup and creation must be atomic: two threads asking for the same new
  // component would otherwise race on spdlog's "logger already exists" exception.
  static std::mutex mu;
  std::lock_guard lock(mu);
  std::string name(component);
  if (auto existing = spdlog::get(name)) return existing;
  try {
    // NO_COLOR set to anything but "" turns colour off (https://no-color.org); otherwise spdlog
    // colours only a terminal.
    const char* no_color = std::getenv("NO_COLOR");
    const bool plain = no_color != nullptr && *no_color != '\0';
    auto logger = spdlog::stderr_color_mt(name, plain ? spdlog::color_mode::never : spdlog::color_mode::automatic);
    // %* is the message made inert for a terminal: log lines carry what peers sent (hostnames,
    // reasons, device names), which must not move the cursor or retitle the window.
    auto formatter = std::make_unique<spdlog::pattern_formatter>();
    formatter->add_flag<InertMessage>('*').set_pattern("%Y-%m-%dT%H:%M:%S.%e [%^%l%$] %n: %*");
    logger->set_formatter(std::move(formatter));
    logger->set_level(spdlog::get_level());
    return logger;
  } catch (const spdlog::spdlog_ex&) {
    // Logging must never break the work: fall back to the default logger.
    return spdlog::default_logger();
  }
}

Status set_log_level(std::string_view level) {
  auto parsed = spdlog::level::from_str(std::string(level));
  if (parsed == spdlog::level::off && level != "off") {
    return invalid_argument("unknown log level '" + std::string(level) +
                            "' (expected trace|debug|info|warn|error|off)");
  }
  spdlog::set_level(parsed);
  return Status::Ok();
}

}  // namespace am
