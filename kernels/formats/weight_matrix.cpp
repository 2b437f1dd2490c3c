#include "kernels/formats/weight_matrix.h"

#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "kernels/formats/bf16.h"
#include "common/check.h"
#include "kernels/formats/fp16.h"

namespace am::kernels {
namespace {

constexpr std::size_t kAlignmentBytes = 64;  // one cache line: rows stream from aligned starts
constexpr int64_t kRowsPerQuantizeTask = 8;

}  // namespace

void quantize_row(WeightFormat format, const float* x, uint8_t* y, int64_t k, KernelPath path) {
  switch (format) {
    case WeightFormat::kF32:
      std::memcpy(y, x, static_cast<std::size_t>(k) * sizeof(float));
      return;
    case WeightFormat::kF16:
      fp32_to_fp16_row(x, reinterpret_cast<uint16_t*>(y), k);
      return;
    case WeightFormat::kBF16:
      fp32_to_bf16_row(x, reinterpret_cast<uint16_t*>(y), k);
      return;
    case WeightFormat::kQ8_0:
      quantize_row_q8_0(x, reinterpret_cast<BlockQ8_0*>(y), k, path);
      return;
    case WeightFormat::kQ4_0:
      quantize_row_q4_0(x, reinterpret_cast<BlockQ4_0*>(y), k);
      return;
    case WeightFormat::kQ4_1:
      quantize_row_q4_1(x, reinterpret_cast<BlockQ4_1*>(y), k);
      return;
    case WeightFormat::kQ2_K:
      quantize_row_q2_k(x, reinterpret_cast<BlockQ2_K*>(y), k);
      return;
    case WeightFormat::kQ3_K:
      quantize_row_q3_k(x, reinterpret_cast<BlockQ3_K*>(y), k);
      return;
  }
}

void dequantize_row(WeightFormat format, const uint8_t* x, float* y, int64_t k) {
  switch (format) {
    case WeightFormat::kF32:
      std::memcpy(y, x, static_cast<std::size_t>(k) * sizeof(float));
      return;
    case WeightFormat::kF16:
      fp16_to_fp32_row(reinterpret_cast<const uint16_t*>(x), y, k);
      return;
    case WeightFormat::kBF16:
      bf16_to_fp32_row(reinterpret_cast<const uint16_t*>(x), y, k);
      return;
    case WeightFormat::kQ8_0:
      dequantize_row_q8_0(reinterpret_cast<const BlockQ8_0*>(x), y, k);
      return;
    case WeightFormat::kQ4_0:
      dequantize_row_q4_0(reinterpret_cast<const BlockQ4_0*>(x), y, k);
      return;
    case WeightFormat::kQ4_1:
      dequantize_row_q4_1(reinterpret_cast<const BlockQ4_1*>(x), y, k);
      return;
    case WeightFormat::kQ2_K:
      dequantize_row_q2_k(reinterpret_cast<const BlockQ2_K*>(x), y, k);
      return;
    case WeightFormat::kQ3_K:
      dequantize_row_q3_k(reinterpret_cast<const BlockQ3_K*>(x), y, k);
      return;
  }
}

void WeightMatrix::FreeDeleter::operator()(uint8_t* p) const { std::free(p); }

void WeightMatrix::allocate() {
  const std::size_t bytes = size_bytes() + kWeightReadSlackBytes;
  // aligned_alloc wants a size that is a multiple of the alignment.
  const std::size_t rounded = (bytes + kAlignmentBytes - 1) / kAlignmentBytes * kAlignmentBytes;
  void* p = std::aligned_alloc(kAlignmentBytes, rounded);
  if (p == nullptr) throw std::bad_alloc();
  data_.reset(static_cast<uint8_t*>(p));
  std::memset(data_.get() + size_bytes(), 0, rounded - size_bytes());
}

void WeightMatrix::check_layout() const {
  AM_CHECK(layout_ != WeightLayout::kInterleaved8 || interleave_supported(format_),
           "weight matrix: this format has no interleaved layout");
  AM_CHECK(layout_ != WeightLayout::kStrips64 || strips_supported(format_, cols_),
           "weight matrix: the strips64 layout takes f16, or bf16 with an even number of columns");
}

WeightMatrix WeightMatrix::quantize(ConstTensorView w, WeightFormat format, const ExecContext& ctx,
                                   WeightLayout layout) {
  AM_CHECK(w.shape.rank() == 2, "weight matrices are 2-D");
  WeightMatrix m;
  m.format_ = format;
  m.layout_ = layout;
  m.rows_ = w.rows();
  m.cols_ = w.cols();
  m.check_layout();
  m.row_bytes_ = weight_format_row_bytes(format, m.cols_);
  m.allocate();
  uint8_t* const base = m.data_.get();
  const std::size_t rb = m.row_bytes_;
  auto quantize_rows = [&](int64_t begin, int64_t end, uint8_t* dst) {
    for (int64_t r = begin; r < end; ++r) {
      quantize_row(format, w.row(r), dst + rb * static_cast<std::size_t>(r - begin), m.cols_, ctx.path);
    }
  };
  const int64_t grouped = m.grouped_rows();
  if (grouped > 0 && layout == WeightLayout::kStrips64) {
    // One strip at a time through a scratch of 64 GGUF rows, as the groups below.
    parallel_for(ctx, grouped / kStripRows, 1, [&](int64_t begin, int64_t end) {
      std::vector<uint8_t> scratch(rb * kStripRows);
      for (int64_t s = begin; s < end; ++s) {
        quantize_rows(s * kStripRows, (s + 1) * kStripRows, scratch.data());
        to_strip(format, scratch.data(), m.cols_, base + rb * static_cast<std::size_t>(s * kStripRows));
      }
    });
  } else if (grouped > 0) {
    // One group at a time through a scratch of 8 GGUF rows: the only GGUF copy there is.
    const int64_t blocks = static_cast<int64_t>(rb / weight_format_block_bytes(format));
    parallel_for(ctx, grouped / kInterleaveRows, 1, [&](int64_t begin, int64_t end) {
      std::vector<uint8_t> scratch(rb * kInterleaveRows);
      for (int64_t g = begin; g < end; ++g) {
        quantize_rows(g * kInterleaveRows, (g + 1) * kInterleaveRows, scratch.data());
        interleave_group(format, scratch.data(), rb, blocks, base + rb * static_cast<std::size_t>(g * kInterleaveRows));
      }
    });
  }
  parallel_for(ctx, m.rows_ - grouped, kRowsPerQuantizeTask, [&](int64_t begin, int64_t end) {
    quantize_rows(grouped + begin, grouped + end, base + rb * static_cast<std::size_t>(grouped + begin));
  });
  return m;
}

Result<WeightMatrix> WeightMatrix::from_bytes(WeightFormat format, int64_t rows, int64_t cols,
                                              std::span<const uint8_t> bytes, WeightLayout layout) {
  if (rows < 0 || cols < 0) return invalid_argument("weight matrix dimensions must be >= 0");
  WeightMatrix m;
  m.format_ = format;
  m.layout_ = layout;
  m.rows_ = rows;
  m.cols_ = cols;
  m.check_layout();
  m.row_bytes_ = weight_format_row_bytes(format, cols);
  if (bytes.size() != m.size_bytes()) {
    return invalid_argument("a " + std::to_string(rows) + "x" + std::to_string(cols) + " " +
                            std::string(weight_format_name(format)) + " matrix takes " +
                            std::to_string(m.size_bytes()) + " bytes, got " +
                            std::to_string(bytes.size()));
  }
  m.allocate();
  const std::size_t rb = m.row_bytes_;
  const int64_t grouped = m.grouped_rows();
  if (layout == WeightLayout::kStrips64) {
    for (int64_t s = 0; s < grouped / kStripRows; ++s) {
      const std::size_t offset = rb * static_cast<std::size_t>(s * kStripRows);
      to_strip(format, bytes.data() + offset, cols, m.data_.get() + offset);
    }
  } else {
    const int64_t blocks = grouped > 0 ? static_cast<int64_t>(rb / weight_format_block_bytes(format)) : 0;
    for (int64_t g = 0; g < grouped / kInterleaveRows; ++g) {
      const std::size_t offset = rb * static_cast<std::size_t>(g * kInterleaveRows);
      interleave_group(format, bytes.data() + offset, rb, blocks, m.data_.get() + offset);
    }
  }
  const std::size_t tail = rb * static_cast<std::size_t>(grouped);
  if (bytes.size() > tail) std::memcpy(m.data_.get() + tail, bytes.data() + tail, bytes.size() - tail);
  return m;
}

const uint8_t* WeightMatrix::row_data(int64_t r) const {
  AM_CHECK(r >= grouped_rows() && r <= rows_, "weight matrix: row_data() of a row held in an interleaved group or a strip");
  return data() + row_bytes_ * static_cast<std::size_t>(r);
}

void WeightMatrix::gguf_row(int64_t r, uint8_t* out) const {
  AM_CHECK(r >= 0 && r < rows_, "weight matrix row out of range");
  if (r >= grouped_rows()) {
    std::memcpy(out, row_data(r), row_bytes_);
    return;
  }
  if (layout_ == WeightLayout::kStrips64) {
    strip_row(format_, strip_data(r / kStripRows), cols_, r % kStripRows, out);
    return;
  }
  // Deinterleave the row's group into a scratch and keep the row: only for tests and decoding.
  const int64_t blocks = static_cast<int64_t>(row_bytes_ / weight_format_block_bytes(format_));
  std::vector<uint8_t> group(row_bytes_ * kInterleaveRows);
  deinterleave_group(format_, group_data(r / kInterleaveRows), row_bytes_, blocks, group.data(), row_bytes_);
  std::memcpy(out, group.data() + row_bytes_ * static_cast<std::size_t>(r % kInterleaveRows), row_bytes_);
}

void WeightMatrix::gguf_rows(uint8_t* out) const {
  const int64_t grouped = grouped_rows();
  if (layout_ == WeightLayout::kStrips64) {
    for (int64_t s = 0; s < grouped / kStripRows; ++s) {
      from_strip(format_, strip_data(s), cols_, out + row_bytes_ * static_cast<std::size_t>(s * kStripRows), row_bytes_);
    }
  } else {
    const int64_t blocks = grouped > 0 ? static_cast<int64_t>(row_bytes_ / weight_format_block_bytes(format_)) : 0;
    for (int64_t g = 0; g < grouped / kInterleaveRows; ++g) {
      deinterleave_group(format_, group_data(g), row_bytes_, blocks,
                         out + row_bytes_ * static_cast<std::size_t>(g * kInterleaveRows), row_bytes_);
    }
  }
  const std::size_t tail = row_bytes_ * static_cast<std::size_t>(grouped);
  if (size_bytes() > tail) std::memcpy(out + tail, data() + tail, size_bytes() - tail);
}

void WeightMatrix::dequantize_row(int64_t r, float* out) const {
  AM_CHECK(r >= 0 && r < rows_, "weight matrix row out of range");
  if (r >= grouped_rows()) {
    kernels::dequantize_row(format_, row_data(r), out, cols_);
    return;
  }
  std::vector<uint8_t> row(row_bytes_);
  gguf_row(r, row.data());
  kernels::dequantize_row(format_, row.data(), out, cols_);
}

Tensor WeightMatrix::dequantize() const {
  Tensor t(Shape{rows_, cols_});
  if (layout_ == WeightLayout::kRows) {
    for (int64_t r = 0; r < rows_; ++r) dequantize_row(r, t.row(r));
    return t;
  }
  std::vector<uint8_t> rows(size_bytes());
  gguf_rows(rows.data());
  for (int64_t r = 0; r < rows_; ++r) {
    kernels::dequantize_row(format_, rows.data() + row_bytes_ * static_cast<std::size_t>(r), t.row(r), cols_);
  }
  return t;
}

}  // namespace am::kernels
