#include "jobs/placement.h"

#include <array>

#include "common/check.h"

namespace am::jobs {
namespace {

constexpr std::array<std::string_view, 3> kNames = {"each-class", "each-device", "any"};
constexpr std::string_view kClassPrefix = "class:";
constexpr std::string_view kDevicePrefix = "device:";

}  // namespace

std::string_view to_string(Placement p) {
  switch (p) {
    case Placement::kEachClass: return kNames[0];
    case Placement::kEachDevice: return kNames[1];
    case Placement::kAny: return kNames[2];
  }
  AM_UNREACHABLE("unknown Placement");
}

std::optional<Placement> parse_placement(std::string_view s) {
  if (s == kNames[0]) return Placement::kEachClass;
  if (s == kNames[1]) return Placement::kEachDevice;
  if (s == kNames[2]) return Placement::kAny;
  return std::nullopt;
}

std::span<const std::string_view> known_placements() { return kNames; }

std::string class_target(std::string_view hardware_class) {
  return std::string(kClassPrefix) + std::string(hardware_class);
}

std::string device_target(std::string_view worker_id, std::string_view device_key) {
  return std::string(kDevicePrefix) + std::string(worker_id) + "/" + std::string(device_key);
}

std::optional<ParsedTarget> parse_target(std::string_view target) {
  ParsedTarget t;
  if (target.empty()) return t;
  if (target.substr(0, kClassPrefix.size()) == kClassPrefix) {
    t.placement = Placement::kEachClass;
    t.hardware_class = std::string(target.substr(kClassPrefix.size()));
    if (t.hardware_class.empty()) return std::nullopt;
    return t;
  }
  if (target.substr(0, kDevicePrefix.size()) == kDevicePrefix) {
    const std::string_view rest = target.substr(kDevicePrefix.size());
    // Device keys never hold a '/' (the coordinator skips devices whose key does); worker ids may.
    const std::size_t slash = rest.rfind('/');
    if (slash == std::string_view::npos || slash == 0 || slash + 1 == rest.size()) return std::nullopt;
    t.placement = Placement::kEachDevice;
    t.worker_id = std::string(rest.substr(0, slash));
    t.device_key = std::string(rest.substr(slash + 1));
    return t;
  }
  return std::nullopt;
}

}  // namespace am::jobs
