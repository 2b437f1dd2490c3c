// Internal helper of the quantizers: run a whole-block quantizer over a row whose length need not
// be a multiple of the block, zero-padding the last block in a local copy so block code never
// reads past the row.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

namespace am::kernels {

template <typename Block, typename BlockFn>
void for_each_padded_block(const float* x, Block* y, int64_t k, int64_t block, BlockFn fn) {
  const int64_t full = k / block;
  for (int64_t b = 0; b < full; ++b) fn(x + b * block, y + b);
  const int64_t rest = k - full * block;
  if (rest > 0) {
    std::vector<float> padded(static_cast<std::size_t>(block), 0.0f);
    std::memcpy(padded.data(), x + full * block, static_cast<std::size_t>(rest) * sizeof(float));
    fn(padded.data(), y + full);
  }
}

}  // namespace am::kernels
