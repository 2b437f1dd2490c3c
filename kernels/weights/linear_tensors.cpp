#include "kernels/weights/linear_tensors.h"

#include <cstring>

namespace am::kernels {

Status check_tensor_shape(std::string_view owner, std::string_view name, const Tensor& t, const Shape& expected) {
  if (t.shape() == expected) return Status::Ok();
  const std::string found = t.empty() && t.shape().rank() <= 1 ? std::string("nothing") : t.shape().to_string();
  return invalid_argument(std::string(owner) + ": " + std::string(name) + " has shape " + found + ", expected " +
                          expected.to_string());
}

Result<Linear> linear_from_tensors(std::string_view owner, std::string_view name, Tensor weight, Tensor bias,
                                   int64_t in, int64_t out, bool with_bias, WeightFormat format,
                                   const ExecContext& ctx) {
  AM_RETURN_IF_ERROR(check_tensor_shape(owner, std::string(name) + " weight", weight, Shape{out, in}));
  if (with_bias) {
    AM_RETURN_IF_ERROR(check_tensor_shape(owner, std::string(name) + " bias", bias, Shape{out}));
  } else if (!bias.empty()) {
    return invalid_argument(std::string(owner) + ": " + std::string(name) + " has a bias the config does not have");
  }
  return Linear::create(std::move(weight), std::move(bias), format, ctx);
}

Result<std::pair<Tensor, Tensor>> linear_to_tensors(std::string_view owner, std::string_view name, const Linear& l) {
  if (l.format() != WeightFormat::kF32) {
    return failed_precondition(std::string(owner) + ": " + std::string(name) + " is stored as " +
                               std::string(weight_format_name(l.format())) + "; only f32 weights can be exported");
  }
  Tensor w(Shape{l.out_features(), l.in_features()});
  std::memcpy(w.data(), l.weight_data(), w.bytes());
  Tensor b;
  if (l.bias_data() != nullptr) {
    b = Tensor(Shape{l.out_features()});
    std::memcpy(b.data(), l.bias_data(), b.bytes());
  }
  return std::make_pair(std::move(w), std::move(b));
}

}  // namespace am::kernels
