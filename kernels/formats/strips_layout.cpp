#include "kernels/formats/strips_layout.h"

#include <cstring>

#include "common/check.h"

namespace am::kernels {
namespace {

constexpr std::size_t kHalfBytes = 2;

// Units per row and bytes per unit of `format`.
struct Units {
  int64_t count;
  std::size_t bytes;
};

Units units_of(WeightFormat format, int64_t cols) {
  const std::size_t bytes = strip_unit_bytes(format);
  AM_CHECK(bytes > 0 && strips_supported(format, cols), "strips layout: this format or width has no strips");
  return {cols * static_cast<int64_t>(kHalfBytes) / static_cast<int64_t>(bytes), bytes};
}

}  // namespace

std::size_t strip_unit_bytes(WeightFormat format) {
  switch (format) {
    case WeightFormat::kBF16: return 2 * kHalfBytes;
    case WeightFormat::kF16: return kHalfBytes;
    default: return 0;
  }
}

bool strips_supported(WeightFormat format, int64_t cols) {
  return (format == WeightFormat::kBF16 && cols % 2 == 0) || format == WeightFormat::kF16;
}

void to_strip(WeightFormat format, const uint8_t* src, int64_t cols, uint8_t* dst) {
  const Units u = units_of(format, cols);
  const std::size_t row_bytes = static_cast<std::size_t>(cols) * kHalfBytes;
  for (int64_t r = 0; r < kStripRows; ++r) {
    const uint8_t* row = src + row_bytes * static_cast<std::size_t>(r);
    for (int64_t i = 0; i < u.count; ++i) {
      std::memcpy(dst + static_cast<std::size_t>(i * kStripRows + r) * u.bytes, row + static_cast<std::size_t>(i) * u.bytes,
                  u.bytes);
    }
  }
}

void from_strip(WeightFormat format, const uint8_t* src, int64_t cols, uint8_t* dst, std::size_t dst_row_stride) {
  for (int64_t r = 0; r < kStripRows; ++r) {
    strip_row(format, src, cols, r, dst + dst_row_stride * static_cast<std::size_t>(r));
  }
}

void strip_row(WeightFormat format, const uint8_t* strip, int64_t cols, int64_t r, uint8_t* dst) {
  const Units u = units_of(format, cols);
  for (int64_t i = 0; i < u.count; ++i) {
    std::memcpy(dst + static_cast<std::size_t>(i) * u.bytes, strip + static_cast<std::size_t>(i * kStripRows + r) * u.bytes,
                u.bytes);
  }
}

}  // namespace am::kernels
