#include <string>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/routing.h"

namespace am::kernels {

Status CpuBackend::top_k(ConstTensorView logits, int64_t k, bool renormalize, int32_t* ids, float* weights) {
  AM_RETURN_IF_ERROR(validate_route_top_k(logits, k));
  route_top_k(logits, k, renormalize, ids, weights, context());
  return Status::Ok();
}

Status CpuBackend::index_rows(ConstTensorView x, const int32_t* ids, int64_t n, TensorView y) {
  if (y.rows() != n || y.cols() != x.cols()) return invalid_argument("index_rows: y must be [n, x cols]");
  AM_RETURN_IF_ERROR(validate_row_ids("index_rows", x.rows(), ids, n));
  kernels::index_rows(x, ids, n, y, context());
  return Status::Ok();
}

Status CpuBackend::scatter_add_rows(ConstTensorView x, const int32_t* ids, const float* scales, int64_t n,
                                    TensorView y) {
  if (x.rows() != n || y.cols() != x.cols()) {
    return invalid_argument("scatter_add_rows: x must be [n, y cols]");
  }
  AM_RETURN_IF_ERROR(validate_row_ids("scatter_add_rows", y.rows(), ids, n));
  kernels::scatter_add_rows(x, ids, scales, n, y);
  return Status::Ok();
}

}  // namespace am::kernels
