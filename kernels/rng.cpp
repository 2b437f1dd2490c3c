#include "kernels/rng.h"

#include <algorithm>
#include <cmath>

namespace am::kernels {
namespace {

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

// Elements per independently seeded chunk: large enough that seeding cost vanishes, small
// enough that a few million weights still spread over every thread.
constexpr int64_t kNormalChunk = 16384;

}  // namespace

uint64_t derive_seed(uint64_t seed, uint64_t stream) {
  uint64_t state = seed ^ (stream * 0xD1B54A32D192ED03ull);
  splitmix64(state);
  return splitmix64(state);
}

Xoshiro256::Xoshiro256(uint64_t seed) {
  uint64_t state = seed;
  for (uint64_t& s : s_) s = splitmix64(state);
}

uint64_t Xoshiro256::next() {
  const uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

void fill_normal(float* dst, int64_t n, float mean, float stddev, uint64_t seed,
                 const ExecContext& ctx) {
  constexpr float kTwoPi = 6.28318530717958647692f;
  const int64_t chunks = (n + kNormalChunk - 1) / kNormalChunk;
  parallel_for(ctx, chunks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      Xoshiro256 rng(derive_seed(seed, static_cast<uint64_t>(c)));
      const int64_t lo = c * kNormalChunk;
      const int64_t hi = std::min(n, lo + kNormalChunk);
      for (int64_t i = lo; i < hi; i += 2) {
        // u1 in (0, 1] keeps log() finite.
        const float u1 = 1.0f - rng.uniform01();
        const float u2 = rng.uniform01();
        const float r = stddev * std::sqrt(-2.0f * std::log(u1));
        const float angle = kTwoPi * u2;
        dst[i] = mean + r * std::cos(angle);
        if (i + 1 < hi) dst[i + 1] = mean + r * std::sin(angle);
      }
    }
  });
}

}  // namespace am::kernels
