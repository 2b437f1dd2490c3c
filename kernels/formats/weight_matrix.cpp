#include "kernels/formats/weight_matrix.h"

#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

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

WeightMatrix WeightMatrix::quantize(ConstTensorView w, WeightFormat format, const ExecContext& ctx) {
  AM_CHECK(w.shape.rank() == 2, "weight matrices are 2-D");
  WeightMatrix m;
  m.format_ = format;
  m.rows_ = w.rows();
  m.cols_ = w.cols();
  m.row_bytes_ = weight_format_row_bytes(format, m.cols_);
  m.allocate();
  parallel_for(ctx, m.rows_, kRowsPerQuantizeTask, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      quantize_row(format, w.row(r), m.data_.get() + m.row_bytes_ * static_cast<std::size_t>(r),
                   m.cols_, ctx.path);
    }
  });
  return m;
}

Result<WeightMatrix> WeightMatrix::from_bytes(WeightFormat format, int64_t rows, int64_t cols,
                                              std::span<const uint8_t> bytes) {
  if (rows < 0 || cols < 0) return invalid_argument("weight matrix dimensions must be >= 0");
  WeightMatrix m;
  m.format_ = format;
  m.rows_ = rows;
  m.cols_ = cols;
  m.row_bytes_ = weight_format_row_bytes(format, cols);
  if (bytes.size() != m.size_bytes()) {
    return invalid_argument("a " + std::to_string(rows) + "x" + std::to_string(cols) + " " +
                            std::string(weight_format_name(format)) + " matrix takes " +
                            std::to_string(m.size_bytes()) + " bytes, got " +
                            std::to_string(bytes.size()));
  }
  m.allocate();
  if (!bytes.empty()) std::memcpy(m.data_.get(), bytes.data(), bytes.size());
  return m;
}

void WeightMatrix::dequantize_row(int64_t r, float* out) const {
  AM_CHECK(r >= 0 && r < rows_, "weight matrix row out of range");
  kernels::dequantize_row(format_, row_data(r), out, cols_);
}

Tensor WeightMatrix::dequantize() const {
  Tensor t(Shape{rows_, cols_});
  for (int64_t r = 0; r < rows_; ++r) dequantize_row(r, t.row(r));
  return t;
}

}  // namespace am::kernels
