#include "kernels/vulkan/vk_weights.h"

#include <cstring>
#include <string>

namespace am::kernels::vulkan {
namespace {

constexpr std::size_t kHalfBytes = 2;

Status size_mismatch(WeightKind kind, int64_t rows, int64_t cols, std::size_t expected, std::size_t bytes) {
  return invalid_argument("vulkan: " + weight_kind_name(kind) + " weight of " + std::to_string(rows) +
                          "x" + std::to_string(cols) + " should hold " + std::to_string(expected) +
                          " bytes, holds " + std::to_string(bytes));
}

std::size_t element_bytes(WeightKind k) { return k == WeightKind::kF32 ? sizeof(float) : kHalfBytes; }

// Bytes of one GGUF block and of its quants (the rest is the half scale, and min for q4_1).
std::size_t block_bytes(WeightKind k) {
  return k == WeightKind::kQ8_0 ? 34 : k == WeightKind::kQ4_0 ? 18 : 20;
}
std::size_t quant_bytes(WeightKind k) { return k == WeightKind::kQ8_0 ? 32 : 16; }

}  // namespace

std::optional<WeightKind> weight_kind_for(WeightFormat format) {
  switch (format) {
    case WeightFormat::kF32: return WeightKind::kF32;
    case WeightFormat::kF16: return WeightKind::kF16;
    case WeightFormat::kBF16: return WeightKind::kBF16;
    case WeightFormat::kQ8_0: return WeightKind::kQ8_0;
    case WeightFormat::kQ4_0: return WeightKind::kQ4_0;
    case WeightFormat::kQ4_1: return WeightKind::kQ4_1;
    case WeightFormat::kQ2_K:
    case WeightFormat::kQ3_K:
      return std::nullopt;
  }
  return std::nullopt;
}

bool is_block_kind(WeightKind k) {
  return k == WeightKind::kQ8_0 || k == WeightKind::kQ4_0 || k == WeightKind::kQ4_1;
}

WeightFormat weight_format_of(WeightKind k) {
  switch (k) {
    case WeightKind::kF32: return WeightFormat::kF32;
    case WeightKind::kF16: return WeightFormat::kF16;
    case WeightKind::kBF16: return WeightFormat::kBF16;
    case WeightKind::kQ8_0: return WeightFormat::kQ8_0;
    case WeightKind::kQ4_0: return WeightFormat::kQ4_0;
    case WeightKind::kQ4_1: return WeightFormat::kQ4_1;
  }
  return WeightFormat::kF32;
}

std::string weight_kind_name(WeightKind k) { return std::string(weight_format_name(weight_format_of(k))); }

Result<PackedWeight> pack_weight(WeightKind kind, const void* raw, std::size_t bytes, int64_t rows, int64_t cols) {
  PackedWeight out;
  out.kind = kind;
  out.rows = rows;
  out.cols = cols;
  const auto* src = static_cast<const uint8_t*>(raw);
  const std::size_t n = static_cast<std::size_t>(rows);
  if (!is_block_kind(kind)) {
    const std::size_t eb = element_bytes(kind);
    const std::size_t k = static_cast<std::size_t>(cols);
    if (bytes != n * k * eb || (bytes > 0 && raw == nullptr)) return size_mismatch(kind, rows, cols, n * k * eb, bytes);
    const std::size_t per_chunk = kChunkBytes / eb;
    const std::size_t kp = (k + per_chunk - 1) / per_chunk * per_chunk;
    out.padded = static_cast<int64_t>(kp);
    out.values.assign(n * kp * eb, 0);
    for (std::size_t r = 0; r < n; ++r) std::memcpy(out.values.data() + r * kp * eb, src + r * k * eb, k * eb);
    return out;
  }
  const std::size_t blocks = static_cast<std::size_t>((cols + kBlockValues - 1) / kBlockValues);
  const std::size_t bb = block_bytes(kind);
  if (bytes != n * blocks * bb || (bytes > 0 && raw == nullptr)) {
    return size_mismatch(kind, rows, cols, n * blocks * bb, bytes);
  }
  out.padded = static_cast<int64_t>(blocks);
  const std::size_t qb = quant_bytes(kind);
  const bool has_min = kind == WeightKind::kQ4_1;
  const std::size_t header = has_min ? 2 * kHalfBytes : kHalfBytes;
  out.values.resize(n * blocks * qb);
  out.scales.resize(n * blocks);
  if (has_min) out.mins.resize(n * blocks);
  for (std::size_t i = 0; i < n * blocks; ++i) {
    const uint8_t* block = src + i * bb;
    std::memcpy(&out.scales[i], block, kHalfBytes);  // little-endian halves, as GGUF stores them
    if (has_min) std::memcpy(&out.mins[i], block + kHalfBytes, kHalfBytes);
    std::memcpy(out.values.data() + i * qb, block + header, qb);
  }
  return out;
}

}  // namespace am::kernels::vulkan
