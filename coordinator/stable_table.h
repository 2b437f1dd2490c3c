// StableTable: entries keyed by a string member of their own, stored in fixed-size chunks.
//
// Why: the coordinator keeps one entry per job — a million of them in a million-job run. As
// nodes of a hash map each entry was its own heap allocation, made while the plan's expansion
// and the store's read-back were freeing their temporaries around it; the heap ended up half
// holes that malloc_trim cannot return (docs/SCALE.md). Chunks of kChunk entries are a few large
// allocations that hold nothing else, and the index is one array of pointers to the entries,
// keyed by each entry's own id: no node and no second copy of the key per entry.
//
// Contract:
//   - insert(e): moves `e` into a free slot and indexes it under e.*Id, which must not be in the
//     table yet. The returned reference (and every pointer to an entry) stays valid until that
//     entry is erased: entries never move.
//   - An entry's key must not be modified while it is in the table (the index finds it by its
//     key's hash); replace() is the way to overwrite an entry, key included.
//   - erase(e): unindexes `e` and resets its slot to T{}; the slot is reused by a later insert.
//   - find(id): the entry or nullptr. size(): entries in the table.
//   - Not thread-safe.
#pragma once

#include <algorithm>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace am::coord {

template <typename T, std::string T::*Id, std::size_t kChunk = 4096>
class StableTable {
 public:
  T* find(std::string_view id) const {
    if (slots_.empty()) return nullptr;
    for (std::size_t i = home(id);; i = (i + 1) & mask()) {
      T* e = slots_[i];
      if (e == nullptr) return nullptr;
      if (e != tombstone() && std::string_view(e->*Id) == id) return e;
    }
  }

  T& insert(T&& entry) {
    T* slot = take_slot();
    *slot = std::move(entry);
    index(slot);
    return *slot;
  }

  T& replace(T& slot, T&& entry) {
    unindex(slot);
    slot = std::move(entry);
    index(&slot);
    return slot;
  }

  void erase(T& slot) {
    unindex(slot);
    slot = T{};
    free_.push_back(&slot);
  }

  std::size_t size() const { return size_; }

 private:
  // The index: open addressing with linear probing over pointers to the entries (8 bytes a
  // slot, at most half full counting erased slots), not a node per entry.
  static T* tombstone() {
    static T marker;
    return &marker;
  }
  std::size_t mask() const { return slots_.size() - 1; }
  std::size_t home(std::string_view id) const { return std::hash<std::string_view>{}(id) & mask(); }

  void index(T* e) {
    if ((size_ + tombstones_ + 1) * 2 > slots_.size()) rehash(std::max<std::size_t>(16, (size_ + 1) * 4));
    std::size_t i = home(std::string_view(e->*Id));
    while (slots_[i] != nullptr && slots_[i] != tombstone()) i = (i + 1) & mask();
    if (slots_[i] == tombstone()) --tombstones_;
    slots_[i] = e;
    ++size_;
  }

  void unindex(T& e) {
    for (std::size_t i = home(std::string_view(e.*Id));; i = (i + 1) & mask()) {
      if (slots_[i] == nullptr) return;   // not indexed (cannot happen for an entry of the table)
      if (slots_[i] == &e) {
        slots_[i] = tombstone();
        ++tombstones_;
        --size_;
        return;
      }
    }
  }

  // A power of two at least `want`; drops the tombstones.
  void rehash(std::size_t want) {
    std::size_t n = 16;
    while (n < want) n *= 2;
    std::vector<T*> old = std::move(slots_);
    slots_.assign(n, nullptr);
    size_ = 0;
    tombstones_ = 0;
    for (T* e : old) {
      if (e == nullptr || e == tombstone()) continue;
      std::size_t i = home(std::string_view(e->*Id));
      while (slots_[i] != nullptr) i = (i + 1) & mask();
      slots_[i] = e;
      ++size_;
    }
  }

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
  std::vector<T*> slots_;            // the index; nullptr: empty, tombstone(): erased
  std::size_t size_ = 0;
  std::size_t tombstones_ = 0;
};

}  // namespace am::coord
