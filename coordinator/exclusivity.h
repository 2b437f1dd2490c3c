// Exclusive perf jobs (docs/PROTOCOL.md §5.12): a job that measures speed runs with nothing else
// on the hardware it measures — not on the same device, and, for a device that computes on its
// host's cores (the cpu device, PoCL, lavapipe: capability record `host_cores`), not on any such
// device of the same host, whichever worker on that host it belongs to. Jobs that only check
// accuracy may share hardware with each other, never with an exclusive job.
//
// Occupancy is the scheduler's picture of one moment: the leases out (hold()), and hardware that
// waits for an exclusive job (reserve()) — while a perf job waits for its hardware to empty, no
// shared job starts there, so a stream of accuracy jobs cannot starve it.
//
// Contract: a value type, no I/O, thread-compatible. Keys are opaque strings made by slot_of().
#pragma once

#include <map>
#include <set>
#include <string>

#include "coordinator/matching.h"

namespace am::coord {

struct HardwareSlot {
  std::string device;   // "<worker id>/<device key>"
  std::string cores;    // the host's cores ("host:<host id>") for a host_cores device; else ""
};

// `host_key`: "host:<HELLO.host_id>", or "worker:<worker id>" for a worker that sent none (then
// only its own devices are known to share cores).
HardwareSlot slot_of(const std::string& host_key, const std::string& worker_id, const DeviceInfo& device);
std::string host_key_of(const std::string& host_id, const std::string& worker_id);

class Occupancy {
 public:
  // A lease out on `slot`; `exclusive` when it is a perf job's.
  void hold(const HardwareSlot& slot, bool exclusive);
  // Whether a job may start on `slot` now: an exclusive one needs the device (and, for a
  // host_cores device, the host's cores) empty and unreserved by another; a shared one needs no
  // exclusive lease and no reservation there.
  bool can_start(const HardwareSlot& slot, bool exclusive) const;
  // An exclusive job is waiting for `slot`'s hardware to empty.
  void reserve(const HardwareSlot& slot);
  bool reserved(const HardwareSlot& slot) const;

 private:
  struct Use {
    int leases = 0;
    bool exclusive = false;
  };
  std::map<std::string, Use> devices_;
  std::map<std::string, Use> cores_;
  std::set<std::string> reserved_devices_;
  std::set<std::string> reserved_cores_;
};

}  // namespace am::coord
