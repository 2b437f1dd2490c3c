#include "kernels/opencl/weight_repack.h"

#include <cstring>
#include <string>

#include "kernels/formats/fp16.h"
#include "kernels/formats/weight_format.h"

namespace am::kernels::opencl {
namespace {

constexpr std::size_t kHalfBytes = 2;

Status size_mismatch(std::string_view format, int64_t rows, int64_t cols, std::size_t expected,
                     std::size_t bytes) {
  return invalid_argument("opencl: " + std::string(format) + " weight of " + std::to_string(rows) +
                          "x" + std::to_string(cols) + " should hold " + std::to_string(expected) +
                          " bytes, holds " + std::to_string(bytes));
}

// Where a block keeps its parts: `payload` bytes from payload_at, the half scale at d_at and
// (q4_1, q2_k) the half min at m_at (negative: none).
struct BlockLayout {
  int64_t values = 0;          // weights per block
  std::size_t block_bytes = 0;
  std::size_t payload_at = 0;
  std::size_t payload = 0;
  std::size_t d_at = 0;
  int m_at = -1;
  std::string_view format;
};

Result<RepackedBlocks> repack(const void* raw, std::size_t bytes, int64_t rows, int64_t cols,
                              int64_t padded_rows, const BlockLayout& l) {
  const std::size_t n = static_cast<std::size_t>(rows);
  const std::size_t np = static_cast<std::size_t>(padded_rows);
  const std::size_t blocks_per_row = static_cast<std::size_t>((cols + l.values - 1) / l.values);
  const std::size_t blocks = n * blocks_per_row;
  if (bytes != blocks * l.block_bytes || (blocks > 0 && raw == nullptr)) {
    return size_mismatch(l.format, rows, cols, blocks * l.block_bytes, bytes);
  }
  const bool has_min = l.m_at >= 0;
  RepackedBlocks out;
  out.values.assign(blocks_per_row * l.payload * np, 0);
  out.scales.assign(blocks_per_row * np, 0.0f);
  if (has_min) out.mins.assign(blocks_per_row * np, 0.0f);
  const auto* src = static_cast<const uint8_t*>(raw);
  for (std::size_t r = 0; r < n; ++r) {
    for (std::size_t b = 0; b < blocks_per_row; ++b) {
      const uint8_t* block = src + (r * blocks_per_row + b) * l.block_bytes;
      uint16_t half = 0;
      std::memcpy(&half, block + l.d_at, kHalfBytes);  // little-endian halves, unaligned in GGUF's layout
      out.scales[b * np + r] = fp16_to_fp32(half);
      if (has_min) {
        std::memcpy(&half, block + l.m_at, kHalfBytes);
        out.mins[b * np + r] = fp16_to_fp32(half);
      }
      for (std::size_t j = 0; j < l.payload; ++j) {
        out.values[(b * l.payload + j) * np + r] = block[l.payload_at + j];
      }
    }
  }
  return out;
}

}  // namespace

Result<std::vector<uint8_t>> transpose_float_weight(const void* raw, std::size_t bytes, int64_t rows,
                                                    int64_t cols, int64_t padded_rows,
                                                    std::size_t element_bytes) {
  const std::size_t n = static_cast<std::size_t>(rows);
  const std::size_t np = static_cast<std::size_t>(padded_rows);
  const std::size_t k = static_cast<std::size_t>(cols);
  if (bytes != n * k * element_bytes || (bytes > 0 && raw == nullptr)) {
    return size_mismatch(element_bytes == 4 ? weight_format_name(WeightFormat::kF32) : "16-bit", rows, cols, n * k * element_bytes,
                         bytes);
  }
  std::vector<uint8_t> out(np * k * element_bytes, 0);
  const auto* src = static_cast<const uint8_t*>(raw);
  for (std::size_t r = 0; r < n; ++r) {
    for (std::size_t c = 0; c < k; ++c) {
      std::memcpy(out.data() + (c * np + r) * element_bytes, src + (r * k + c) * element_bytes,
                  element_bytes);
    }
  }
  return out;
}

Result<RepackedBlocks> repack_q8_0(const void* raw, std::size_t bytes, int64_t rows, int64_t cols,
                                   int64_t padded_rows) {
  return repack(raw, bytes, rows, cols, padded_rows,
                {kBlockValues, kQ8_0BlockBytes, kHalfBytes, 32, 0, -1, weight_format_name(WeightFormat::kQ8_0)});
}

Result<RepackedBlocks> repack_q4_0(const void* raw, std::size_t bytes, int64_t rows, int64_t cols,
                                   int64_t padded_rows) {
  return repack(raw, bytes, rows, cols, padded_rows,
                {kBlockValues, kQ4_0BlockBytes, kHalfBytes, 16, 0, -1, weight_format_name(WeightFormat::kQ4_0)});
}

Result<RepackedBlocks> repack_q4_1(const void* raw, std::size_t bytes, int64_t rows, int64_t cols,
                                   int64_t padded_rows) {
  return repack(raw, bytes, rows, cols, padded_rows,
                {kBlockValues, kQ4_1BlockBytes, 2 * kHalfBytes, 16, 0, 2, weight_format_name(WeightFormat::kQ4_1)});
}

Result<RepackedBlocks> repack_q2_k(const void* raw, std::size_t bytes, int64_t rows, int64_t cols,
                                   int64_t padded_rows) {
  return repack(raw, bytes, rows, cols, padded_rows,
                {kSuperBlockValues, kQ2_KBlockBytes, 0, 80, 80, 82, weight_format_name(WeightFormat::kQ2_K)});
}

Result<RepackedBlocks> repack_q3_k(const void* raw, std::size_t bytes, int64_t rows, int64_t cols,
                                   int64_t padded_rows) {
  return repack(raw, bytes, rows, cols, padded_rows,
                {kSuperBlockValues, kQ3_KBlockBytes, 0, 108, 108, -1, weight_format_name(WeightFormat::kQ3_K)});
}

}  // namespace am::kernels::opencl
