#include "kernels/formats/pairs_layout.h"

#include <cstring>

namespace am::kernels {
namespace {

constexpr std::size_t kPairBytes = 4;   // two bf16 values

}  // namespace

bool pairs_supported(WeightFormat format, int64_t cols) { return format == WeightFormat::kBF16 && cols % 2 == 0; }

void pair_strip(const uint8_t* src, int64_t cols, uint8_t* dst) {
  const int64_t pairs = cols / 2;
  const std::size_t row_bytes = static_cast<std::size_t>(cols) * 2;
  for (int64_t r = 0; r < kPairsStripRows; ++r) {
    const uint8_t* row = src + row_bytes * static_cast<std::size_t>(r);
    for (int64_t u = 0; u < pairs; ++u) {
      std::memcpy(dst + (u * kPairsStripRows + r) * kPairBytes, row + u * kPairBytes, kPairBytes);
    }
  }
}

void unpair_strip(const uint8_t* src, int64_t cols, uint8_t* dst, std::size_t dst_row_stride) {
  for (int64_t r = 0; r < kPairsStripRows; ++r) unpair_row(src, cols, r, dst + dst_row_stride * static_cast<std::size_t>(r));
}

void unpair_row(const uint8_t* strip, int64_t cols, int64_t r, uint8_t* dst) {
  const int64_t pairs = cols / 2;
  for (int64_t u = 0; u < pairs; ++u) {
    std::memcpy(dst + u * kPairBytes, strip + (u * kPairsStripRows + r) * kPairBytes, kPairBytes);
  }
}

}  // namespace am::kernels
