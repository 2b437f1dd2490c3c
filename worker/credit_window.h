// The worker's side of credit flow control (docs/PROTOCOL.md §5.2): it states its credit
// window — the absolute number of jobs it can accept now on each device — together with how
// many ASSIGNs it has received on the session, so the coordinator can discount the ASSIGNs
// still on the wire.
//
// Contract:
// - on_welcome() starts a session: the ASSIGN count restarts at 0 and the next ready() is
//   always sent (the coordinator forgot the previous session's window).
// - on_assign() counts every ASSIGN received on the session, including ones the worker ignores.
// - ready(free_slots, force) returns the READY to send, or nothing when it would repeat the
//   last one sent and `force` is false. A window READY is idempotent, so repeating it (after an
//   ACK, with heartbeats) is always safe and heals a READY lost with a dropped message.
// - Pure bookkeeping, header-only (the credit/lease model test uses it without the executor);
//   not thread-safe.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/protocol.h"

namespace am::worker {

class CreditWindow {
 public:
  explicit CreditWindow(std::vector<std::string> devices) : devices_(std::move(devices)) {}

  void on_welcome() {
    seen_ = 0;
    last_sent_.reset();
  }
  void on_assign() { ++seen_; }
  // The last READY could not be sent: the next ready() call returns one again.
  void forget_last_sent() { last_sent_.reset(); }
  int64_t seen() const { return seen_; }

  std::optional<proto::Ready> ready(int free_slots, bool force) {
    std::map<std::string, int> window;
    for (const auto& d : devices_) window[d] = std::max(0, free_slots);
    if (!force && last_sent_ && last_sent_->first == window && last_sent_->second == seen_) {
      return std::nullopt;
    }
    last_sent_ = std::make_pair(window, seen_);
    proto::Ready r;
    r.window = std::move(window);
    r.seen = seen_;
    return r;
  }

 private:
  std::vector<std::string> devices_;
  int64_t seen_ = 0;
  std::optional<std::pair<std::map<std::string, int>, int64_t>> last_sent_;
};

}  // namespace am::worker
