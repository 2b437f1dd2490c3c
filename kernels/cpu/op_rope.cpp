#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/rope.h"

namespace am::kernels {

Status CpuBackend::rope(TensorView x, const int32_t* positions, const RopeParams& params) {
  AM_RETURN_IF_ERROR(validate_rope(x, params, positions));
  rope_rows(x, positions, params, context());
  return Status::Ok();
}

}  // namespace am::kernels
