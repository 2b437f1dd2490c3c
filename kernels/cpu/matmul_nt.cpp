#include "kernels/cpu/matmul_nt.h"

#include <string>

namespace am::kernels {

Status validate_matmul_nt_args(ConstTensorView a, ConstTensorView b, TensorView y) {
  if (a.cols() != b.cols() || y.rows() != a.rows() || y.cols() != b.rows()) {
    return invalid_argument("matmul_nt: a " + a.shape.to_string() + ", b " + b.shape.to_string() + ", y " +
                            y.shape.to_string() + " (need a [m, k], b [n, k], y [m, n])");
  }
  if (y.data == a.data || y.data == b.data) return invalid_argument("matmul_nt: y aliases an input");
  return Status::Ok();
}

void matmul_nt_reference(ConstTensorView a, ConstTensorView b, float scale, TensorView y) {
  for (int64_t i = 0; i < a.rows(); ++i) {
    for (int64_t j = 0; j < b.rows(); ++j) {
      double acc = 0.0;
      for (int64_t k = 0; k < a.cols(); ++k) acc += static_cast<double>(a.row(i)[k]) * b.row(j)[k];
      y.row(i)[j] = static_cast<float>(scale * acc);
    }
  }
}

}  // namespace am::kernels
