#include "kernels/cpu/linear.h"

#include <utility>

#include "common/check.h"
#include "kernels/cpu/matmul.h"

namespace am::kernels {

Linear Linear::create(Tensor weight, Tensor bias, WeightFormat format, const ExecContext& ctx) {
  AM_CHECK(weight.shape().rank() == 2, "linear weight must be [out, in]");
  AM_CHECK(bias.empty() || bias.numel() == weight.rows(), "linear bias must be [out]");
  Linear l;
  l.format_ = format;
  l.out_ = weight.rows();
  l.in_ = weight.cols();
  l.bias_ = std::move(bias);
  if (format == WeightFormat::kF32) {
    l.weight_ = std::move(weight);
  } else {
    const WeightLayout layout = ctx.cpu_weights ? cpu_execution_layout(format, ctx.path, weight.cols()) : WeightLayout::kRows;
    l.qweight_ = WeightMatrix::quantize(weight.view(), format, ctx, layout);
  }
  return l;
}

Linear Linear::converted(WeightFormat format, const ExecContext& ctx) const {
  AM_CHECK(format_ == WeightFormat::kF32, "only f32 layers can be converted");
  return create(weight_.clone(), bias_.clone(), format, ctx);
}

std::size_t Linear::weight_bytes() const { return weight_data_bytes() + bias_.bytes(); }

const void* Linear::weight_data() const {
  AM_CHECK(weight_layout() == WeightLayout::kRows,
           "Linear::weight_data(): this layer holds the cpu backend's execution layout, not GGUF rows; "
           "build layers for a device backend with ExecContext::cpu_weights = false");
  return format_ == WeightFormat::kF32 ? static_cast<const void*>(weight_.data())
                                       : static_cast<const void*>(qweight_.data());
}

std::size_t Linear::weight_data_bytes() const {
  return format_ == WeightFormat::kF32 ? weight_.bytes() : qweight_.size_bytes();
}

void Linear::forward(ConstTensorView x, TensorView y, const ExecContext& ctx) const {
  const float* bias = bias_data();
  if (format_ == WeightFormat::kF32) {
    matmul_f32(x, weight_.view(), bias, y, ctx);
  } else {
    matmul(x, qweight_, bias, y, ctx);
  }
}

}  // namespace am::kernels
