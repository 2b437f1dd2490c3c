// A [rows, cols] weight matrix stored in one WeightFormat and one WeightLayout.
//
// kRows is the layout GGUF uses: rows one after another, each row row_bytes() bytes
// (ceil(cols / block) blocks for block formats, cols values for f32/f16/bf16), no padding between
// rows. This is the storage and transport layout: the bytes a file holds and a device backend
// uploads. kInterleaved8 is the cpu backend's execution layout of q8_0/q4_0/q4_1
// (kernels/formats/interleaved_layout.h): the same bytes moved so that 8 rows' blocks sit side by
// side; the matrix keeps its size, and rows past the last whole group of 8 stay GGUF rows.
// kStrips64 (f16, and bf16 with even cols; kernels/formats/strips_layout.h) does the same with
// strips of 64 rows whose k-units (bf16 pairs, f16 values) sit side by side.
//
// Contract:
//   - quantize() converts an f32 [rows, cols] matrix (rows in parallel on ctx.pool) straight into
//     `layout`: each task quantizes 8 rows into a scratch of 8 rows and moves them into place, so
//     the GGUF rows of the whole matrix are never materialised beside it. The bytes do not depend
//     on ctx. from_bytes() adopts bytes already in the format, given as GGUF rows (a file
//     loader's path), and lays them out in `layout` while copying; it checks the size and nothing
//     else. The caller's bytes may be released afterwards: the object owns exactly one copy,
//     size_bytes() (+ kWeightReadSlackBytes).
//   - A layout other than kRows is accepted only for formats (and, for kStrips64, shapes) with
//     that layout (interleave_supported(), strips_supported()); anything else aborts (programmer
//     error).
//   - gguf_rows() writes the GGUF rows of any layout into a caller buffer of size_bytes(): the
//     stored blocks are GGUF-identical whatever the execution layout. gguf_row() does one row.
//   - row_data(r) and the typed block views read GGUF rows, so they are for kRows matrices
//     (row_data also for the GGUF tail rows of an interleaved one, r >= grouped_rows()); the
//     typed views return an empty span when the format or the layout differs. group_data(g) is
//     interleaved group g (g < grouped_rows() / 8), strip_data(s) the kStrips64 strip s
//     (s < grouped_rows() / 64).
//   - Immutable after construction; move-only; concurrent reads are safe. data() is 64-byte
//     aligned and stays valid and unmoved for the object's lifetime (moving the object keeps
//     the pointer).
//   - kWeightReadSlackBytes zero bytes follow the last row, so SIMD kernels may fetch a whole
//     block pair with one wide load at the end of a row.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "common/status.h"
#include "kernels/exec_context.h"
#include "kernels/formats/q8_0.h"
#include "kernels/formats/blocks.h"
#include "kernels/formats/interleaved_layout.h"
#include "kernels/formats/strips_layout.h"
#include "kernels/tensor.h"
#include "kernels/formats/weight_format.h"

namespace am::kernels {

inline constexpr std::size_t kWeightReadSlackBytes = 64;

class WeightMatrix {
 public:
  WeightMatrix() = default;
  static WeightMatrix quantize(ConstTensorView w, WeightFormat format, const ExecContext& ctx,
                               WeightLayout layout = WeightLayout::kRows);
  static Result<WeightMatrix> from_bytes(WeightFormat format, int64_t rows, int64_t cols,
                                         std::span<const uint8_t> bytes,
                                         WeightLayout layout = WeightLayout::kRows);

  WeightFormat format() const { return format_; }
  WeightLayout layout() const { return layout_; }
  // Rows held in interleaved groups or strips (a multiple of kInterleaveRows or
  // kStripRows; 0 for kRows).
  int64_t grouped_rows() const {
    switch (layout_) {
      case WeightLayout::kInterleaved8:
        return rows_ / kInterleaveRows * kInterleaveRows;
      case WeightLayout::kStrips64:
        return rows_ / kStripRows * kStripRows;
      case WeightLayout::kRows:
        break;
    }
    return 0;
  }
  // Rows per group of the layout (1 for kRows).
  int64_t group_rows() const {
    return layout_ == WeightLayout::kInterleaved8 ? kInterleaveRows
           : layout_ == WeightLayout::kStrips64    ? kStripRows
                                                  : 1;
  }
  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  std::size_t row_bytes() const { return row_bytes_; }
  std::size_t size_bytes() const { return row_bytes_ * static_cast<std::size_t>(rows_); }
  const uint8_t* data() const { return data_.get(); }
  const uint8_t* row_data(int64_t r) const;
  const uint8_t* group_data(int64_t g) const {
    return data() + row_bytes_ * static_cast<std::size_t>(g * kInterleaveRows);
  }
  const uint8_t* strip_data(int64_t s) const {
    return data() + row_bytes_ * static_cast<std::size_t>(s * kStripRows);
  }
  // The GGUF bytes of row r (row_bytes() of them) / of every row (size_bytes()) into out.
  void gguf_row(int64_t r, uint8_t* out) const;
  void gguf_rows(uint8_t* out) const;

  std::span<const BlockQ8_0> q8_0_blocks() const { return blocks<BlockQ8_0>(WeightFormat::kQ8_0); }
  std::span<const BlockQ4_0> q4_0_blocks() const { return blocks<BlockQ4_0>(WeightFormat::kQ4_0); }
  std::span<const BlockQ4_1> q4_1_blocks() const { return blocks<BlockQ4_1>(WeightFormat::kQ4_1); }
  std::span<const BlockQ2_K> q2_k_blocks() const { return blocks<BlockQ2_K>(WeightFormat::kQ2_K); }
  std::span<const BlockQ3_K> q3_k_blocks() const { return blocks<BlockQ3_K>(WeightFormat::kQ3_K); }

  // Decodes row r's cols values into out.
  void dequantize_row(int64_t r, float* out) const;
  Tensor dequantize() const;

 private:
  struct FreeDeleter {
    void operator()(uint8_t* p) const;
  };
  template <typename Block>
  std::span<const Block> blocks(WeightFormat f) const {
    if (format_ != f || layout_ != WeightLayout::kRows || !data_) return {};
    return {reinterpret_cast<const Block*>(data()), size_bytes() / sizeof(Block)};
  }
  void allocate();
  void check_layout() const;

  WeightFormat format_ = WeightFormat::kF32;
  WeightLayout layout_ = WeightLayout::kRows;
  int64_t rows_ = 0;
  int64_t cols_ = 0;
  std::size_t row_bytes_ = 0;
  std::unique_ptr<uint8_t[], FreeDeleter> data_;
};

// Quantizes / converts / decodes one row of k values in `format` (the row functions of each
// format, dispatched). `path` only picks the SIMD implementation of q8_0 quantization; the
// bytes are the same on every path.
void quantize_row(WeightFormat format, const float* x, uint8_t* y, int64_t k, KernelPath path);
void dequantize_row(WeightFormat format, const uint8_t* x, float* y, int64_t k);

}  // namespace am::kernels
