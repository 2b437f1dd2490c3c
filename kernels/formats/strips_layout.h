// The cpu backend's execution layout of half-precision weights on the AVX-512 path: strips of 64
// rows whose k-units lie side by side, built at load time from GGUF rows and convertible back to
// them byte for byte.
//
// Why: the blocked GEMM keeps a register tile of 64 output columns (4 zmm registers) and, per
// k-unit, wants those 64 columns' weights contiguous. Built from GGUF rows for every task and K
// chunk, that panel was 8-17% of the bf16 GEMM (the kernel reading it directly: 84-88% -> 95-96%
// of the bf16 peak at K = 4096, 72-81% -> 87-90% at K = 14336; bench_kernels, 2026-12-07), and
// the f16 GEMM's panel (widened to f32, twice the bytes) cost it as much. In this layout the
// weight *is* the panel: the kernels read it in place, for GEMV and decode too.
//
// Unit: what one step of the kernel multiplies per column. bf16 (vdpbf16ps multiplies pairs of
// bf16, k and k + 1): a pair of values, 4 bytes, K even. f16 (vcvtph2ps widens 16 values, then
// FMA): one value, 2 bytes, any K.
//
// Layout (WeightLayout::kStrips64): rows [0, 64 * strips) form strips of kStripRows = 64
// consecutive rows, strips = rows / 64; the remaining rows % 64 rows follow as plain GGUF rows.
// Strip s occupies exactly the bytes GGUF rows 64s .. 64s + 63 would (64 * row_bytes at offset
// 64s * row_bytes), so the matrix keeps its size and the tail rows their offsets. Inside a
// strip, unit u is 64 units at u * 64 * unit_bytes: unit c is row 64s + c's unit u (bf16: value
// 2u in its low half and 2u + 1 in its high half; f16: value u), in GGUF byte order.
//
// Contract: pure, thread-safe functions on caller-owned buffers; to_strip() and from_strip() are
// exact inverses for every byte pattern (they only move bytes). `format` must have strips.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/formats/weight_format.h"

namespace am::kernels {

inline constexpr int64_t kStripRows = 64;   // rows per strip: 4 zmm registers of f32 outputs

// Bytes of one unit of `format` in a strip: bf16 4, f16 2; 0 for a format without strips.
std::size_t strip_unit_bytes(WeightFormat format);

// Whether a [rows, cols] matrix of `format` may take kStrips64: bf16 with an even cols, f16.
bool strips_supported(WeightFormat format, int64_t cols);

// Moves kStripRows GGUF rows of `cols` values (row i at src + i * row_bytes) into one strip at
// dst (64 * row_bytes bytes). src and dst must not overlap.
void to_strip(WeightFormat format, const uint8_t* src, int64_t cols, uint8_t* dst);
// The inverse: one strip at src back to 64 GGUF rows at dst + i * dst_row_stride.
void from_strip(WeightFormat format, const uint8_t* src, int64_t cols, uint8_t* dst, std::size_t dst_row_stride);
// One row of a strip (row `r` of it, 0 <= r < 64) back to its GGUF bytes.
void strip_row(WeightFormat format, const uint8_t* strip, int64_t cols, int64_t r, uint8_t* dst);

}  // namespace am::kernels
