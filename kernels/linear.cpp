#include "kernels/linear.h"

#include <utility>

#include "kernels/check.h"
#include "kernels/matmul.h"

namespace am::kernels {

Linear Linear::create(Tensor weight, Tensor bias, WeightFormat format, const ExecContext& ctx) {
  AM_KERNEL_CHECK(weight.shape().rank() == 2, "linear weight must be [out, in]");
  AM_KERNEL_CHECK(bias.empty() || bias.numel() == weight.rows(), "linear bias must be [out]");
  Linear l;
  l.format_ = format;
  l.out_ = weight.rows();
  l.in_ = weight.cols();
  l.bias_ = std::move(bias);
  switch (format) {
    case WeightFormat::kF32:
      l.weight_ = std::move(weight);
      break;
    case WeightFormat::kQ8_0:
      l.qweight_ = Q8_0Matrix::quantize(weight.view(), ctx);
      break;
  }
  return l;
}

Linear Linear::converted(WeightFormat format, const ExecContext& ctx) const {
  AM_KERNEL_CHECK(format_ == WeightFormat::kF32, "only f32 layers can be converted");
  return create(weight_.clone(), bias_.clone(), format, ctx);
}

std::size_t Linear::weight_bytes() const {
  const std::size_t w = format_ == WeightFormat::kF32 ? weight_.bytes() : qweight_.bytes();
  return w + bias_.bytes();
}

void Linear::forward(ConstTensorView x, TensorView y, const ExecContext& ctx) const {
  const float* bias = bias_.empty() ? nullptr : bias_.data();
  switch (format_) {
    case WeightFormat::kF32:
      matmul_f32(x, weight_.view(), bias, y);
      break;
    case WeightFormat::kQ8_0:
      matmul_q8_0(x, qweight_, bias, y, ctx);
      break;
  }
}

}  // namespace am::kernels
