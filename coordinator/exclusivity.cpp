#include "coordinator/exclusivity.h"

namespace am::coord {

std::string host_key_of(const std::string& host_id, const std::string& worker_id) {
  return host_id.empty() ? "worker:" + worker_id : "host:" + host_id;
}

HardwareSlot slot_of(const std::string& host_key, const std::string& worker_id, const DeviceInfo& device) {
  return HardwareSlot{worker_id + "/" + device.key, device.host_cores ? host_key : std::string()};
}

void Occupancy::hold(const HardwareSlot& slot, bool exclusive) {
  Use& d = devices_[slot.device];
  ++d.leases;
  d.exclusive = d.exclusive || exclusive;
  if (!slot.cores.empty()) {
    Use& c = cores_[slot.cores];
    ++c.leases;
    c.exclusive = c.exclusive || exclusive;
  }
}

bool Occupancy::can_start(const HardwareSlot& slot, bool exclusive) const {
  auto in = [](const std::map<std::string, Use>& m, const std::string& key) {
    auto it = m.find(key);
    return it == m.end() ? Use{} : it->second;
  };
  const Use d = in(devices_, slot.device);
  const Use c = slot.cores.empty() ? Use{} : in(cores_, slot.cores);
  if (exclusive) return d.leases == 0 && c.leases == 0;
  if (d.exclusive || c.exclusive) return false;
  return reserved_devices_.count(slot.device) == 0 &&
         (slot.cores.empty() || reserved_cores_.count(slot.cores) == 0);
}

void Occupancy::reserve(const HardwareSlot& slot) {
  reserved_devices_.insert(slot.device);
  if (!slot.cores.empty()) reserved_cores_.insert(slot.cores);
}

bool Occupancy::reserved(const HardwareSlot& slot) const {
  return reserved_devices_.count(slot.device) > 0 ||
         (!slot.cores.empty() && reserved_cores_.count(slot.cores) > 0);
}

}  // namespace am::coord
