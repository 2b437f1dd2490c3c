// The scalar reference of the interleaved-layout kernels (kernels/formats/interleaved_layout.h):
// it reads each row's quants and scales where interleave_group() put them and evaluates exactly
// the expression of dot_scalar.cpp's GGUF-row dot products, so both give the same bits.
#include <cstring>

#include "kernels/formats/blocks.h"
#include "kernels/formats/dot_kernels.h"
#include "kernels/formats/fp16.h"
#include "kernels/formats/interleaved_layout.h"

namespace am::kernels::detail {
namespace {

constexpr int kQ4Offset = 8;
constexpr int kHalfBytes = 2;

float half_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, sizeof(h));
  return fp16_to_fp32(h);
}

template <WeightFormat F>
void group_dot(const ActRow* x, int64_t mr, const uint8_t* group, float* y, int64_t ldy, bool accumulate) {
  constexpr bool kQ8 = F == WeightFormat::kQ8_0;
  constexpr bool kMin = F == WeightFormat::kQ4_1;
  constexpr int kBlock = 32;
  constexpr int kQuantBytes = kQ8 ? kBlock : kBlock / 2;
  constexpr int kChunks = kQuantBytes / static_cast<int>(kInterleaveChunkBytes);
  constexpr int kScaleFields = kMin ? 2 : 1;
  constexpr std::size_t kHeader = kScaleFields * kHalfBytes * kInterleaveRows;
  constexpr std::size_t kGroupBlock = kHeader + static_cast<std::size_t>(kQuantBytes) * kInterleaveRows;
  for (int64_t m = 0; m < mr; ++m) {
    const ActRow& a = x[m];
    for (int64_t i = 0; i < kInterleaveRows; ++i) {
      float sum = accumulate ? y[m * ldy + i] : 0.0f;
      for (int64_t b = 0; b < a.blocks; ++b) {
        const uint8_t* p = group + static_cast<std::size_t>(b) * kGroupBlock;
        const int8_t* xq = a.q + b * kBlock;
        int32_t isum = 0;
        for (int c = 0; c < kChunks; ++c) {
          const uint8_t* bytes = p + kHeader + (static_cast<std::size_t>(c) * kInterleaveRows + i) * kInterleaveChunkBytes;
          for (int t = 0; t < static_cast<int>(kInterleaveChunkBytes); ++t) {
            const int j = c * static_cast<int>(kInterleaveChunkBytes) + t;  // byte index in the block's qs
            if constexpr (kQ8) {
              isum += static_cast<int32_t>(xq[j]) * static_cast<int8_t>(bytes[t]);
            } else {
              const int offset = kMin ? 0 : kQ4Offset;
              isum += xq[j] * ((bytes[t] & 0xF) - offset) + xq[j + kBlock / 2] * ((bytes[t] >> 4) - offset);
            }
          }
        }
        const float d = half_at(p + i * kHalfBytes);
        if constexpr (kMin) {
          const float mw = half_at(p + (kInterleaveRows + i) * kHalfBytes);
          sum += static_cast<float>(isum) * (d * a.d[b]) + mw * (a.d[b] * static_cast<float>(a.sum[b]));
        } else {
          sum += static_cast<float>(isum) * (d * a.d[b]);
        }
      }
      y[m * ldy + i] = sum;
    }
  }
}

}  // namespace

GroupDotFn group_dot_scalar(WeightFormat format) {
  switch (format) {
    case WeightFormat::kQ8_0:
      return group_dot<WeightFormat::kQ8_0>;
    case WeightFormat::kQ4_0:
      return group_dot<WeightFormat::kQ4_0>;
    case WeightFormat::kQ4_1:
      return group_dot<WeightFormat::kQ4_1>;
    default:
      return nullptr;
  }
}

void pack_act_tile(WeightFormat format, const ActRow* rows, int64_t mr, PackedActTile& out) {
  constexpr int kBlock = 32;
  constexpr int kChunks = kBlock / 4;
  const int64_t nb = mr > 0 ? rows[0].blocks : 0;
  out.rows = mr;
  out.blocks = nb;
  out.q.resize(static_cast<std::size_t>(nb * kBlock * mr));
  out.d.resize(static_cast<std::size_t>(nb * mr));
  out.corr.resize(static_cast<std::size_t>(nb * mr));
  const bool min_term = format == WeightFormat::kQ4_1;
  out.msum.resize(min_term ? static_cast<std::size_t>(nb * mr) : 0);
  const int32_t offset = format == WeightFormat::kQ8_0 ? 128 : format == WeightFormat::kQ4_0 ? 8 : 0;
  for (int64_t b = 0; b < nb; ++b) {
    for (int64_t m = 0; m < mr; ++m) {
      const ActRow& r = rows[m];
      const int8_t* src = r.q + b * kBlock;
      for (int c = 0; c < kChunks; ++c) {
        std::memcpy(&out.q[static_cast<std::size_t>(((b * kChunks + c) * mr + m) * 4)], src + 4 * c, 4);
      }
      const std::size_t at = static_cast<std::size_t>(b * mr + m);
      out.d[at] = r.d[b];
      out.corr[at] = -offset * r.sum[b];
      if (min_term) out.msum[at] = r.d[b] * static_cast<float>(r.sum[b]);
    }
  }
}

PackedActView packed_view(const PackedActTile& t, int64_t b0, int64_t nb) {
  constexpr int64_t kBlock = 32;
  const std::size_t at = static_cast<std::size_t>(b0 * t.rows);
  return {t.q.data() + static_cast<std::size_t>(b0 * kBlock * t.rows), t.d.data() + at, t.corr.data() + at,
          t.msum.empty() ? nullptr : t.msum.data() + at, nb};
}

GroupDot group_dot_kernel(WeightFormat format, KernelPath path) {
#if defined(__x86_64__)
  if (path == KernelPath::kAvx512) return {nullptr, kPackedTileRows, group_tile_avx512(format)};
  if (path == KernelPath::kAvx2) return {group_dot_avx2(format), kGroupTileRows};
#endif
  (void)path;
  return {group_dot_scalar(format), kGroupTileRows};
}

}  // namespace am::kernels::detail
