// A set of 64-bit values (hashes, ids written as 16 hex digits) in one flat array: open
// addressing with linear probing, no allocation per element. A million-job plan checks each id
// for duplicates as it expands; std::unordered_set's node per element made that check a second
// and a half of the expansion (docs/SCALE.md).
//
// Contract:
// - insert(v) adds v and returns true, or returns false when v is already in the set; every
//   uint64_t value is allowed, 0 and ~0 included.
// - size() counts the distinct values inserted; contains(v) says whether v was.
// - Values are scrambled before probing, so values that share their low bits (or are all
//   multiples of a power of two) do not cluster.
// - The table grows by doubling at a load of 1/2; memory is 16 bytes per element at worst.
// - Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace am {

class U64Set {
 public:
  bool insert(uint64_t v) {
    if (v == kEmpty) {
      if (has_empty_) return false;
      has_empty_ = true;
      ++size_;
      return true;
    }
    if ((slots_in_use_ + 1) * 2 > table_.size()) grow();
    if (!place(v)) return false;
    ++slots_in_use_;
    ++size_;
    return true;
  }

  bool contains(uint64_t v) const {
    if (v == kEmpty) return has_empty_;
    if (table_.empty()) return false;
    const std::size_t mask = table_.size() - 1;
    for (std::size_t i = scramble(v) & mask;; i = (i + 1) & mask) {
      if (table_[i] == v) return true;
      if (table_[i] == kEmpty) return false;
    }
  }

  std::size_t size() const { return size_; }

 private:
  // The empty slot's marker; the value itself is tracked by has_empty_.
  static constexpr uint64_t kEmpty = 0;

  // A 64-bit finaliser (murmur3's fmix64): every input bit reaches every output bit.
  static std::size_t scramble(uint64_t v) {
    v ^= v >> 33;
    v *= 0xff51afd7ed558ccdULL;
    v ^= v >> 33;
    v *= 0xc4ceb9fe1a85ec53ULL;
    v ^= v >> 33;
    return static_cast<std::size_t>(v);
  }

  // Puts v (never kEmpty) into the table; false when it is there already.
  bool place(uint64_t v) {
    const std::size_t mask = table_.size() - 1;
    for (std::size_t i = scramble(v) & mask;; i = (i + 1) & mask) {
      if (table_[i] == v) return false;
      if (table_[i] == kEmpty) {
        table_[i] = v;
        return true;
      }
    }
  }

  void grow() {
    std::vector<uint64_t> old(table_.empty() ? 16 : table_.size() * 2, kEmpty);
    old.swap(table_);
    for (const uint64_t v : old) {
      if (v != kEmpty) place(v);
    }
  }

  std::vector<uint64_t> table_;   // a power of two in size once anything is in it
  std::size_t slots_in_use_ = 0;
  std::size_t size_ = 0;
  bool has_empty_ = false;
};

}  // namespace am
