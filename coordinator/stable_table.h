// StableTable: entries keyed by a string member of their own, stored in fixed-size chunks.
//
// Why: the coordinator keeps one entry per job — a million of them in a million-job run. As
// nodes of a hash map each entry was its own heap allocation, made while the plan's expansion
// and the store's read-back were freeing their temporaries around it; the heap ended up half
// holes that malloc_trim cannot return (200k jobs: 218 MB in use, 193 MB free in the heap,
// RSS 422 MB; docs/SCALE.md). Chunks of kChunk entries are a few large allocations that hold
// nothing else, and the index holds a view of each entry's own key instead of a second copy.
//
// Contract:
//   - insert(e): moves `e` into a free slot and indexes it under e.*Id, which must not be in the
//     table yet. The returned reference (and every pointer to an entry) stays valid until that
//     entry is erased: entries never move.
//   - An entry's key must not be modified while it is in the table (the index views its
//     characters); replace() is the way to overwrite an entry, key included.
//   - erase(e): unindexes `e` and resets its slot to T{}; the slot is reused by a later insert.
//   - find(id): the entry or nullptr. size(): entries in the table.
//   - Not thread-safe.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace am::coord {

template <typename T, std::string T::*Id, std::size_t kChunk = 4096>
class StableTable {
 public:
  T* find(std::string_view id) const {
    auto it = index_.find(id);
    return it == index_.end() ? nullptr : it->second;
  }

  T& insert(T&& entry) {
    T* slot = take_slot();
    *slot = std::move(entry);
    index_.emplace(std::string_view(slot->*Id), slot);
    return *slot;
  }

  T& replace(T& slot, T&& entry) {
    index_.erase(std::string_view(slot.*Id));
    slot = std::move(entry);
    index_.emplace(std::string_view(slot.*Id), &slot);
    return slot;
  }

  void erase(T& slot) {
    index_.erase(std::string_view(slot.*Id));
    slot = T{};
    free_.push_back(&slot);
  }

  std::size_t size() const { return index_.size(); }
  void reserve(std::size_t n) { index_.reserve(n); }

 private:
  T* take_slot() {
    if (!free_.empty()) {
      T* slot = free_.back();
      free_.pop_back();
      return slot;
    }
    if (used_ == chunks_.size() * kChunk) chunks_.push_back(std::make_unique<T[]>(kChunk));
    T* slot = &chunks_[used_ / kChunk][used_ % kChunk];
    ++used_;
    return slot;
  }

  std::vector<std::unique_ptr<T[]>> chunks_;
  std::size_t used_ = 0;             // slots handed out from the chunks (free_ ones included)
  std::vector<T*> free_;             // erased slots
  std::unordered_map<std::string_view, T*> index_;
};

}  // namespace am::coord
