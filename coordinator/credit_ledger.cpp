#include "coordinator/credit_ledger.h"

#include <algorithm>

namespace am::coord {

void CreditLedger::on_window(const std::map<std::string, int>& window, int64_t seen) {
  windowed_ = true;
  window_ = window;
  // READYs arrive in order on one session, so `seen` never goes back; a smaller value would be
  // a peer bug and is clamped rather than trusted.
  seen_ = std::clamp<int64_t>(seen, seen_, sent_);
  legacy_.clear();
}

void CreditLedger::on_legacy_credits(const std::string& device, int credits) {
  if (windowed_ || credits <= 0) return;
  legacy_[device] = std::min(legacy_[device] + credits, slots_);
}

void CreditLedger::on_assign(const std::string& device) {
  ++sent_;
  if (!windowed_) {
    if (auto it = legacy_.find(device); it != legacy_.end() && it->second > 0) --it->second;
  }
}

int CreditLedger::available(const std::string& device, int leases_held) const {
  const int64_t slot_room = static_cast<int64_t>(slots_) - leases_held;
  int64_t granted = 0;
  if (windowed_) {
    auto it = window_.find(device);
    granted = (it == window_.end() ? 0 : it->second) - in_flight();
  } else {
    auto it = legacy_.find(device);
    granted = it == legacy_.end() ? 0 : it->second;
  }
  return static_cast<int>(std::max<int64_t>(0, std::min(granted, slot_room)));
}

}  // namespace am::coord
