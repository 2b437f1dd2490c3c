// Stable 64-bit hashing for ids (job ids, hardware classes). FNV-1a: not cryptographic, but
// stable across processes, builds and platforms, which std::hash is not.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace am {

inline uint64_t fnv1a64(std::string_view data, uint64_t h = 0xcbf29ce484222325ull) {
  for (unsigned char c : data) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

// 16 lowercase hex characters.
inline std::string hex64(uint64_t v) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) out[static_cast<std::size_t>(i)] = kDigits[v & 0xf];
  return out;
}

// hex64(v) == text, without making the string (a comparison per row of a million-row walk).
inline bool hex64_equals(std::string_view text, uint64_t v) {
  static constexpr char kDigits[] = "0123456789abcdef";
  if (text.size() != 16) return false;
  for (std::size_t i = 16; i-- > 0; v >>= 4) {
    if (text[i] != kDigits[v & 0xf]) return false;
  }
  return true;
}

}  // namespace am
