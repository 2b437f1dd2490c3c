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

// Bytes of one GGUF block and of its payload on the device (the rest is the half scale, and the
// half min of q4_1 / dmin of q2_k).
std::size_t block_bytes(WeightKind k) {
  switch (k) {
    case WeightKind::kQ8_0: return 34;
    case WeightKind::kQ4_0: return 18;
    case WeightKind::kQ4_1: return 20;
    case WeightKind::kQ2_K: return 84;
    case WeightKind::kQ3_K: return 110;
    default: return 0;
  }
}
std::size_t quant_bytes(WeightKind k) {
  switch (k) {
    case WeightKind::kQ8_0: return 32;
    case WeightKind::kQ2_K: return 80;
    case WeightKind::kQ3_K: return 108;
    default: return 16;
  }
}

// GGUF's block_q2_K: scales[16], qs[64], d, dmin; block_q3_K: hmask[32], qs[64], scales[12], d
// (kernels/formats/blocks.h). On the device: q2_k qs then scales; q3_k unchanged; halves split.
constexpr std::size_t kQ2Scales = 16;
constexpr std::size_t kQ2Qs = 64;
constexpr std::size_t kQ3Payload = 108;

}  // namespace

std::optional<WeightKind> weight_kind_for(WeightFormat format) {
  switch (format) {
    case WeightFormat::kF32: return WeightKind::kF32;
    case WeightFormat::kF16: return WeightKind::kF16;
    case WeightFormat::kBF16: return WeightKind::kBF16;
    case WeightFormat::kQ8_0: return WeightKind::kQ8_0;
    case WeightFormat::kQ4_0: return WeightKind::kQ4_0;
    case WeightFormat::kQ4_1: return WeightKind::kQ4_1;
    case WeightFormat::kQ2_K: return WeightKind::kQ2_K;
    case WeightFormat::kQ3_K: return WeightKind::kQ3_K;
  }
  return std::nullopt;
}

bool is_block_kind(WeightKind k) {
  return k == WeightKind::kQ8_0 || k == WeightKind::kQ4_0 || k == WeightKind::kQ4_1 || is_k_quant_kind(k);
}

bool is_k_quant_kind(WeightKind k) { return k == WeightKind::kQ2_K || k == WeightKind::kQ3_K; }

int64_t activation_block(WeightKind k) { return is_k_quant_kind(k) ? kSuperBlockValues : kBlockValues; }

WeightFormat weight_format_of(WeightKind k) {
  switch (k) {
    case WeightKind::kF32: return WeightFormat::kF32;
    case WeightKind::kF16: return WeightFormat::kF16;
    case WeightKind::kBF16: return WeightFormat::kBF16;
    case WeightKind::kQ8_0: return WeightFormat::kQ8_0;
    case WeightKind::kQ4_0: return WeightFormat::kQ4_0;
    case WeightKind::kQ4_1: return WeightFormat::kQ4_1;
    case WeightKind::kQ2_K: return WeightFormat::kQ2_K;
    case WeightKind::kQ3_K: return WeightFormat::kQ3_K;
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
  const int64_t per_block = is_k_quant_kind(kind) ? kSuperBlockValues : kBlockValues;
  const std::size_t blocks = static_cast<std::size_t>((cols + per_block - 1) / per_block);
  const std::size_t bb = block_bytes(kind);
  if (bytes != n * blocks * bb || (bytes > 0 && raw == nullptr)) {
    return size_mismatch(kind, rows, cols, n * blocks * bb, bytes);
  }
  out.padded = static_cast<int64_t>(blocks);
  const std::size_t qb = quant_bytes(kind);
  if (kind == WeightKind::kQ2_K) {
    out.values.resize(n * blocks * qb);
    out.scales.resize(n * blocks);
    out.mins.resize(n * blocks);
    for (std::size_t i = 0; i < n * blocks; ++i) {
      const uint8_t* block = src + i * bb;
      uint8_t* dst = out.values.data() + i * qb;
      std::memcpy(dst, block + kQ2Scales, kQ2Qs);
      std::memcpy(dst + kQ2Qs, block, kQ2Scales);
      std::memcpy(&out.scales[i], block + kQ2Scales + kQ2Qs, kHalfBytes);
      std::memcpy(&out.mins[i], block + kQ2Scales + kQ2Qs + kHalfBytes, kHalfBytes);
    }
    return out;
  }
  if (kind == WeightKind::kQ3_K) {
    out.values.resize(n * blocks * qb);
    out.scales.resize(n * blocks);
    for (std::size_t i = 0; i < n * blocks; ++i) {
      const uint8_t* block = src + i * bb;
      std::memcpy(out.values.data() + i * qb, block, kQ3Payload);
      std::memcpy(&out.scales[i], block + kQ3Payload, kHalfBytes);
    }
    return out;
  }
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
