// The coordinator's side of credit flow control for one worker session (docs/PROTOCOL.md §5.2).
//
// Contract:
// - A session starts (WELCOME) with no credits. A READY with a window (protocol >= 1.2) states
//   the worker's absolute free capacity per device *as of the `seen`-th ASSIGN of this
//   session*; the ledger remembers the latest window and counts the ASSIGNs it sent since.
// - available() is recomputed from that state on every call, never cached: credits that the
//   slot cap withheld a moment ago come back by themselves once a lease ends (a RESULT stored,
//   a lease expired). That is what makes the flow control deadlock-free: no event has to
//   "re-grant" anything.
// - available(device, leases_held) = min(window[device] - (sent - seen), slots - leases_held),
//   never below 0. `leases_held` is the number of attempts the coordinator counts against the
//   worker (leased, RESULT not yet received), so the coordinator never holds more leases on a
//   worker than it has slots, whatever the worker grants.
// - Legacy READY (1.0/1.1, additive `credits`) is still understood: the credits add up per
//   device and each ASSIGN on that device consumes one; the same slot cap applies at assign
//   time.
// - Pure bookkeeping: no I/O, no clocks, not thread-safe. Used by coordinator/server.cpp and by
//   the credit/lease model test (tests/coordinator/credit_model_test.cpp).
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace am::coord {

class CreditLedger {
 public:
  explicit CreditLedger(int slots = 1) : slots_(slots) {}

  // A 1.2 READY: replaces the window; `seen` = ASSIGNs the worker had received on this session.
  // A `seen` above the ASSIGNs sent (a confused or hostile peer) counts as "all seen".
  void on_window(const std::map<std::string, int>& window, int64_t seen);
  // A legacy READY: adds `credits` on `device`.
  void on_legacy_credits(const std::string& device, int credits);
  // The coordinator sent an ASSIGN that consumed a credit of `device`.
  void on_assign(const std::string& device);

  // Jobs that may be assigned on `device` now.
  int available(const std::string& device, int leases_held) const;

  int slots() const { return slots_; }
  int64_t in_flight() const { return sent_ - seen_; }   // ASSIGNs the worker had not seen yet

 private:
  int slots_;
  bool windowed_ = false;                 // a 1.2 READY arrived on this session
  std::map<std::string, int> window_;     // 1.2: absolute free capacity per device
  std::map<std::string, int> legacy_;     // 1.0/1.1: additive credits per device
  int64_t sent_ = 0;                      // ASSIGNs sent on this session
  int64_t seen_ = 0;                      // ASSIGNs the latest window accounts for
};

}  // namespace am::coord
