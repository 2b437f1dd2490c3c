// AVX2 + FMA + F16C kernels of the interleaved layout (kernels/formats/interleaved_layout.h).
//
// One call multiplies up to kGroupTileRows rows of X with one group of 8 weight rows. Per block
// of 32 and 32-byte chunk of the group (4 quant bytes of each of the 8 rows), each row of X
// broadcasts its 4 matching activation bytes (vpbroadcastd) and one vpmaddubsw gives the 8 rows'
// partial sums side by side; the 8 rows' scales come from one vcvtph2ps. The chunk's unpacking
// (nibble split, or |w| for q8_0) is shared by the rows of X in the tile: that is what the
// layout buys over GGUF rows, where every (row of X, weight row) pair unpacks its own block and
// ends in a horizontal sum.
//
// vpmaddubsw multiplies unsigned by signed bytes into saturating int16 pairs; no pair saturates:
//   q4_0/q4_1: nibbles 0..15 times |x| <= 127: a pair is at most 2 * 15 * 127 = 3810, so the 8
//              products of a block (4 chunks x low/high nibbles) are summed in int16 (at most
//              30480) before one vpmaddwd widens them;
//   q8_0:      |w| (<= 128, also for a stray -128 in a foreign file) times sign(x, w): a pair is
//              at most 2 * 128 * 127 = 32512, widened after every product.
// q4_0's -8 offset is applied once per block as -8 * sum(x) (the activations carry the block
// sums). The int32 block sums are exact; only the f32 order differs from the reference (FMA).
#if defined(__x86_64__)
#include <immintrin.h>

#include <cstring>

#include "kernels/formats/dot_kernels.h"
#include "kernels/formats/interleaved_layout.h"

#define AM_TARGET_AVX2 __attribute__((target("avx2,fma,f16c")))

namespace am::kernels::detail {
namespace {

constexpr int kBlock = 32;
constexpr int kHalfBytes = 2;
constexpr int kChunkBytes = 32;  // one register: 4 bytes of each of 8 rows

AM_TARGET_AVX2 inline __m256i bcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof(v));
  return _mm256_set1_epi32(v);
}

// GEMV-like calls (1-2 rows of X) stream the weights once and are bound by memory, not by
// arithmetic: they prefetch every line of a group block this far ahead, the distance of
// bench_util's prefetching read loop (kReadPrefetchBytes), which on these VMs reads 10-25% faster
// than plain loads. Groups are contiguous, so the distance runs on into the next group.
constexpr std::size_t kGemvPrefetchBytes = 2048;
constexpr int64_t kPrefetchMaxRows = 2;

template <int kGroupBlock>
AM_TARGET_AVX2 inline void prefetch_group_block(const uint8_t* p) {
  #pragma GCC unroll 8
  for (int line = 0; line < kGroupBlock; line += 64) {
    _mm_prefetch(reinterpret_cast<const char*>(p + kGemvPrefetchBytes + line), _MM_HINT_T0);
  }
}

AM_TARGET_AVX2 inline __m256 halves8(const uint8_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// Ends a chunk: its accumulators must be complete here. Fully unrolled without it, GCC hoists the
// broadcasts of every chunk to the top of the block and spills the tile; rolled, it pays a loop
// and register copies per chunk: the fence cut the kernels' instructions (callgrind, M=64 N=256
// K=1024) by 14% for q4_0, 13% for q4_1 and 6% for q8_0.
template <int MR>
AM_TARGET_AVX2 inline void chunk_fence(__m256i (&acc)[MR]) {
  #pragma GCC unroll 4
  for (int m = 0; m < MR; ++m) __asm__ volatile("" : "+x"(acc[m]) : : "memory");
}

template <int MR, bool kMin>
AM_TARGET_AVX2 void group_q4(const ActRow* x, const uint8_t* group, float* y, int64_t ldy, bool accumulate) {
  constexpr int kHeader = (kMin ? 2 : 1) * kHalfBytes * kInterleaveRows;
  constexpr int kGroupBlock = kHeader + kBlock / 2 * kInterleaveRows;
  const int64_t blocks = x[0].blocks;
  const __m256i low_mask = _mm256_set1_epi8(0x0F);
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc[MR];
  #pragma GCC unroll 4
  for (int m = 0; m < MR; ++m) acc[m] = accumulate ? _mm256_loadu_ps(y + m * ldy) : _mm256_setzero_ps();
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* p = group + b * kGroupBlock;
    if constexpr (MR <= kPrefetchMaxRows) prefetch_group_block<kGroupBlock>(p);
    __m256i s16[MR];
    #pragma GCC unroll 4
    for (int m = 0; m < MR; ++m) s16[m] = _mm256_setzero_si256();
    const int8_t* xq[MR];
    #pragma GCC unroll 4
    for (int m = 0; m < MR; ++m) xq[m] = x[m].q + b * kBlock;
    #pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + kHeader + c * kChunkBytes));
      const __m256i lo = _mm256_and_si256(v, low_mask);
      const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low_mask);
      #pragma GCC unroll 4
      for (int m = 0; m < MR; ++m) {
        s16[m] = _mm256_add_epi16(s16[m], _mm256_maddubs_epi16(lo, bcast4(xq[m] + 4 * c)));
        s16[m] = _mm256_add_epi16(s16[m], _mm256_maddubs_epi16(hi, bcast4(xq[m] + 4 * c + kBlock / 2)));
      }
      chunk_fence(s16);
    }
    const __m256 dw = halves8(p);
    #pragma GCC unroll 4
    for (int m = 0; m < MR; ++m) {
      __m256i i32 = _mm256_madd_epi16(s16[m], ones);
      const float dx = x[m].d[b];
      if constexpr (kMin) {
        acc[m] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(i32), _mm256_mul_ps(dw, _mm256_set1_ps(dx)), acc[m]);
        acc[m] = _mm256_fmadd_ps(halves8(p + kHalfBytes * kInterleaveRows),
                                 _mm256_set1_ps(dx * static_cast<float>(x[m].sum[b])), acc[m]);
      } else {
        i32 = _mm256_sub_epi32(i32, _mm256_set1_epi32(8 * x[m].sum[b]));
        acc[m] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(i32), _mm256_mul_ps(dw, _mm256_set1_ps(dx)), acc[m]);
      }
    }
  }
  #pragma GCC unroll 4
  for (int m = 0; m < MR; ++m) _mm256_storeu_ps(y + m * ldy, acc[m]);
}

template <int MR>
AM_TARGET_AVX2 void group_q8(const ActRow* x, const uint8_t* group, float* y, int64_t ldy, bool accumulate) {
  constexpr int kHeader = kHalfBytes * kInterleaveRows;
  constexpr int kGroupBlock = kHeader + kBlock * kInterleaveRows;
  const int64_t blocks = x[0].blocks;
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc[MR];
  #pragma GCC unroll 4
  for (int m = 0; m < MR; ++m) acc[m] = accumulate ? _mm256_loadu_ps(y + m * ldy) : _mm256_setzero_ps();
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* p = group + b * kGroupBlock;
    if constexpr (MR <= kPrefetchMaxRows) prefetch_group_block<kGroupBlock>(p);
    __m256i i32[MR];
    #pragma GCC unroll 4
    for (int m = 0; m < MR; ++m) i32[m] = _mm256_setzero_si256();
    const int8_t* xq[MR];
    #pragma GCC unroll 4
    for (int m = 0; m < MR; ++m) xq[m] = x[m].q + b * kBlock;
    #pragma GCC unroll 8
    for (int c = 0; c < 8; ++c) {
      const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + kHeader + c * kChunkBytes));
      const __m256i wabs = _mm256_abs_epi8(w);
      #pragma GCC unroll 4
      for (int m = 0; m < MR; ++m) {
        const __m256i xs = _mm256_sign_epi8(bcast4(xq[m] + 4 * c), w);
        i32[m] = _mm256_add_epi32(i32[m], _mm256_madd_epi16(_mm256_maddubs_epi16(wabs, xs), ones));
      }
      chunk_fence(i32);
    }
    const __m256 dw = halves8(p);
    #pragma GCC unroll 4
    for (int m = 0; m < MR; ++m) {
      acc[m] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(i32[m]), _mm256_mul_ps(dw, _mm256_set1_ps(x[m].d[b])), acc[m]);
    }
  }
  #pragma GCC unroll 4
  for (int m = 0; m < MR; ++m) _mm256_storeu_ps(y + m * ldy, acc[m]);
}

template <template <int> class K>
void dispatch_mr(const ActRow* x, int64_t mr, const uint8_t* group, float* y, int64_t ldy, bool accumulate) {
  switch (mr) {
    case 1: K<1>::run(x, group, y, ldy, accumulate); return;
    case 2: K<2>::run(x, group, y, ldy, accumulate); return;
    case 3: K<3>::run(x, group, y, ldy, accumulate); return;
    default: K<4>::run(x, group, y, ldy, accumulate); return;
  }
}

template <int MR> struct Q8 { static void run(const ActRow* x, const uint8_t* g, float* y, int64_t l, bool a) { group_q8<MR>(x, g, y, l, a); } };
template <int MR> struct Q40 { static void run(const ActRow* x, const uint8_t* g, float* y, int64_t l, bool a) { group_q4<MR, false>(x, g, y, l, a); } };
template <int MR> struct Q41 { static void run(const ActRow* x, const uint8_t* g, float* y, int64_t l, bool a) { group_q4<MR, true>(x, g, y, l, a); } };

static_assert(kGroupTileRows == 4, "dispatch_mr handles 1..4 rows of X");

}  // namespace

GroupDotFn group_dot_avx2(WeightFormat format) {
  switch (format) {
    case WeightFormat::kQ8_0:
      return dispatch_mr<Q8>;
    case WeightFormat::kQ4_0:
      return dispatch_mr<Q40>;
    case WeightFormat::kQ4_1:
      return dispatch_mr<Q41>;
    default:
      return nullptr;
  }
}

}  // namespace am::kernels::detail

#endif  // defined(__x86_64__)
