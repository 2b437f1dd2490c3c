// The cpu backend's row-interleaved execution layout of block-quantized weights (q8_0, q4_0,
// q4_1), built at load time from GGUF rows and convertible back to them byte for byte.
//
// Why: a GGUF row keeps each block's half scale next to its quants, so a kernel that computes one
// output at a time converts one scale, gathers one block and reduces one vector per output and
// block. With the blocks of kInterleaveRows = 8 rows side by side, one 16-byte load and one
// vcvtph2ps give the 8 rows' scales as one vector, and one 32-byte load gives 4 consecutive
// quant bytes of each of the 8 rows, so a broadcast of 4 activation bytes and vpmaddubsw give
// the 8 rows' partial dot products in the 8 int32 lanes of one register: no horizontal sums, and
// the activation bytes and the unpacked quants are shared by every row of X in the register tile
// (docs/FORMATS.md, "Execution layout"). 8 float lanes = one AVX2 register of outputs.
//
// Layout (WeightLayout::kInterleaved8): rows [0, 8 * groups) form groups of 8 consecutive rows,
// groups = rows / 8; the remaining rows % 8 rows follow as plain GGUF rows. Group g occupies
// exactly the bytes GGUF rows 8g .. 8g + 7 would (8 * row_bytes at offset 8g * row_bytes), so
// the matrix keeps its size and the tail rows their offsets. Inside a group, block b of the 8
// rows is one "group block" of 8 * block_bytes bytes at b * 8 * block_bytes:
//   q4_0 (144 bytes): d[8] (binary16, row i's scale at 2i), then 4 chunks of 32 bytes; chunk c
//                     holds qs[4c .. 4c + 3] of row 0, then of row 1, ... of row 7 (GGUF nibble
//                     packing kept: low nibble = element 4c + t, high = element 16 + 4c + t);
//   q4_1 (160 bytes): d[8], m[8], then the 4 chunks of q4_0;
//   q8_0 (272 bytes): d[8], then 8 chunks of 32 bytes; chunk c holds qs[4c .. 4c + 3] of rows
//                     0..7.
// Every other format keeps GGUF rows; interleave_supported() says which have the layout.
//
// Contract: pure, thread-safe functions on caller-owned buffers. interleave_group() and
// deinterleave_group() are exact inverses for every byte pattern (they only move bytes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "kernels/cpu/cpu_features.h"
#include "kernels/formats/weight_format.h"

namespace am::kernels {

inline constexpr int64_t kInterleaveRows = 8;       // rows per group: 8 f32 lanes of a 256-bit register
inline constexpr std::size_t kInterleaveChunkBytes = 4;  // quant bytes of one row per 32-byte chunk

// How a WeightMatrix orders its bytes. kRows is GGUF's (the storage and transport layout);
// kInterleaved8 is the cpu execution layout above; kStrips64 the AVX-512 path's layout of f16
// and bf16 weights (kernels/formats/strips_layout.h).
enum class WeightLayout { kRows, kInterleaved8, kStrips64 };

std::string_view weight_layout_name(WeightLayout layout);

// Whether `format` has an interleaved form (q8_0, q4_0, q4_1).
bool interleave_supported(WeightFormat format);

// The layout the cpu backend executes a [rows, cols] matrix of `format` in on kernel path `path`:
// kInterleaved8 where that path has interleaved kernels (avx2 and avx512 for the formats above);
// kStrips64 on the avx512 path for f16, and for bf16 with an even cols on a CPU with AVX512_BF16
// (whose GEMM reads it in place); kRows otherwise. The scalar path keeps GGUF rows (it is the reference);
// neon keeps the fallback.
WeightLayout cpu_execution_layout(WeightFormat format, KernelPath path, int64_t cols);

// Bytes of the header (scales, and mins for q4_1) at the start of a group block.
std::size_t interleaved_header_bytes(WeightFormat format);

// Moves kInterleaveRows GGUF rows (row i at src + i * row_bytes, `blocks` blocks each) into one
// interleaved group at dst (8 * row_bytes bytes). src and dst must not overlap.
void interleave_group(WeightFormat format, const uint8_t* src, std::size_t row_bytes, int64_t blocks,
                      uint8_t* dst);
// The inverse: one interleaved group at src back to 8 GGUF rows at dst + i * dst_row_stride.
void deinterleave_group(WeightFormat format, const uint8_t* src, std::size_t row_bytes, int64_t blocks,
                        uint8_t* dst, std::size_t dst_row_stride);

}  // namespace am::kernels
