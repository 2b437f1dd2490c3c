// CpuBackend::matmul_nt: one matmul_f32 (b is already in the [out, in] layout it expects),
// then the scale. CpuBackend::fma_chain: the calibration op on the same path and pool.
#include <limits>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/fma_chain.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/matmul_nt.h"

namespace am::kernels {

Status CpuBackend::matmul_nt(ConstTensorView a, ConstTensorView b, float scale, TensorView y) {
  AM_RETURN_IF_ERROR(validate_matmul_nt_args(a, b, y));
  matmul_f32(a, b, nullptr, y, ctx_);
  if (scale != 1.0f) {
    for (int64_t i = 0; i < y.numel(); ++i) y.data[i] *= scale;
  }
  return Status::Ok();
}

Status CpuBackend::fma_chain(int32_t iterations, TensorView out) {
  if (iterations < 0) return invalid_argument("fma_chain: iterations " + std::to_string(iterations) + " < 0");
  if (out.numel() > std::numeric_limits<int32_t>::max()) return unsupported_op(Op::kFmaChain, "more than 2^31-1 elements");
  ::am::kernels::fma_chain(out.numel(), iterations, out.data, ctx_);
  return Status::Ok();
}

}  // namespace am::kernels
