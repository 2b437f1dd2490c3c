#include "coordinator/peer_standing.h"

#include <algorithm>

#include "common/reliability.h"

namespace am::coord {

void PeerStanding::on_answer(const std::string& worker_id) { peers_[worker_id].silent_streak = 0; }

void PeerStanding::on_result(const std::string& worker_id) {
  Peer& p = peers_[worker_id];
  p.silent_streak = 0;
  p.proven = true;
}

void PeerStanding::mark_proven(const std::string& worker_id) { peers_[worker_id].proven = true; }

int64_t PeerStanding::on_silent_lease(const std::string& worker_id, int64_t now_ms) {
  Peer& p = peers_[worker_id];
  if (++p.silent_streak < reliability::kSilentLeasesBeforeQuarantine) return 0;
  p.silent_streak = 0;
  int64_t length = reliability::kQuarantineInitialMs;
  for (int i = 0; i < p.quarantines && length < reliability::kQuarantineMaxMs; ++i) length *= 2;
  length = std::min(length, reliability::kQuarantineMaxMs);
  ++p.quarantines;
  p.quarantined_until_ms = now_ms + length;
  return length;
}

bool PeerStanding::proven(const std::string& worker_id) const {
  auto it = peers_.find(worker_id);
  return it != peers_.end() && it->second.proven;
}

bool PeerStanding::quarantined(const std::string& worker_id, int64_t now_ms) const {
  auto it = peers_.find(worker_id);
  return it != peers_.end() && now_ms < it->second.quarantined_until_ms;
}

int64_t PeerStanding::quarantined_until(const std::string& worker_id, int64_t now_ms) const {
  return quarantined(worker_id, now_ms) ? peers_.at(worker_id).quarantined_until_ms : 0;
}

bool PeerStanding::release(const std::string& worker_id, int64_t now_ms) {
  auto it = peers_.find(worker_id);
  if (it == peers_.end()) return false;
  const bool was = now_ms < it->second.quarantined_until_ms;
  it->second.quarantined_until_ms = 0;
  it->second.silent_streak = 0;
  it->second.quarantines = 0;
  return was;
}

}  // namespace am::coord
