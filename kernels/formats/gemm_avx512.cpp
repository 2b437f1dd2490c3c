// The blocked AVX-512 GEMM of the quantized matmul (prefill: many rows of X at once).
//
// Scheme (GotoBLAS-style, with a decode step in place of B packing):
//   - X is packed once per call into tiles of kMR rows, interleaved by 4-byte groups
//     ([step][row][4 bytes]) so the microkernel broadcasts one row's group straight from memory
//     (an embedded {1to16} broadcast operand). Per block of the weight format the tile also
//     carries the rows' scales and integer corrections.
//   - The output columns are split into tasks handed to the thread pool. A task walks K in
//     chunks; per chunk it decodes its weight rows into a packed panel: strips of kNR columns,
//     4-byte groups of one k-step side by side ([step][column][4 bytes]), followed per block by
//     the block's scale vector(s). The panel (a few hundred KB) stays in L2 while every tile of
//     X streams past it.
//   - The microkernel keeps a kMR x kNR register tile: int32 block accumulators (vpdpbusd) and
//     f32 running sums (one FMA per block applies d_w * d_x), or f32 accumulators only for the
//     bf16 (vdpbf16ps) and f16 (FMA on decoded f32) formats.
// Weight encodings in the int8 panel (u8, since vpdpbusd multiplies u8 by s8):
//   q8_0: q + 128 (correction -128 * sum x);  q4_0: the nibble (correction -8 * sum x);
//   q4_1: the nibble, plus m * d_x * sum x per block;  q3_k: 128 - (sc - 32) (L - 4), i.e. the
//   negated weight offset by 128, with the scale negated;  q2_k: sc * q (<= 45), plus the mins
//   term sum_s m_s * bsum_s through vpdpwssd, scaled by -dmin.
// Every integer sum is exact, so results equal the scalar reference up to f32 summation order,
// and they do not depend on the thread count (a column's work never depends on the split).
#include "kernels/formats/simd_avx512.h"

#if defined(__x86_64__)

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

#include "kernels/formats/bf16.h"
#include "kernels/formats/fp16.h"
#include "kernels/formats/strips_layout.h"
#include "kernels/formats/blocks.h"
#include "kernels/formats/dot_kernels.h"

namespace am::kernels::detail {
namespace {

constexpr int kMR = 6;                     // rows of X per register tile
constexpr int kNR8 = 32;                   // int8 family: columns per strip (2 x 16 lanes)
constexpr int kNRF = 64;                   // float families: columns per strip (4 x 16 lanes)
constexpr int64_t kChunkK = 2048;          // K per chunk: a multiple of 256 and of 64
constexpr int64_t kTaskColumnsMax = 128;   // output columns per task
constexpr int64_t kTasksPerThread = 2;     // so dynamic hand-out can balance
constexpr std::size_t kAlign = 64;
constexpr int kMinPairs = 8;               // q2_k: 16 mins as 8 int16 pairs

// A growable, cache-line aligned scratch buffer that lives as long as its thread.
class Scratch {
 public:
  uint8_t* get(std::size_t bytes) {
    if (bytes > cap_) {
      const std::size_t rounded = (bytes + kAlign - 1) / kAlign * kAlign;
      void* p = std::aligned_alloc(kAlign, rounded);
      if (p == nullptr) throw std::bad_alloc();
      buf_.reset(static_cast<uint8_t*>(p));
      cap_ = rounded;
    }
    return buf_.get();
  }

 private:
  struct Free {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  std::unique_ptr<uint8_t, Free> buf_;
  std::size_t cap_ = 0;
};

thread_local Scratch t_activations;  // the calling thread's packed X
thread_local Scratch t_panel;        // a task's packed weight panel
thread_local Scratch t_rows;         // a task's decoded weight rows

AM_TARGET_AVX512 void transpose16(__m512i r[16]) {
  __m512i a[16], b[16], c[16];
  for (int i = 0; i < 8; ++i) {
    a[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
    a[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; ++i) {
    b[4 * i + 0] = _mm512_unpacklo_epi64(a[4 * i + 0], a[4 * i + 2]);
    b[4 * i + 1] = _mm512_unpackhi_epi64(a[4 * i + 0], a[4 * i + 2]);
    b[4 * i + 2] = _mm512_unpacklo_epi64(a[4 * i + 1], a[4 * i + 3]);
    b[4 * i + 3] = _mm512_unpackhi_epi64(a[4 * i + 1], a[4 * i + 3]);
  }
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 4; ++j) {
      c[8 * i + j] = _mm512_shuffle_i32x4(b[8 * i + j], b[8 * i + 4 + j], 0x88);
      c[8 * i + 4 + j] = _mm512_shuffle_i32x4(b[8 * i + j], b[8 * i + 4 + j], 0xDD);
    }
  }
  for (int j = 0; j < 8; ++j) {
    r[j] = _mm512_shuffle_i32x4(c[j], c[8 + j], 0x88);
    r[8 + j] = _mm512_shuffle_i32x4(c[j], c[8 + j], 0xDD);
  }
}

// Transposes `rows` (a multiple of 16) rows of `units` dwords (a multiple of 16; row stride
// `stride` dwords) into dst(unit) + column, one 64-byte group of 16 columns at a time. dst maps a
// unit (k-step) to the start of that step's row of columns in the panel.
template <typename Dst>
AM_TARGET_AVX512 void transpose_into_panel(const uint32_t* src, int64_t stride, int rows,
                                           int64_t units, Dst dst) {
  for (int g = 0; g < rows; g += 16) {
    for (int64_t u = 0; u < units; u += 16) {
      __m512i r[16];
      for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_si512(src + (g + i) * stride + u);
      transpose16(r);
      for (int j = 0; j < 16; ++j) _mm512_store_si512(dst(u + j) + g * 4, r[j]);
    }
  }
}

__mmask16 lane_mask(int64_t valid) {
  if (valid >= 16) return 0xFFFF;
  if (valid <= 0) return 0;
  return static_cast<__mmask16>((1u << valid) - 1);
}

// Writes (or adds) the register tile to C: `rows` valid rows, column masks per vector.
template <int NV>
AM_TARGET_AVX512 inline void store_tile(__m512 (&f)[kMR][NV], float* c, int64_t ldc, int rows,
                                        const __mmask16 (&mask)[NV], bool accumulate) {
  #pragma GCC unroll 6
  for (int m = 0; m < kMR; ++m) {
    if (m >= rows) break;
    #pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      float* p = c + m * ldc + 16 * v;
      __m512 val = f[m][v];
      if (accumulate) val = _mm512_add_ps(_mm512_maskz_loadu_ps(mask[v], p), val);
      _mm512_mask_storeu_ps(p, mask[v], val);
    }
  }
}

// =============================================================================================
// Int8 family: q8_0, q4_0, q4_1, q3_k, q2_k.

struct Int8Layout {
  int64_t block;        // weights per scale block: 32 or 256
  bool min_f;           // q4_1: per-block float min
  bool min_i;           // q2_k: per-sub-block integer mins
  int32_t corr_coeff;   // c of the per-block correction c * sum(x)

  int64_t steps() const { return block / 4; }
  // Bytes of one block in a packed tile of X.
  int64_t a_block_bytes() const {
    return steps() * kMR * 4 + 2 * kMR * 4 + (min_f ? kMR * 4 : 0) + (min_i ? kMinPairs * kMR * 4 : 0);
  }
  // Bytes of one block in a weight strip.
  int64_t w_block_bytes() const {
    return block * kNR8 + kNR8 * 4 + (min_f ? kNR8 * 4 : 0) +
           (min_i ? kMinPairs * kNR8 * 4 + kNR8 * 4 : 0);
  }
};

bool int8_layout(WeightFormat f, Int8Layout* l) {
  switch (f) {
    case WeightFormat::kQ8_0:
      *l = {32, false, false, -128};
      return true;
    case WeightFormat::kQ4_0:
      *l = {32, false, false, -8};
      return true;
    case WeightFormat::kQ4_1:
      *l = {32, true, false, 0};
      return true;
    case WeightFormat::kQ3_K:
      *l = {256, false, false, -128};
      return true;
    case WeightFormat::kQ2_K:
      *l = {256, false, true, 0};
      return true;
    default:
      return false;
  }
}

// Packs X into tiles: per tile, per block: [steps][kMR][4 bytes] quants, kMR scales, kMR
// corrections, then the q4_1 / q2_k extras. Rows past M are zero.
void pack_int8_activations(const PreparedActivations& a, const Int8Layout& l, uint8_t* dst,
                           const ExecContext& ctx) {
  const int64_t m_rows = a.rows();
  const int64_t tiles = (m_rows + kMR - 1) / kMR;
  const int64_t blocks = a.blocks_per_row();
  const int64_t abb = l.a_block_bytes();
  const int64_t steps = l.steps();
  parallel_for(ctx, tiles, 1, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      ActRow rows[kMR];
      bool valid[kMR];
      for (int m = 0; m < kMR; ++m) {
        valid[m] = t * kMR + m < m_rows;
        if (valid[m]) rows[m] = a.row(t * kMR + m);
      }
      uint8_t* out = dst + t * blocks * abb;
      for (int64_t b = 0; b < blocks; ++b, out += abb) {
        uint32_t* x = reinterpret_cast<uint32_t*>(out);
        for (int m = 0; m < kMR; ++m) {
          if (!valid[m]) {
            for (int64_t s = 0; s < steps; ++s) x[s * kMR + m] = 0;
            continue;
          }
          const uint8_t* q = reinterpret_cast<const uint8_t*>(rows[m].q + b * l.block);
          for (int64_t s = 0; s < steps; ++s) std::memcpy(&x[s * kMR + m], q + 4 * s, 4);
        }
        float* dx = reinterpret_cast<float*>(out + steps * kMR * 4);
        int32_t* corr = reinterpret_cast<int32_t*>(dx + kMR);
        float* extra = reinterpret_cast<float*>(corr + kMR);
        for (int m = 0; m < kMR; ++m) {
          dx[m] = valid[m] ? rows[m].d[b] : 0.0f;
          corr[m] = valid[m] ? l.corr_coeff * rows[m].sum[b] : 0;
          if (l.min_f) extra[m] = valid[m] ? rows[m].d[b] * static_cast<float>(rows[m].sum[b]) : 0.0f;
        }
        if (l.min_i) {
          int16_t* pairs = reinterpret_cast<int16_t*>(extra);
          for (int p = 0; p < kMinPairs; ++p) {
            for (int m = 0; m < kMR; ++m) {
              const int16_t* bs = valid[m] ? rows[m].bsum + b * kSubBlocks : nullptr;
              pairs[2 * (p * kMR + m)] = bs ? bs[2 * p] : 0;
              pairs[2 * (p * kMR + m) + 1] = bs ? bs[2 * p + 1] : 0;
            }
          }
        }
      }
    }
  });
}

AM_TARGET_AVX512 void decode_q8_0(const uint8_t* row, int64_t b0, int64_t nb, uint8_t* data,
                                  float* scale, float*, int16_t*) {
  const BlockQ8_0* blk = reinterpret_cast<const BlockQ8_0*>(row) + b0;
  const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
  for (int64_t b = 0; b < nb; ++b) {
    const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk[b].qs));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(data + 32 * b), _mm256_xor_si256(q, flip));
    scale[b] = half_to_float(blk[b].d);
  }
}

AM_TARGET_AVX512 inline void nibbles32(const uint8_t* qs, uint8_t* out) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m256i both = _mm256_inserti128_si256(_mm256_castsi128_si256(v), _mm_srli_epi16(v, 4), 1);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), _mm256_and_si256(both, _mm256_set1_epi8(0x0F)));
}

AM_TARGET_AVX512 void decode_q4_0(const uint8_t* row, int64_t b0, int64_t nb, uint8_t* data,
                                  float* scale, float*, int16_t*) {
  const BlockQ4_0* blk = reinterpret_cast<const BlockQ4_0*>(row) + b0;
  for (int64_t b = 0; b < nb; ++b) {
    nibbles32(blk[b].qs, data + 32 * b);
    scale[b] = half_to_float(blk[b].d);
  }
}

AM_TARGET_AVX512 void decode_q4_1(const uint8_t* row, int64_t b0, int64_t nb, uint8_t* data,
                                  float* scale, float* min, int16_t*) {
  const BlockQ4_1* blk = reinterpret_cast<const BlockQ4_1*>(row) + b0;
  for (int64_t b = 0; b < nb; ++b) {
    nibbles32(blk[b].qs, data + 32 * b);
    scale[b] = half_to_float(blk[b].d);
    min[b] = half_to_float(blk[b].m);
  }
}

// Multiplies 32 u8 quants (two sub-blocks of 16) by their sub-block factors and stores
// (offset + sign * product) as bytes: products fit 8 bits by construction of each format.
AM_TARGET_AVX512 inline void scale_pairs(__m256i quants, int16_t f0, int16_t f1, int16_t bias,
                                         int16_t offset, int16_t sign, uint8_t* out) {
  const __m512i q16 = _mm512_sub_epi16(_mm512_cvtepu8_epi16(quants), _mm512_set1_epi16(bias));
  const __m512i f = _mm512_inserti64x4(_mm512_set1_epi16(f0), _mm256_set1_epi16(f1), 1);
  const __m512i v = _mm512_add_epi16(_mm512_set1_epi16(offset),
                                     _mm512_mullo_epi16(_mm512_mullo_epi16(q16, f), _mm512_set1_epi16(sign)));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), _mm512_cvtepi16_epi8(v));
}

AM_TARGET_AVX512 void decode_q2_k(const uint8_t* row, int64_t b0, int64_t nb, uint8_t* data,
                                  float* scale, float* min, int16_t* mins) {
  const BlockQ2_K* blk = reinterpret_cast<const BlockQ2_K*>(row) + b0;
  for (int64_t b = 0; b < nb; ++b) {
    const BlockQ2_K& k = blk[b];
    uint8_t* out = data + kSuperBlockSize * b;
    for (int h = 0; h < 2; ++h) {
      const __m256i qs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(k.qs + 32 * h));
      for (int j = 0; j < 4; ++j) {
        const __m256i q = _mm256_and_si256(_mm256_srli_epi16(qs, 2 * j), _mm256_set1_epi8(3));
        const int s = 8 * h + 2 * j;  // elements 128h + 32j.. are sub-blocks s and s + 1
        scale_pairs(q, k.scales[s] & 0xF, k.scales[s + 1] & 0xF, 0, 0, 1, out + 128 * h + 32 * j);
      }
    }
    for (int s = 0; s < kSubBlocks; ++s) mins[kSubBlocks * b + s] = k.scales[s] >> 4;
    scale[b] = half_to_float(k.d);
    min[b] = -half_to_float(k.dmin);
  }
}

AM_TARGET_AVX512 void decode_q3_k(const uint8_t* row, int64_t b0, int64_t nb, uint8_t* data,
                                  float* scale, float*, int16_t*) {
  const BlockQ3_K* blk = reinterpret_cast<const BlockQ3_K*>(row) + b0;
  for (int64_t b = 0; b < nb; ++b) {
    const BlockQ3_K& k = blk[b];
    uint8_t* out = data + kSuperBlockSize * b;
    int16_t sc[kSubBlocks];
    for (int s = 0; s < kSubBlocks; ++s) sc[s] = static_cast<int16_t>(q3_k_scale(k, s) - 32);
    const __m256i hm = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(k.hmask));
    for (int h = 0; h < 2; ++h) {
      const __m256i qs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(k.qs + 32 * h));
      for (int j = 0; j < 4; ++j) {
        const __m256i low = _mm256_and_si256(_mm256_srli_epi16(qs, 2 * j), _mm256_set1_epi8(3));
        const __m256i bit = _mm256_set1_epi8(static_cast<char>(1 << (4 * h + j)));
        const __mmask32 high = _mm256_test_epi8_mask(hm, bit);
        const __m256i quant = _mm256_mask_add_epi8(low, high, low, _mm256_set1_epi8(4));
        const int s = 8 * h + 2 * j;
        // u = 128 - sc (L - 4): the negated weight, offset into 0..252.
        scale_pairs(quant, sc[s], sc[s + 1], 4, 128, -1, out + 128 * h + 32 * j);
      }
    }
    scale[b] = -half_to_float(k.d);
  }
}

using Int8Decoder = void (*)(const uint8_t* row, int64_t b0, int64_t nb, uint8_t* data, float* scale,
                             float* min, int16_t* mins);

Int8Decoder int8_decoder(WeightFormat f) {
  switch (f) {
    case WeightFormat::kQ8_0:
      return decode_q8_0;
    case WeightFormat::kQ4_0:
      return decode_q4_0;
    case WeightFormat::kQ4_1:
      return decode_q4_1;
    case WeightFormat::kQ2_K:
      return decode_q2_k;
    case WeightFormat::kQ3_K:
      return decode_q3_k;
    default:
      return nullptr;
  }
}

// Builds one strip of the panel: weight rows n0.. (valid of them real, the rest zero) for the
// blocks [b0, b0 + nb).
AM_TARGET_AVX512 void build_int8_strip(const Int8Layout& l, Int8Decoder decode, const uint8_t* w,
                                       std::size_t row_bytes, int64_t n0, int valid, int64_t b0,
                                       int64_t nb, uint8_t* strip, uint8_t* work) {
  const int64_t steps = l.steps();
  // Rows padded to whole 16-dword groups for the transpose.
  const int64_t units = (nb * steps + 15) / 16 * 16;
  const int64_t stride = units * 4;
  uint8_t* data = work;
  float* scale = reinterpret_cast<float*>(data + kNR8 * stride);
  float* min = scale + kNR8 * nb;
  int16_t* mins = reinterpret_cast<int16_t*>(min + kNR8 * nb);
  for (int r = 0; r < kNR8; ++r) {
    uint8_t* row_data = data + r * stride;
    if (r < valid) {
      decode(w + (n0 + r) * row_bytes, b0, nb, row_data, scale + r * nb, min + r * nb,
             mins + r * nb * kSubBlocks);
      std::memset(row_data + nb * l.block, 0, static_cast<std::size_t>(stride - nb * l.block));
    } else {
      std::memset(row_data, 0, static_cast<std::size_t>(stride));
      for (int64_t b = 0; b < nb; ++b) {
        scale[r * nb + b] = 0.0f;
        min[r * nb + b] = 0.0f;
      }
      std::memset(mins + r * nb * kSubBlocks, 0, static_cast<std::size_t>(nb * kSubBlocks) * sizeof(int16_t));
    }
  }
  const int64_t wbb = l.w_block_bytes();
  const int64_t real_steps = nb * steps;
  alignas(64) uint8_t sink[kNR8 * 4];  // the padding steps of the transpose land here
  transpose_into_panel(reinterpret_cast<const uint32_t*>(data), units, kNR8, units, [&](int64_t u) {
    return u < real_steps ? strip + (u / steps) * wbb + (u % steps) * kNR8 * 4 : sink;
  });
  for (int64_t b = 0; b < nb; ++b) {
    uint8_t* tail = strip + b * wbb + l.block * kNR8;
    float* s = reinterpret_cast<float*>(tail);
    for (int c = 0; c < kNR8; ++c) s[c] = scale[c * nb + b];
    tail += kNR8 * 4;
    if (l.min_f) {
      float* m = reinterpret_cast<float*>(tail);
      for (int c = 0; c < kNR8; ++c) m[c] = min[c * nb + b];
      tail += kNR8 * 4;
    }
    if (l.min_i) {
      int16_t* p = reinterpret_cast<int16_t*>(tail);
      for (int pr = 0; pr < kMinPairs; ++pr) {
        for (int c = 0; c < kNR8; ++c) {
          p[2 * (pr * kNR8 + c)] = mins[(c * nb + b) * kSubBlocks + 2 * pr];
          p[2 * (pr * kNR8 + c) + 1] = mins[(c * nb + b) * kSubBlocks + 2 * pr + 1];
        }
      }
      tail += kMinPairs * kNR8 * 4;
      float* ms = reinterpret_cast<float*>(tail);
      for (int c = 0; c < kNR8; ++c) ms[c] = min[c * nb + b];
    }
  }
}

// The microkernel: a kMR x kNR8 tile over nb blocks. `pa` walks the packed X tile, `pw` the
// weight strip; both advance block by block.
template <int kSteps, bool kMinF, bool kMinI>
AM_TARGET_AVX512 void int8_microkernel(const uint8_t* pa, const uint8_t* pw, int64_t nb, float* c,
                                       int64_t ldc, int rows, const __mmask16 (&mask)[2],
                                       bool accumulate) {
  __m512 f[kMR][2];
  #pragma GCC unroll 6
  for (int m = 0; m < kMR; ++m) f[m][0] = f[m][1] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const int32_t* corr = reinterpret_cast<const int32_t*>(pa + kSteps * kMR * 4 + kMR * 4);
    __m512i acc[kMR][2];
    #pragma GCC unroll 6
    for (int m = 0; m < kMR; ++m) acc[m][0] = acc[m][1] = _mm512_set1_epi32(corr[m]);
    #pragma GCC unroll 8
    for (int s = 0; s < kSteps; ++s) {
      const __m512i w0 = _mm512_load_si512(pw);
      const __m512i w1 = _mm512_load_si512(pw + 64);
      const int32_t* x = reinterpret_cast<const int32_t*>(pa);
      #pragma GCC unroll 6
      for (int m = 0; m < kMR; ++m) {
        const __m512i xb = _mm512_set1_epi32(x[m]);
        acc[m][0] = _mm512_dpbusd_epi32(acc[m][0], w0, xb);
        acc[m][1] = _mm512_dpbusd_epi32(acc[m][1], w1, xb);
      }
      pa += kMR * 4;
      pw += kNR8 * 4;
    }
    const float* dx = reinterpret_cast<const float*>(pa);
    pa += 2 * kMR * 4;  // scales and corrections
    const __m512 s0 = _mm512_load_ps(reinterpret_cast<const float*>(pw));
    const __m512 s1 = _mm512_load_ps(reinterpret_cast<const float*>(pw + 64));
    pw += kNR8 * 4;
    #pragma GCC unroll 6
    for (int m = 0; m < kMR; ++m) {
      const __m512 d = _mm512_set1_ps(dx[m]);
      f[m][0] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc[m][0]), _mm512_mul_ps(s0, d), f[m][0]);
      f[m][1] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc[m][1]), _mm512_mul_ps(s1, d), f[m][1]);
    }
    if constexpr (kMinF) {
      const float* dxsx = reinterpret_cast<const float*>(pa);
      pa += kMR * 4;
      const __m512 m0 = _mm512_load_ps(reinterpret_cast<const float*>(pw));
      const __m512 m1 = _mm512_load_ps(reinterpret_cast<const float*>(pw + 64));
      pw += kNR8 * 4;
      #pragma GCC unroll 6
      for (int m = 0; m < kMR; ++m) {
        const __m512 t = _mm512_set1_ps(dxsx[m]);
        f[m][0] = _mm512_fmadd_ps(m0, t, f[m][0]);
        f[m][1] = _mm512_fmadd_ps(m1, t, f[m][1]);
      }
    }
    if constexpr (kMinI) {
      #pragma GCC unroll 6
      for (int m = 0; m < kMR; ++m) acc[m][0] = acc[m][1] = _mm512_setzero_si512();
      #pragma GCC unroll 8
      for (int p = 0; p < kMinPairs; ++p) {
        const __m512i w0 = _mm512_load_si512(pw);
        const __m512i w1 = _mm512_load_si512(pw + 64);
        const int32_t* x = reinterpret_cast<const int32_t*>(pa);
        #pragma GCC unroll 6
        for (int m = 0; m < kMR; ++m) {
          const __m512i xb = _mm512_set1_epi32(x[m]);
          acc[m][0] = _mm512_dpwssd_epi32(acc[m][0], w0, xb);
          acc[m][1] = _mm512_dpwssd_epi32(acc[m][1], w1, xb);
        }
        pa += kMR * 4;
        pw += kNR8 * 4;
      }
      const __m512 ms0 = _mm512_load_ps(reinterpret_cast<const float*>(pw));
      const __m512 ms1 = _mm512_load_ps(reinterpret_cast<const float*>(pw + 64));
      pw += kNR8 * 4;
      #pragma GCC unroll 6
      for (int m = 0; m < kMR; ++m) {
        const __m512 d = _mm512_set1_ps(dx[m]);
        f[m][0] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc[m][0]), _mm512_mul_ps(ms0, d), f[m][0]);
        f[m][1] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc[m][1]), _mm512_mul_ps(ms1, d), f[m][1]);
      }
    }
  }
  store_tile<2>(f, c, ldc, rows, mask, accumulate);
}

using Int8Kernel = void (*)(const uint8_t*, const uint8_t*, int64_t, float*, int64_t, int,
                            const __mmask16 (&)[2], bool);

Int8Kernel int8_kernel(const Int8Layout& l) {
  if (l.block == 32) return l.min_f ? int8_microkernel<8, true, false> : int8_microkernel<8, false, false>;
  return l.min_i ? int8_microkernel<64, false, true> : int8_microkernel<64, false, false>;
}

// =============================================================================================
// Float families: bf16 with VDPBF16PS, and f32 FMA on decoded f16 (or bf16 without the BF16
// extension). X tiles are [unit][kMR] dwords (a bf16 pair or an f32), weight strips
// [unit][kNRF] dwords.

enum class FloatKind { kBf16Dot, kF32Fma };

// Packs X into [tile][unit][kMR] dwords over all units (k / 2 bf16 pairs or k floats).
void pack_float_activations(const PreparedActivations& a, FloatKind kind, int64_t units,
                            uint32_t* dst, const ExecContext& ctx) {
  const int64_t m_rows = a.rows();
  const int64_t tiles = (m_rows + kMR - 1) / kMR;
  const int64_t k = a.k();
  parallel_for(ctx, tiles, 1, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      uint32_t* out = dst + t * units * kMR;
      for (int m = 0; m < kMR; ++m) {
        const int64_t row = t * kMR + m;
        if (row >= m_rows) {
          for (int64_t u = 0; u < units; ++u) out[u * kMR + m] = 0;
          continue;
        }
        const ActRow r = a.row(row);
        for (int64_t u = 0; u < units; ++u) {
          uint32_t v = 0;
          if (kind == FloatKind::kBf16Dot) {
            const uint32_t lo = 2 * u < k ? r.bf16[2 * u] : 0;
            const uint32_t hi = 2 * u + 1 < k ? r.bf16[2 * u + 1] : 0;
            v = lo | (hi << 16);
          } else if (u < k) {
            const float f = r.f32 != nullptr ? r.f32[u] : bf16_to_fp32(r.bf16[u]);
            std::memcpy(&v, &f, 4);
          }
          out[u * kMR + m] = v;
        }
      }
    }
  });
}

// Builds one float strip for units [u0, u0 + nu): rows n0.. of the weight (valid real, the rest
// zero), decoded to dwords (bf16 pairs kept, f16/bf16 widened to f32 for the FMA kernel).
AM_TARGET_AVX512 void build_float_strip(FloatKind kind, WeightFormat format, const uint8_t* w,
                                        std::size_t row_bytes, int64_t k, int64_t n0, int valid,
                                        int64_t u0, int64_t nu, uint8_t* strip, uint8_t* work) {
  const int64_t units = (nu + 15) / 16 * 16;
  uint32_t* rows = reinterpret_cast<uint32_t*>(work);
  for (int r = 0; r < kNRF; ++r) {
    uint32_t* dst = rows + r * units;
    std::memset(dst, 0, static_cast<std::size_t>(units) * 4);
    if (r >= valid) continue;
    const uint16_t* src = reinterpret_cast<const uint16_t*>(w + (n0 + r) * row_bytes);
    if (kind == FloatKind::kBf16Dot) {
      // Pairs of bf16 are already the dwords the kernel wants; a final odd element pairs with 0.
      const int64_t first = 2 * u0;
      const int64_t count = std::min<int64_t>(2 * nu, k - first);
      std::memcpy(dst, src + first, static_cast<std::size_t>(count) * 2);
    } else {
      float* out = reinterpret_cast<float*>(dst);
      const int64_t count = std::min<int64_t>(nu, k - u0);
      int64_t i = 0;
      if (format == WeightFormat::kF16) {
        for (; i + 16 <= count; i += 16) {
          _mm512_storeu_ps(out + i, _mm512_cvtph_ps(_mm256_loadu_si256(
                                        reinterpret_cast<const __m256i*>(src + u0 + i))));
        }
        for (; i < count; ++i) out[i] = half_to_float(src[u0 + i]);
      } else {
        for (; i < count; ++i) out[i] = bf16_to_fp32(src[u0 + i]);
      }
    }
  }
  transpose_into_panel(rows, units, kNRF, units, [&](int64_t u) {
    return strip + (u < nu ? u : nu) * kNRF * 4;  // padding units land past the real ones
  });
}

// Stores (or adds, after the first K chunk) an MR x 64 tile of f32 outputs, lanes past the
// matrix's columns masked off.
template <int MR>
AM_TARGET_AVX512 inline void store_strip_tile(__m512 (&f)[MR][4], float* c, int64_t ldc, const __mmask16 (&mask)[4],
                                              bool accumulate) {
  #pragma GCC unroll 6
  for (int m = 0; m < MR; ++m) {
    #pragma GCC unroll 4
    for (int v = 0; v < 4; ++v) {
      float* p = c + m * ldc + 16 * v;
      __m512 val = f[m][v];
      if (accumulate) val = _mm512_add_ps(_mm512_maskz_loadu_ps(mask[v], p), val);
      _mm512_mask_storeu_ps(p, mask[v], val);
    }
  }
}

// The BF16 microkernel for MR rows of X (1..kMR) of a packed tile, over a panel of bf16 pairs
// (built from GGUF rows, or a kStrips64 strip read in place): a decode's single row does one
// sixth of the full tile's dot products, and each output's arithmetic is the same for any MR.
// XB: bytes from one unit of X to the next: a packed tile's kMR dwords, or 4 for a single row
// read where it lies (a decode's row: its bf16 pairs or f32 values are already the units).
template <int MR, int XB = kMR * 4>
AM_TARGET_AVX512_BF16 void bf16_microkernel(const uint8_t* pa, const uint8_t* pw, int64_t nu, float* c,
                                             int64_t ldc, const __mmask16 (&mask)[4], bool accumulate) {
  __m512 f[MR][4];
  #pragma GCC unroll 6
  for (int m = 0; m < MR; ++m) f[m][0] = f[m][1] = f[m][2] = f[m][3] = _mm512_setzero_ps();
  #pragma GCC unroll 2
  for (int64_t u = 0; u < nu; ++u) {
    const float* x = reinterpret_cast<const float*>(pa);
    __m512bh w[4];
    #pragma GCC unroll 4
    for (int v = 0; v < 4; ++v) w[v] = (__m512bh)_mm512_load_si512(pw + 64 * v);
    #pragma GCC unroll 6
    for (int m = 0; m < MR; ++m) {
      const __m512bh xb = (__m512bh)_mm512_set1_ps(x[m]);
      #pragma GCC unroll 4
      for (int v = 0; v < 4; ++v) f[m][v] = _mm512_dpbf16_ps(f[m][v], w[v], xb);
    }
    pa += XB;
    pw += kNRF * 4;
  }
  store_strip_tile<MR>(f, c, ldc, mask, accumulate);
}

using StripKernel = void (*)(const uint8_t*, const uint8_t*, int64_t, float*, int64_t, const __mmask16 (&)[4], bool);

// The instance of a strips microkernel for `rows` rows of X (1..kMR) of a packed tile, or, with
// rows == 0, for one row of X read in place (XB = 4). K names the kernel: K::at<MR, XB>.
template <class K>
StripKernel strip_kernel(int rows) {
  switch (rows) {
    case 0: return K::template at<1, 4>;
    case 1: return K::template at<1>;
    case 2: return K::template at<2>;
    case 3: return K::template at<3>;
    case 4: return K::template at<4>;
    case 5: return K::template at<5>;
    default: return K::template at<6>;
  }
}

struct Bf16Kernels {
  template <int MR, int XB = kMR * 4>
  static constexpr StripKernel at = bf16_microkernel<MR, XB>;
};

// FMA-only instance compiled without the BF16 extension, for CPUs that lack it.
AM_TARGET_AVX512 void fma_microkernel(const uint8_t* pa, const uint8_t* pw, int64_t nu, float* c,
                                      int64_t ldc, int rows, const __mmask16 (&mask)[4],
                                      bool accumulate) {
  __m512 f[kMR][4];
  #pragma GCC unroll 6
  for (int m = 0; m < kMR; ++m) f[m][0] = f[m][1] = f[m][2] = f[m][3] = _mm512_setzero_ps();
  #pragma GCC unroll 2
  for (int64_t u = 0; u < nu; ++u) {
    const float* x = reinterpret_cast<const float*>(pa);
    __m512 w[4];
    #pragma GCC unroll 4
    for (int v = 0; v < 4; ++v) w[v] = _mm512_load_ps(reinterpret_cast<const float*>(pw + 64 * v));
    #pragma GCC unroll 6
    for (int m = 0; m < kMR; ++m) {
      const __m512 xb = _mm512_set1_ps(x[m]);
      #pragma GCC unroll 4
      for (int v = 0; v < 4; ++v) f[m][v] = _mm512_fmadd_ps(w[v], xb, f[m][v]);
    }
    pa += kMR * 4;
    pw += kNRF * 4;
  }
  store_tile<4>(f, c, ldc, rows, mask, accumulate);
}

// The f16 microkernel for MR rows of X (1..kMR) over a kStrips64 strip of f16 read in place:
// per k, 64 columns' halves widened by vcvtph2ps (exact), then the FMA kernel's arithmetic, so an
// output's bits are fma_microkernel's on the same panel widened beforehand.
template <int MR, int XB = kMR * 4>
AM_TARGET_AVX512 void f16_microkernel(const uint8_t* pa, const uint8_t* pw, int64_t nu, float* c, int64_t ldc,
                                      const __mmask16 (&mask)[4], bool accumulate) {
  __m512 f[MR][4];
  #pragma GCC unroll 6
  for (int m = 0; m < MR; ++m) f[m][0] = f[m][1] = f[m][2] = f[m][3] = _mm512_setzero_ps();
  #pragma GCC unroll 2
  for (int64_t u = 0; u < nu; ++u) {
    const float* x = reinterpret_cast<const float*>(pa);
    __m512 w[4];
    #pragma GCC unroll 4
    for (int v = 0; v < 4; ++v) {
      w[v] = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(pw + 32 * v)));
    }
    #pragma GCC unroll 6
    for (int m = 0; m < MR; ++m) {
      const __m512 xb = _mm512_set1_ps(x[m]);
      #pragma GCC unroll 4
      for (int v = 0; v < 4; ++v) f[m][v] = _mm512_fmadd_ps(w[v], xb, f[m][v]);
    }
    pa += XB;
    pw += kNRF * 2;
  }
  store_strip_tile<MR>(f, c, ldc, mask, accumulate);
}

struct F16Kernels {
  template <int MR, int XB = kMR * 4>
  static constexpr StripKernel at = f16_microkernel<MR, XB>;
};

// =============================================================================================
// Driver.

// Runs fn(u0, task0, task1) for every K chunk [u0, u0 + chunk_units) of every task. Every task
// reads the whole packed X (x_bytes). Up to kChunksOuterMinXBytes the tasks go to the pool once
// and each walks its chunks; above it the chunks go outermost, each chunk's tasks on the pool:
// at K = 14336 X (f32 14336 x 512 x 4 = 28 MiB) no longer stays in L3 between one task and the
// next, while one chunk of it (4 MiB) does. Each output's sum runs chunk by chunk either way, so
// the bits do not change. Below the threshold the barrier per chunk cost 0-4 points (bf16,
// K = 4096). bench_kernels --kinds gemm --threads 2, alternated rounds (AMD EPYC, 2026-12-07):
// f16 K = 14336 68-70% -> 75-78% of the FMA peak; bf16 K = 14336 (14 MiB) 84-89% -> 87-90%.
constexpr std::size_t kChunksOuterMinXBytes = std::size_t{12} << 20;

template <class Fn>
void for_chunks_of_tasks(int64_t units, int64_t chunk_units, int64_t tasks, std::size_t x_bytes,
                         const ExecContext& ctx, Fn&& fn) {
  if (x_bytes < kChunksOuterMinXBytes) {
    parallel_for(ctx, tasks, 1, [&](int64_t task0, int64_t task1) {
      for (int64_t task = task0; task < task1; ++task) {
        for (int64_t u0 = 0; u0 < units; u0 += chunk_units) fn(u0, task, task + 1);
      }
    });
    return;
  }
  for (int64_t u0 = 0; u0 < units; u0 += chunk_units) {
    parallel_for(ctx, tasks, 1, [&](int64_t task0, int64_t task1) { fn(u0, task0, task1); });
  }
}

struct Plan {
  int64_t tiles;         // register tiles of X
  int64_t task_cols;     // output columns per task (a multiple of the strip width)
  int64_t tasks;
};

Plan plan_tasks(int64_t m, int64_t n, int nr, const ExecContext& ctx) {
  Plan p;
  p.tiles = (m + kMR - 1) / kMR;
  const int64_t threads = ctx.pool != nullptr ? ctx.pool->size() : 1;
  int64_t cols = (n + threads * kTasksPerThread - 1) / (threads * kTasksPerThread);
  cols = std::clamp<int64_t>((cols + nr - 1) / nr * nr, nr, kTaskColumnsMax);
  p.task_cols = cols;
  p.tasks = (n + cols - 1) / cols;
  return p;
}

bool gemm_int8(const PreparedActivations& a, WeightFormat format, const uint8_t* w,
               std::size_t row_bytes, int64_t n, float* y, int64_t ldy, const ExecContext& ctx) {
  Int8Layout l;
  if (!int8_layout(format, &l) || a.block() != l.block) return false;
  const Int8Decoder decode = int8_decoder(format);
  const Int8Kernel kernel = int8_kernel(l);
  const int64_t m = a.rows();
  const int64_t blocks = a.blocks_per_row();
  const int64_t abb = l.a_block_bytes();
  const Plan plan = plan_tasks(m, n, kNR8, ctx);
  uint8_t* packed_x = t_activations.get(static_cast<std::size_t>(plan.tiles * blocks * abb));
  pack_int8_activations(a, l, packed_x, ctx);

  const int64_t chunk_blocks = kChunkK / l.block;
  const int64_t wbb = l.w_block_bytes();
  const int64_t strips_per_task = plan.task_cols / kNR8;
  parallel_for(ctx, plan.tasks, 1, [&](int64_t task0, int64_t task1) {
    uint8_t* panel = t_panel.get(static_cast<std::size_t>(strips_per_task * chunk_blocks * wbb));
    const int64_t units = (chunk_blocks * l.steps() + 15) / 16 * 16;
    uint8_t* work = t_rows.get(static_cast<std::size_t>(
        kNR8 * units * 4 + kNR8 * chunk_blocks * (2 * sizeof(float) + kSubBlocks * sizeof(int16_t))));
    for (int64_t task = task0; task < task1; ++task) {
      const int64_t c0 = task * plan.task_cols;
      const int64_t c1 = std::min(n, c0 + plan.task_cols);
      const int64_t strips = (c1 - c0 + kNR8 - 1) / kNR8;
      for (int64_t b0 = 0; b0 < blocks; b0 += chunk_blocks) {
        const int64_t nb = std::min(chunk_blocks, blocks - b0);
        for (int64_t s = 0; s < strips; ++s) {
          const int64_t n0 = c0 + s * kNR8;
          build_int8_strip(l, decode, w, row_bytes, n0, static_cast<int>(std::min<int64_t>(kNR8, c1 - n0)),
                           b0, nb, panel + s * chunk_blocks * wbb, work);
        }
        for (int64_t t = 0; t < plan.tiles; ++t) {
          const uint8_t* pa = packed_x + (t * blocks + b0) * abb;
          const int rows = static_cast<int>(std::min<int64_t>(kMR, m - t * kMR));
          for (int64_t s = 0; s < strips; ++s) {
            const int64_t n0 = c0 + s * kNR8;
            const __mmask16 mask[2] = {lane_mask(c1 - n0), lane_mask(c1 - n0 - 16)};
            kernel(pa, panel + s * chunk_blocks * wbb, nb, y + t * kMR * ldy + n0, ldy, rows, mask,
                   b0 > 0);
          }
        }
      }
    }
  });
  return true;
}

bool gemm_float(const PreparedActivations& a, WeightFormat format, const uint8_t* w,
                std::size_t row_bytes, int64_t n, float* y, int64_t ldy, const ExecContext& ctx) {
  FloatKind kind;
  if (format == WeightFormat::kF16) {
    kind = FloatKind::kF32Fma;
  } else if (format == WeightFormat::kBF16) {
    kind = cpu_features().avx512bf16 ? FloatKind::kBf16Dot : FloatKind::kF32Fma;
  } else {
    return false;
  }
  const int64_t m = a.rows();
  const int64_t k = a.k();
  const int64_t per_unit = kind == FloatKind::kBf16Dot ? 2 : 1;  // k values per dword
  const int64_t units = (k + per_unit - 1) / per_unit;
  const int64_t chunk_units = kChunkK / per_unit;
  const Plan plan = plan_tasks(m, n, kNRF, ctx);
  const std::size_t x_bytes = static_cast<std::size_t>(plan.tiles * units * kMR * 4);
  uint32_t* packed_x = reinterpret_cast<uint32_t*>(t_activations.get(x_bytes));
  pack_float_activations(a, kind, units, packed_x, ctx);

  const int64_t strip_bytes = (chunk_units + 16) * kNRF * 4;  // +16: padding units of the transpose
  const int64_t strips_per_task = plan.task_cols / kNRF;
  for_chunks_of_tasks(units, chunk_units, plan.tasks, x_bytes, ctx, [&](int64_t u0, int64_t task0, int64_t task1) {
    const int64_t nu = std::min(chunk_units, units - u0);
    uint8_t* panel = t_panel.get(static_cast<std::size_t>(strips_per_task * strip_bytes));
    uint8_t* work = t_rows.get(static_cast<std::size_t>(kNRF * (chunk_units + 16) * 4));
    for (int64_t task = task0; task < task1; ++task) {
      const int64_t c0 = task * plan.task_cols;
      const int64_t c1 = std::min(n, c0 + plan.task_cols);
      const int64_t strips = (c1 - c0 + kNRF - 1) / kNRF;
      for (int64_t s = 0; s < strips; ++s) {
        const int64_t n0 = c0 + s * kNRF;
        build_float_strip(kind, format, w, row_bytes, k, n0, static_cast<int>(std::min<int64_t>(kNRF, c1 - n0)),
                          u0, nu, panel + s * strip_bytes, work);
      }
      for (int64_t t = 0; t < plan.tiles; ++t) {
        const uint8_t* pa = reinterpret_cast<const uint8_t*>(packed_x + (t * units + u0) * kMR);
        const int rows = static_cast<int>(std::min<int64_t>(kMR, m - t * kMR));
        for (int64_t s = 0; s < strips; ++s) {
          const int64_t n0 = c0 + s * kNRF;
          const __mmask16 mask[4] = {lane_mask(c1 - n0), lane_mask(c1 - n0 - 16), lane_mask(c1 - n0 - 32),
                                     lane_mask(c1 - n0 - 48)};
          float* c = y + t * kMR * ldy + n0;
          const uint8_t* pw = panel + s * strip_bytes;
          if (kind == FloatKind::kBf16Dot) {
            strip_kernel<Bf16Kernels>(rows)(pa, pw, nu, c, ldy, mask, u0 > 0);
          } else {
            fma_microkernel(pa, pw, nu, c, ldy, rows, mask, u0 > 0);
          }
        }
      }
    }
  });
  return true;
}

}  // namespace

bool gemm_strips64(const PreparedActivations& a, WeightFormat format, const uint8_t* w, std::size_t row_bytes,
                   int64_t n, float* y, int64_t ldy, const ExecContext& ctx) {
  const bool bf16 = format == WeightFormat::kBF16;
  if ((bf16 && !cpu_features().avx512bf16) || (!bf16 && format != WeightFormat::kF16)) return false;
  const int64_t m = a.rows();
  const int64_t k = a.k();
  if ((bf16 && k % 2 != 0) || row_bytes != static_cast<std::size_t>(k) * 2 || n % kStripRows != 0) return false;
  if (m == 0 || n == 0) return true;
  const FloatKind kind = bf16 ? FloatKind::kBf16Dot : FloatKind::kF32Fma;
  const int64_t per_unit = bf16 ? 2 : 1;   // k values per unit of a strip
  const std::size_t unit_bytes = strip_unit_bytes(format);
  const int64_t units = k / per_unit;
  const int64_t chunk_units = kChunkK / per_unit;
  const Plan plan = plan_tasks(m, n, kNRF, ctx);
  // A decode's single row is read where it lies: its bf16 pairs or f32 values are the units
  // already (packing spread them kMR dwords apart, a sixth of a small GEMV's time).
  const ActRow row0 = a.row(0);
  const bool direct = m == 1 && (bf16 ? row0.bf16 != nullptr : row0.f32 != nullptr);
  const std::size_t x_bytes = direct ? static_cast<std::size_t>(units) * 4
                                     : static_cast<std::size_t>(plan.tiles * units * kMR * 4);
  const uint32_t* packed_x = nullptr;
  if (direct) {
    packed_x = bf16 ? reinterpret_cast<const uint32_t*>(row0.bf16) : reinterpret_cast<const uint32_t*>(row0.f32);
  } else {
    uint32_t* packed = reinterpret_cast<uint32_t*>(t_activations.get(x_bytes));
    pack_float_activations(a, kind, units, packed, ctx);
    packed_x = packed;
  }
  const int64_t x_unit_dwords = direct ? 1 : kMR;
  const __mmask16 mask[4] = {0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF};   // whole strips only
  for_chunks_of_tasks(units, chunk_units, plan.tasks, x_bytes, ctx, [&](int64_t u0, int64_t task0, int64_t task1) {
    const int64_t nu = std::min(chunk_units, units - u0);
    for (int64_t task = task0; task < task1; ++task) {
      const int64_t c0 = task * plan.task_cols;
      const int64_t c1 = std::min(n, c0 + plan.task_cols);
      for (int64_t t = 0; t < plan.tiles; ++t) {
        const uint8_t* pa = reinterpret_cast<const uint8_t*>(packed_x + (t * units + u0) * x_unit_dwords);
        const int rows = direct ? 0 : static_cast<int>(std::min<int64_t>(kMR, m - t * kMR));
        const StripKernel kernel = bf16 ? strip_kernel<Bf16Kernels>(rows) : strip_kernel<F16Kernels>(rows);
        for (int64_t n0 = c0; n0 < c1; n0 += kNRF) {
          kernel(pa, w + static_cast<std::size_t>(n0) * row_bytes + static_cast<std::size_t>(u0) * kNRF * unit_bytes,
                 nu, y + t * kMR * ldy + n0, ldy, mask, u0 > 0);
        }
      }
    }
  });
  return true;
}

bool gemm_avx512(const PreparedActivations& a, WeightFormat format, const uint8_t* w,
                 std::size_t row_bytes, int64_t nrows, float* y, int64_t ldy,
                 const ExecContext& ctx) {
  if (a.rows() == 0 || nrows == 0) return true;
  switch (format) {
    case WeightFormat::kQ8_0:
    case WeightFormat::kQ4_0:
    case WeightFormat::kQ4_1:
    case WeightFormat::kQ2_K:
    case WeightFormat::kQ3_K:
      return gemm_int8(a, format, w, row_bytes, nrows, y, ldy, ctx);
    case WeightFormat::kF16:
    case WeightFormat::kBF16:
      return gemm_float(a, format, w, row_bytes, nrows, y, ldy, ctx);
    case WeightFormat::kF32:
      return false;
  }
  return false;
}

}  // namespace am::kernels::detail

#endif  // defined(__x86_64__)
