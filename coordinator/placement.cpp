#include "coordinator/placement.h"

#include "jobs/placement.h"

namespace am::coord {

std::optional<PlacedTarget> placement_for(const jobs::JobSpec& spec, const std::string& worker_id,
                                          const DeviceInfo& device) {
  if (spec.placement == jobs::Placement::kAny) return std::nullopt;
  if (device.backend != spec.backend || !has_tags(device, spec.required_tags)) return std::nullopt;
  if (spec.command && !device.runs_commands) return std::nullopt;
  PlacedTarget t;
  t.placement = spec.placement;
  t.hardware_class = device.hardware_class;
  if (spec.placement == jobs::Placement::kEachClass) {
    t.target = jobs::class_target(device.hardware_class);
  } else {
    t.worker_id = worker_id;
    t.device_key = device.key;
    t.target = jobs::device_target(worker_id, device.key);
  }
  return t;
}

std::optional<PlacedTarget> placed_target(std::string_view target, std::string_view hardware_class) {
  std::optional<jobs::ParsedTarget> parsed = jobs::parse_target(target);
  if (!parsed) return std::nullopt;
  PlacedTarget t;
  t.placement = parsed->placement;
  t.target = std::string(target);
  t.worker_id = parsed->worker_id;
  t.device_key = parsed->device_key;
  t.hardware_class = parsed->placement == jobs::Placement::kEachClass ? parsed->hardware_class
                                                                       : std::string(hardware_class);
  return t;
}

bool admits(const PlacedTarget& target, const std::string& worker_id, const DeviceInfo& device) {
  switch (target.placement) {
    case jobs::Placement::kAny: return true;
    case jobs::Placement::kEachClass: return device.hardware_class == target.hardware_class;
    case jobs::Placement::kEachDevice: return worker_id == target.worker_id && device.key == target.device_key;
  }
  return false;
}

bool measures_speed(const jobs::JobSpec& spec) { return spec.mode != jobs::kModeAccuracy; }

}  // namespace am::coord
