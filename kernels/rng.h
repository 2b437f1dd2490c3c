// Fast deterministic random numbers for synthetic weights and inputs.
//
// Contract:
//   - derive_seed(seed, stream) gives statistically independent seeds for named streams
//     (a splitmix64 mix), so weights, inputs and tensors never share a sequence.
//   - Xoshiro256 (xoshiro256**, seeded through splitmix64) yields the same sequence for the same
//     seed on every platform and build. Not thread-safe; one generator per thread.
//   - fill_normal() fills n floats with mean + stddev * N(0,1) (Box–Muller, tails to ~5.8 sigma).
//     The output depends only on (seed, n, mean, stddev), never on the thread count: the range is
//     cut into fixed chunks, each with its own derived generator, and the chunks run over
//     ctx.pool.
#pragma once

#include <cstdint>

#include "kernels/exec_context.h"

namespace am::kernels {

uint64_t derive_seed(uint64_t seed, uint64_t stream);

class Xoshiro256 {
 public:
  explicit Xoshiro256(uint64_t seed);
  uint64_t next();
  // Uniform in [0, 1) with 24 random bits.
  float uniform01() { return static_cast<float>(next() >> 40) * 0x1p-24f; }
  // Uniform integer in [0, n), n > 0 (multiply-shift; bias below 2^-32 for n < 2^32).
  uint32_t below(uint32_t n) {
    return static_cast<uint32_t>(((next() >> 32) * static_cast<uint64_t>(n)) >> 32);
  }

 private:
  uint64_t s_[4];
};

void fill_normal(float* dst, int64_t n, float mean, float stddev, uint64_t seed,
                 const ExecContext& ctx);

}  // namespace am::kernels
