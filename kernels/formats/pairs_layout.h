// The cpu backend's execution layout of bf16 weights on the AVX-512 BF16 path: strips of 64 rows
// whose k-pairs lie side by side, built at load time from GGUF rows and convertible back to them
// byte for byte.
//
// Why: vdpbf16ps multiplies pairs of bf16 (k, k + 1), so the blocked GEMM's packed weight panel
// holds, per pair of k-values, one dword of each of 64 columns (4 zmm registers of outputs).
// Built from GGUF rows for every task and K chunk, that panel was 8-17% of the GEMM (the kernel
// reading it directly: 84-88% -> 95-96% of the bf16 peak at K = 4096, 72-81% -> 87-90% at
// K = 14336; bench_kernels, 2026-12-07). In this layout the weight *is* the panel: the kernels
// read it in place, for GEMV and decode too.
//
// Layout (WeightLayout::kPairs64, bf16 only, an even number of columns K): rows
// [0, 64 * strips) form strips of kPairsStripRows = 64 consecutive rows, strips = rows / 64; the
// remaining rows % 64 rows follow as plain GGUF rows. Strip s occupies exactly the bytes GGUF rows
// 64s .. 64s + 63 would (64 * 2K bytes at offset 64s * 2K), so the matrix keeps its size and the
// tail rows their offsets. Inside a strip, pair u (k-values 2u and 2u + 1, u < K / 2) is 64
// dwords at u * 256 bytes: dword c is row 64s + c's bf16 value 2u in its low half and 2u + 1 in
// its high half (little-endian: the two values' bytes in GGUF order).
//
// Contract: pure, thread-safe functions on caller-owned buffers; pair_strip() and unpair_strip()
// are exact inverses for every byte pattern (they only move bytes).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/formats/weight_format.h"

namespace am::kernels {

inline constexpr int64_t kPairsStripRows = 64;   // rows per strip: 4 zmm registers of f32 outputs

// Whether a [rows, cols] matrix of `format` may take kPairs64: bf16 with an even cols.
bool pairs_supported(WeightFormat format, int64_t cols);

// Moves kPairsStripRows GGUF bf16 rows of `cols` values (row i at src + i * 2 * cols) into one
// strip at dst (64 * 2 * cols bytes). src and dst must not overlap.
void pair_strip(const uint8_t* src, int64_t cols, uint8_t* dst);
// The inverse: one strip at src back to 64 GGUF rows at dst + i * dst_row_stride.
void unpair_strip(const uint8_t* src, int64_t cols, uint8_t* dst, std::size_t dst_row_stride);
// One row of a strip (row `r` of it, 0 <= r < 64) back to its GGUF bytes.
void unpair_row(const uint8_t* strip, int64_t cols, int64_t r, uint8_t* dst);

}  // namespace am::kernels
