// AVX-512 VNNI kernels of the interleaved layout (kernels/formats/interleaved_layout.h): the
// packed-tile kernels, which take every product on this path, decode's single row of X included.
// The layout's group block is 8 rows x 4 bytes = 32 bytes per chunk; the main kernel holds two
// consecutive groups' chunks in one 512-bit register (16 outputs) and runs four groups per call,
// the 256-bit ones take the last one to three groups.
//
// vpdpbusd multiplies unsigned by signed bytes and adds each group of four products to an int32
// lane, exactly (no int16 step that could saturate). The weights are made the unsigned operand,
// once per chunk and shared by every row of X:
//   q4_0/q4_1: the nibbles 0..15 as they are; q4_0's -8 offset comes off per block as
//              -8 * sum(x) (the packed activations carry it as each block's correction);
//   q8_0:      w + 128 (w xor 0x80, 0..255); the +128 comes off per block as -128 * sum(x).
// The activation bytes of a chunk are one broadcast per row of X, shared by every group of the
// call. The int32 block sums are the reference's exact integers; the f32 expression per block is
// the AVX2 kernels' (the same order of operations, FMA), so the two give the same bits.
//
// Until 2026-12-07 one to eight rows of X (decode, small batches) ran a 256-bit kernel of one
// group per call with a broadcast per vpdpbusd, whose instruction count held a q4_0 GEMV to
// 47-49 GB/s cache-resident on one thread (61-63% of the read bandwidth streaming); on the
// packed-tile kernel it reads 55-82 GB/s (75-85%), and 4 rows of X run 2-3x faster
// (bench_kernels --kinds gemv; docs/FORMATS.md).
#if defined(__x86_64__)
#include "kernels/formats/simd_avx512.h"

#include <cstring>

#include "kernels/formats/dot_kernels.h"
#include "kernels/formats/interleaved_layout.h"

namespace am::kernels::detail {
namespace {

constexpr int kBlock = 32;
constexpr int kHalfBytes = 2;
constexpr int kChunkBytes = 32;  // one register: 4 bytes of each of 8 rows

// 1-2 rows of X stream the weights once (bound by memory), so the kernel asks for each group's
// lines this far ahead, as dot_interleaved_avx2.cpp does (2 blocks ahead, the GEMM's distance
// below, left a q4_0 GEMV at 75-76% of the read bandwidth on one thread; 2 KiB: 82-85%).
constexpr std::size_t kGemvPrefetchBytes = 2048;
constexpr int kPrefetchMaxRows = 2;
// The packed-tile kernel's register tile: kPackedTileRows rows of X x kTileGroups groups (8
// outputs each): 12 int32 and 12 f32 accumulators of AVX512-VL's 32 registers.
constexpr int kTileGroups = 2;

AM_TARGET_AVX512 inline __m256i bcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof(v));
  return _mm256_set1_epi32(v);
}

AM_TARGET_AVX512 inline __m256 halves8(const uint8_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// Ends a chunk (see chunk_fence in dot_interleaved_avx2.cpp: without it GCC hoists every
// chunk's broadcasts to the top of the block and spills the tile).
template <int MR>
AM_TARGET_AVX512 inline void chunk_fence(__m256i (&acc)[MR]) {
  #pragma GCC unroll 8
  for (int m = 0; m < MR; ++m) __asm__ volatile("" : "+v"(acc[m]) : : "memory");
}

// The packed-tile kernels (PackedActView): G consecutive groups (8 G output rows) times MR rows
// of X per call, so each broadcast of 4 activation bytes feeds G vpdpbusd (a broadcast per
// vpdpbusd held the first version to under half the int8 peak: the broadcasts' load port, not
// the dot products, was the limit). X is read through one pointer at constant offsets and each
// block's correction is the accumulators' start.
template <int MR, int G, bool kQ8, bool kMin>
AM_TARGET_AVX512 void tile_kernel(const PackedActView& x, const uint8_t* group, std::size_t group_stride, float* y,
                                  int64_t ldy, bool accumulate) {
  constexpr int kQuantBytes = kQ8 ? kBlock : kBlock / 2;
  constexpr int kHeader = (kMin ? 2 : 1) * kHalfBytes * kInterleaveRows;
  constexpr int kGroupBlock = kHeader + kQuantBytes * kInterleaveRows;
  constexpr int kXBlockBytes = kBlock * MR;  // a block's packed quants: 8 chunks x MR rows x 4
  const __m256i low_mask = _mm256_set1_epi8(0x0F);
  const __m256i bias = _mm256_set1_epi8(static_cast<char>(0x80));
  const int8_t* xq = x.q;
  const float* xd = x.d;
  const int32_t* corr = x.corr;
  const float* msum = x.msum;
  __m256 acc[MR][G];
  #pragma GCC unroll 8
  for (int m = 0; m < MR; ++m) {
    #pragma GCC unroll 4
    for (int g = 0; g < G; ++g) {
      acc[m][g] = accumulate ? _mm256_loadu_ps(y + m * ldy + g * kInterleaveRows) : _mm256_setzero_ps();
    }
  }
  for (int64_t b = 0; b < x.blocks; ++b) {
    const uint8_t* p = group + b * kGroupBlock;
    const int8_t* xb = xq + b * kXBlockBytes;
    __m256i isum[MR][G];
    #pragma GCC unroll 8
    for (int m = 0; m < MR; ++m) {
      const __m256i c0 = _mm256_set1_epi32(corr[b * MR + m]);
      #pragma GCC unroll 4
      for (int g = 0; g < G; ++g) isum[m][g] = c0;
    }
    #pragma GCC unroll 8
    for (int c = 0; c < (kQ8 ? 8 : 4); ++c) {
      __m256i lo[G], hi[G];
      #pragma GCC unroll 4
      for (int g = 0; g < G; ++g) {
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + g * group_stride + kHeader + c * kChunkBytes));
        if constexpr (kQ8) {
          lo[g] = _mm256_xor_si256(v, bias);
        } else {
          lo[g] = _mm256_and_si256(v, low_mask);
          hi[g] = _mm256_and_si256(_mm256_srli_epi16(v, 4), low_mask);
        }
      }
      #pragma GCC unroll 8
      for (int m = 0; m < MR; ++m) {
        const __m256i xl = bcast4(xb + (c * MR + m) * 4);
        #pragma GCC unroll 4
        for (int g = 0; g < G; ++g) isum[m][g] = _mm256_dpbusd_epi32(isum[m][g], lo[g], xl);
        if constexpr (!kQ8) {
          const __m256i xh = bcast4(xb + ((c + 4) * MR + m) * 4);
          #pragma GCC unroll 4
          for (int g = 0; g < G; ++g) isum[m][g] = _mm256_dpbusd_epi32(isum[m][g], hi[g], xh);
        }
      }
      #pragma GCC unroll 8
      for (int m = 0; m < MR; ++m) chunk_fence(isum[m]);
    }
    __m256 dw[G], dm[G];
    #pragma GCC unroll 4
    for (int g = 0; g < G; ++g) {
      dw[g] = halves8(p + g * group_stride);
      if constexpr (kMin) dm[g] = halves8(p + g * group_stride + kHalfBytes * kInterleaveRows);
    }
    #pragma GCC unroll 8
    for (int m = 0; m < MR; ++m) {
      const __m256 d = _mm256_set1_ps(xd[b * MR + m]);
      #pragma GCC unroll 4
      for (int g = 0; g < G; ++g) {
        acc[m][g] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[m][g]), _mm256_mul_ps(dw[g], d), acc[m][g]);
        if constexpr (kMin) acc[m][g] = _mm256_fmadd_ps(dm[g], _mm256_set1_ps(msum[b * MR + m]), acc[m][g]);
      }
    }
  }
  #pragma GCC unroll 8
  for (int m = 0; m < MR; ++m) {
    #pragma GCC unroll 4
    for (int g = 0; g < G; ++g) _mm256_storeu_ps(y + m * ldy + g * kInterleaveRows, acc[m][g]);
  }
}

// Two consecutive groups' 32-byte pieces (group g in the low half, g + 1 in the high half of a
// 512-bit register): the outputs of 4 groups in 2 registers, so each zmm vpdpbusd does the work
// of two ymm ones for one instruction.
AM_TARGET_AVX512 inline __m512i pair256(const uint8_t* p, std::size_t stride) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))),
                            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + stride)), 1);
}

AM_TARGET_AVX512 inline __m512 halves16(const uint8_t* p, std::size_t stride) {
  const __m256i h = _mm256_inserti128_si256(
      _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))),
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + stride)), 1);
  return _mm512_cvtph_ps(h);
}

template <int MR>
AM_TARGET_AVX512 inline void chunk_fence512(__m512i (&acc)[MR][2]) {
  #pragma GCC unroll 8
  for (int m = 0; m < MR; ++m) __asm__ volatile("" : "+v"(acc[m][0]), "+v"(acc[m][1]) : : "memory");
}

// 4 groups (32 outputs) x MR rows of X, on 512-bit registers; the same arithmetic per output as
// tile_kernel, so the same bits.
// The packed-tile kernel asks for its groups' weights this many blocks ahead: a GEMM streams each
// group's K slice from L2 once per tile of X, four groups at once, which the hardware prefetchers
// left partly waiting. Measured A/B (bench_kernels --kinds gemm --threads 1, M = 512, two rounds
// each, 2026-11-28): q8_0 63-66% -> 67% of the int8 peak, q4_0 69-71% -> 70-71%, q4_1 63-64% ->
// 64-65%; 4 and 8 blocks ahead measured the same as 2. A hint only: an address past the
// weights (the last blocks) does not fault.
constexpr int kPrefetchBlocks = 2;

template <int MR, bool kQ8, bool kMin>
AM_TARGET_AVX512 void tile_kernel4(const PackedActView& x, const uint8_t* group, std::size_t gs, float* y,
                                   int64_t ldy, bool accumulate) {
  constexpr int kQuantBytes = kQ8 ? kBlock : kBlock / 2;
  constexpr int kHeader = (kMin ? 2 : 1) * kHalfBytes * kInterleaveRows;
  constexpr int kGroupBlock = kHeader + kQuantBytes * kInterleaveRows;
  constexpr int kXBlockBytes = kBlock * MR;
  constexpr int kAheadBlocks = MR <= kPrefetchMaxRows ? (kGemvPrefetchBytes + kGroupBlock - 1) / kGroupBlock : kPrefetchBlocks;
  const __m512i low_mask = _mm512_set1_epi8(0x0F);
  const __m512i bias = _mm512_set1_epi8(static_cast<char>(0x80));
  const int8_t* xq = x.q;
  const float* xd = x.d;
  const int32_t* corr = x.corr;
  const float* msum = x.msum;
  __m512 acc[MR][2];
  #pragma GCC unroll 8
  for (int m = 0; m < MR; ++m) {
    #pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
      acc[m][h] = accumulate ? _mm512_loadu_ps(y + m * ldy + h * 2 * kInterleaveRows) : _mm512_setzero_ps();
    }
  }
  for (int64_t b = 0; b < x.blocks; ++b) {
    const uint8_t* p = group + b * kGroupBlock;
    const int8_t* xb = xq + b * kXBlockBytes;
    {
      // Streaming (1-2 rows of X), the last blocks ask for the start of the next call's four
      // groups (the four after these, at the same K offset): a decode's groups are short
      // (K = 2048: 9 KiB of q4_0), and each call's first 2 KiB per group were demand misses.
      const uint8_t* ahead = p + kAheadBlocks * kGroupBlock;
      if (MR <= kPrefetchMaxRows && b + kAheadBlocks >= x.blocks) ahead += 4 * gs - x.blocks * kGroupBlock;
      #pragma GCC unroll 4
      for (int gg = 0; gg < 4; ++gg) {
        #pragma GCC unroll 5
        for (int line = 0; line < kGroupBlock; line += 64) _mm_prefetch(reinterpret_cast<const char*>(ahead + gg * gs + line), _MM_HINT_T0);
      }
    }
    __m512i isum[MR][2];
    #pragma GCC unroll 8
    for (int m = 0; m < MR; ++m) isum[m][0] = isum[m][1] = _mm512_set1_epi32(corr[b * MR + m]);
    #pragma GCC unroll 8
    for (int c = 0; c < (kQ8 ? 8 : 4); ++c) {
      __m512i lo[2], hi[2];
      #pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        const __m512i v = pair256(p + 2 * h * gs + kHeader + c * kChunkBytes, gs);
        if constexpr (kQ8) {
          lo[h] = _mm512_xor_si512(v, bias);
        } else {
          lo[h] = _mm512_and_si512(v, low_mask);
          hi[h] = _mm512_and_si512(_mm512_srli_epi16(v, 4), low_mask);
        }
      }
      #pragma GCC unroll 8
      for (int m = 0; m < MR; ++m) {
        int32_t xl;
        std::memcpy(&xl, xb + (c * MR + m) * 4, sizeof xl);
        const __m512i bl = _mm512_set1_epi32(xl);
        isum[m][0] = _mm512_dpbusd_epi32(isum[m][0], lo[0], bl);
        isum[m][1] = _mm512_dpbusd_epi32(isum[m][1], lo[1], bl);
        if constexpr (!kQ8) {
          int32_t xh;
          std::memcpy(&xh, xb + ((c + 4) * MR + m) * 4, sizeof xh);
          const __m512i bh = _mm512_set1_epi32(xh);
          isum[m][0] = _mm512_dpbusd_epi32(isum[m][0], hi[0], bh);
          isum[m][1] = _mm512_dpbusd_epi32(isum[m][1], hi[1], bh);
        }
      }
      chunk_fence512(isum);
    }
    __m512 dw[2], dm[2];
    #pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
      dw[h] = halves16(p + 2 * h * gs, gs);
      if constexpr (kMin) dm[h] = halves16(p + 2 * h * gs + kHalfBytes * kInterleaveRows, gs);
    }
    #pragma GCC unroll 8
    for (int m = 0; m < MR; ++m) {
      const __m512 d = _mm512_set1_ps(xd[b * MR + m]);
      #pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        acc[m][h] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[m][h]), _mm512_mul_ps(dw[h], d), acc[m][h]);
        if constexpr (kMin) acc[m][h] = _mm512_fmadd_ps(dm[h], _mm512_set1_ps(msum[b * MR + m]), acc[m][h]);
      }
    }
  }
  #pragma GCC unroll 8
  for (int m = 0; m < MR; ++m) {
    #pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) _mm512_storeu_ps(y + m * ldy + h * 2 * kInterleaveRows, acc[m][h]);
  }
}

template <int MR, bool kQ8, bool kMin>
AM_TARGET_AVX512 void tile_groups(const PackedActView& x, const uint8_t* group, std::size_t group_stride,
                                  int64_t ngroups, float* y, int64_t ldy, bool accumulate) {
  int64_t g = 0;
  for (; g + 4 <= ngroups; g += 4) {
    tile_kernel4<MR, kQ8, kMin>(x, group + g * group_stride, group_stride, y + g * kInterleaveRows, ldy, accumulate);
  }
  for (; g + kTileGroups <= ngroups; g += kTileGroups) {
    tile_kernel<MR, kTileGroups, kQ8, kMin>(x, group + g * group_stride, group_stride, y + g * kInterleaveRows, ldy,
                                            accumulate);
  }
  for (; g < ngroups; ++g) {
    tile_kernel<MR, 1, kQ8, kMin>(x, group + g * group_stride, group_stride, y + g * kInterleaveRows, ldy, accumulate);
  }
}

template <bool kQ8, bool kMin>
void tile_dispatch(const PackedActView& x, int64_t mr, const uint8_t* group, std::size_t group_stride,
                   int64_t ngroups, float* y, int64_t ldy, bool accumulate) {
  static_assert(kPackedTileRows == 6, "tile_dispatch handles 1..6 rows of X");
  switch (mr) {
    case 1: tile_groups<1, kQ8, kMin>(x, group, group_stride, ngroups, y, ldy, accumulate); return;
    case 2: tile_groups<2, kQ8, kMin>(x, group, group_stride, ngroups, y, ldy, accumulate); return;
    case 3: tile_groups<3, kQ8, kMin>(x, group, group_stride, ngroups, y, ldy, accumulate); return;
    case 4: tile_groups<4, kQ8, kMin>(x, group, group_stride, ngroups, y, ldy, accumulate); return;
    case 5: tile_groups<5, kQ8, kMin>(x, group, group_stride, ngroups, y, ldy, accumulate); return;
    default: tile_groups<6, kQ8, kMin>(x, group, group_stride, ngroups, y, ldy, accumulate); return;
  }
}

}  // namespace

GroupTileFn group_tile_avx512(WeightFormat format) {
  switch (format) {
    case WeightFormat::kQ8_0:
      return tile_dispatch<true, false>;
    case WeightFormat::kQ4_0:
      return tile_dispatch<false, false>;
    case WeightFormat::kQ4_1:
      return tile_dispatch<false, true>;
    default:
      return nullptr;
  }
}

}  // namespace am::kernels::detail

#endif  // defined(__x86_64__)
