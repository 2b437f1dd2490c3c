// Named loggers per component ("coordinator/scheduler", "worker/probe/hwloc").
//
// Contract: get_logger() never fails and never throws; it returns a logger that writes to stderr
// with the component name in every line. Thread-safe. set_log_level() accepts
// trace|debug|info|warn|error|off and applies to every logger, present and future.
#pragma once

#include <memory>
#include <string_view>

#include <spdlog/spdlog.h>

#include "common/status.h"

namespace am {

std::shared_ptr<spdlog::logger> get_logger(std::string_view component);
Status set_log_level(std::string_view level);

}  // namespace am
