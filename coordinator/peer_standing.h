// The coordinator's standing of each worker id: whether it has ever returned a result, and
// whether it is quarantined for taking leases it never answered (PROTOCOL §5.5).
//
// Contract:
// - on_answer() records a PROGRESS or RESULT for one of the worker's leases: the silent streak
//   ends. on_result() also makes the worker "proven" (it has returned a result).
// - on_silent_lease() records a lease of the worker that ended (expired, reclaimed, worker
//   lost) with no answer for it. After reliability::kSilentLeasesBeforeQuarantine in a row the
//   worker is quarantined until now + backoff, where the backoff starts at
//   kQuarantineInitialMs and doubles with each quarantine of that worker, capped at
//   kQuarantineMaxMs. Returns the quarantine length in ms when one starts now, else 0.
// - quarantined(now) is true until the quarantine ends; it then lifts by itself.
// - Times are steady-clock milliseconds supplied by the caller; pure bookkeeping, no I/O, not
//   thread-safe. (Device quarantine after crashes and failed health checks is DeviceHealth.)
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace am::coord {

class PeerStanding {
 public:
  void on_answer(const std::string& worker_id);
  void on_result(const std::string& worker_id);
  void mark_proven(const std::string& worker_id);
  int64_t on_silent_lease(const std::string& worker_id, int64_t now_ms);

  bool proven(const std::string& worker_id) const;
  bool quarantined(const std::string& worker_id, int64_t now_ms) const;
  // When the worker's quarantine ends (steady ms), or 0 when it is not quarantined at now_ms.
  int64_t quarantined_until(const std::string& worker_id, int64_t now_ms) const;
  // `accelmatrix release`: ends the quarantine and the silent streak now and forgets the
  // doubling. Returns true when the worker was quarantined.
  bool release(const std::string& worker_id, int64_t now_ms);

 private:
  struct Peer {
    bool proven = false;
    int silent_streak = 0;
    int quarantines = 0;
    int64_t quarantined_until_ms = 0;
  };
  std::map<std::string, Peer> peers_;
};

}  // namespace am::coord
