#include "kernels/cpu/cpu_backend.h"

#include <string>

#include "kernels/cpu/layer_norm.h"
#include "kernels/cpu/softmax.h"

namespace am::kernels {
namespace {

Status same_shape(const char* op, ConstTensorView a, ConstTensorView b) {
  if (a.rows() == b.rows() && a.cols() == b.cols()) return Status::Ok();
  return invalid_argument(std::string(op) + ": shapes differ (" + std::to_string(a.rows()) + "x" +
                          std::to_string(a.cols()) + " vs " + std::to_string(b.rows()) + "x" +
                          std::to_string(b.cols()) + ")");
}

// Element-wise y = f(y, a) over rows, in parallel.
template <typename F>
void elementwise(const ExecContext& ctx, TensorView y, ConstTensorView a, F f) {
  const int64_t cols = y.cols();
  parallel_for(ctx, y.rows(), 64, [&](int64_t begin, int64_t end) {
    float* yp = y.row(begin);
    const float* ap = a.row(begin);
    const int64_t n = (end - begin) * cols;
    for (int64_t i = 0; i < n; ++i) yp[i] = f(yp[i], ap[i]);
  });
}

}  // namespace

CpuBackend::CpuBackend(const ExecContext& ctx) : ctx_(ctx) {}

std::string CpuBackend::device_name() const {
  return "cpu (" + std::string(kernel_path_name(ctx_.path)) + ")";
}

Status CpuBackend::supports(Op, WeightFormat) const {
  // Every op, and linear layers in every weight format: the cpu backend is the reference every
  // other backend is checked against, so it implements the whole table.
  return Status::Ok();
}

Status CpuBackend::linear(const Linear& layer, ConstTensorView x, TensorView y) {
  if (x.cols() != layer.in_features() || y.cols() != layer.out_features() || x.rows() != y.rows()) {
    return invalid_argument("linear: x is " + std::to_string(x.rows()) + "x" + std::to_string(x.cols()) +
                            ", y is " + std::to_string(y.rows()) + "x" + std::to_string(y.cols()) +
                            ", layer is " + std::to_string(layer.in_features()) + "->" +
                            std::to_string(layer.out_features()));
  }
  layer.forward(x, y, ctx_);
  return Status::Ok();
}

Status CpuBackend::gather_rows(ConstTensorView table, const int32_t* ids, int64_t n, TensorView y,
                               bool accumulate) {
  if (y.rows() != n || y.cols() != table.cols()) {
    return invalid_argument("gather_rows: output must be [n, table cols]");
  }
  for (int64_t i = 0; i < n; ++i) {
    if (ids[i] < 0 || ids[i] >= table.rows()) {
      return invalid_argument("gather_rows: id " + std::to_string(ids[i]) + " at " + std::to_string(i) +
                              " is outside [0, " + std::to_string(table.rows()) + ")");
    }
  }
  const int64_t cols = table.cols();
  parallel_for(ctx_, n, 64, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const float* src = table.row(ids[i]);
      float* dst = y.row(i);
      if (accumulate) {
        for (int64_t c = 0; c < cols; ++c) dst[c] += src[c];
      } else {
        for (int64_t c = 0; c < cols; ++c) dst[c] = src[c];
      }
    }
  });
  return Status::Ok();
}

Status CpuBackend::layer_norm(ConstTensorView x, const float* gamma, const float* beta, float eps,
                              TensorView y) {
  AM_RETURN_IF_ERROR(same_shape("layer_norm", x, y));
  kernels::layer_norm(x, gamma, beta, eps, y, ctx_);
  return Status::Ok();
}

Status CpuBackend::rms_norm(ConstTensorView x, const float* gamma, float eps, TensorView y) {
  AM_RETURN_IF_ERROR(same_shape("rms_norm", x, y));
  kernels::rms_norm(x, gamma, eps, y, ctx_);
  return Status::Ok();
}

Status CpuBackend::activation(Activation act, TensorView x) {
  apply_activation(act, x, ctx_);
  return Status::Ok();
}

Status CpuBackend::add(TensorView y, ConstTensorView a) {
  AM_RETURN_IF_ERROR(same_shape("add", a, y));
  elementwise(ctx_, y, a, [](float u, float v) { return u + v; });
  return Status::Ok();
}

Status CpuBackend::mul(TensorView y, ConstTensorView a) {
  AM_RETURN_IF_ERROR(same_shape("mul", a, y));
  elementwise(ctx_, y, a, [](float u, float v) { return u * v; });
  return Status::Ok();
}

Status CpuBackend::softmax(TensorView x) {
  softmax_rows(x, ctx_);
  return Status::Ok();
}

Status CpuBackend::attention(const AttentionArgs& args) {
  AM_RETURN_IF_ERROR(validate_attention_args(args));
  kernels::attention(args, ctx_);
  return Status::Ok();
}

}  // namespace am::kernels
