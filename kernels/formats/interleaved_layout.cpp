#include "kernels/formats/interleaved_layout.h"

#include <cstring>

#include "common/check.h"
#include "kernels/formats/blocks.h"
#include "kernels/formats/strips_layout.h"

namespace am::kernels {
namespace {

// Where a block's quant bytes start and how many there are (GGUF block layouts, blocks.h/q8_0.h).
struct BlockGeometry {
  std::size_t block_bytes;
  std::size_t scale_fields;  // binary16 fields before the quants: d (and m for q4_1)
  std::size_t quant_bytes;
};

BlockGeometry geometry(WeightFormat format) {
  switch (format) {
    case WeightFormat::kQ8_0:
      return {sizeof(BlockQ8_0), 1, sizeof(BlockQ8_0::qs)};
    case WeightFormat::kQ4_0:
      return {sizeof(BlockQ4_0), 1, sizeof(BlockQ4_0::qs)};
    case WeightFormat::kQ4_1:
      return {sizeof(BlockQ4_1), 2, sizeof(BlockQ4_1::qs)};
    default:
      break;
  }
  AM_CHECK(false, "interleaved layout: format has no interleaved form");
  return {};
}

constexpr std::size_t kHalfBytes = 2;

}  // namespace

std::string_view weight_layout_name(WeightLayout layout) {
  switch (layout) {
    case WeightLayout::kRows:
      return "rows";
    case WeightLayout::kInterleaved8:
      return "interleaved8";
    case WeightLayout::kStrips64:
      return "strips64";
  }
  return "?";
}

bool interleave_supported(WeightFormat format) {
  return format == WeightFormat::kQ8_0 || format == WeightFormat::kQ4_0 || format == WeightFormat::kQ4_1;
}

WeightLayout cpu_execution_layout(WeightFormat format, KernelPath path, int64_t cols) {
  if ((path == KernelPath::kAvx2 || path == KernelPath::kAvx512) && interleave_supported(format)) {
    return WeightLayout::kInterleaved8;
  }
  // bf16 strips hold k-pairs for vdpbf16ps; without AVX512_BF16 the GEMM widens bf16 to f32.
  if (path == KernelPath::kAvx512 && strips_supported(format, cols) &&
      (format == WeightFormat::kF16 || cpu_features().avx512bf16)) {
    return WeightLayout::kStrips64;
  }
  return WeightLayout::kRows;
}

std::size_t interleaved_header_bytes(WeightFormat format) {
  return geometry(format).scale_fields * kHalfBytes * kInterleaveRows;
}

void interleave_group(WeightFormat format, const uint8_t* src, std::size_t row_bytes, int64_t blocks,
                      uint8_t* dst) {
  const BlockGeometry g = geometry(format);
  const std::size_t header = g.scale_fields * kHalfBytes * kInterleaveRows;
  const std::size_t chunks = g.quant_bytes / kInterleaveChunkBytes;
  for (int64_t b = 0; b < blocks; ++b) {
    uint8_t* out = dst + static_cast<std::size_t>(b) * g.block_bytes * kInterleaveRows;
    for (int64_t i = 0; i < kInterleaveRows; ++i) {
      const uint8_t* blk = src + static_cast<std::size_t>(i) * row_bytes + static_cast<std::size_t>(b) * g.block_bytes;
      for (std::size_t f = 0; f < g.scale_fields; ++f) {
        std::memcpy(out + (f * kInterleaveRows + static_cast<std::size_t>(i)) * kHalfBytes, blk + f * kHalfBytes,
                    kHalfBytes);
      }
      const uint8_t* qs = blk + g.scale_fields * kHalfBytes;
      for (std::size_t c = 0; c < chunks; ++c) {
        std::memcpy(out + header + (c * kInterleaveRows + static_cast<std::size_t>(i)) * kInterleaveChunkBytes,
                    qs + c * kInterleaveChunkBytes, kInterleaveChunkBytes);
      }
    }
  }
}

void deinterleave_group(WeightFormat format, const uint8_t* src, std::size_t row_bytes, int64_t blocks,
                        uint8_t* dst, std::size_t dst_row_stride) {
  const BlockGeometry g = geometry(format);
  const std::size_t header = g.scale_fields * kHalfBytes * kInterleaveRows;
  const std::size_t chunks = g.quant_bytes / kInterleaveChunkBytes;
  for (int64_t i = 0; i < kInterleaveRows; ++i) {
    uint8_t* row = dst + static_cast<std::size_t>(i) * dst_row_stride;
    // Bytes past the last block (none for whole-block rows) are not part of any block.
    std::memset(row + static_cast<std::size_t>(blocks) * g.block_bytes, 0,
                row_bytes - static_cast<std::size_t>(blocks) * g.block_bytes);
    for (int64_t b = 0; b < blocks; ++b) {
      const uint8_t* in = src + static_cast<std::size_t>(b) * g.block_bytes * kInterleaveRows;
      uint8_t* blk = row + static_cast<std::size_t>(b) * g.block_bytes;
      for (std::size_t f = 0; f < g.scale_fields; ++f) {
        std::memcpy(blk + f * kHalfBytes, in + (f * kInterleaveRows + static_cast<std::size_t>(i)) * kHalfBytes,
                    kHalfBytes);
      }
      uint8_t* qs = blk + g.scale_fields * kHalfBytes;
      for (std::size_t c = 0; c < chunks; ++c) {
        std::memcpy(qs + c * kInterleaveChunkBytes,
                    in + header + (c * kInterleaveRows + static_cast<std::size_t>(i)) * kInterleaveChunkBytes,
                    kInterleaveChunkBytes);
      }
    }
  }
}

}  // namespace am::kernels
