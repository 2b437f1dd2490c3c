#include "kernels/cpu/conv1d.h"
#include "kernels/cpu/cpu_backend.h"

namespace am::kernels {

Status CpuBackend::conv1d(const Conv1dArgs& args) {
  AM_RETURN_IF_ERROR(validate_conv1d(args));
  conv1d_rows(args, context());
  return Status::Ok();
}

}  // namespace am::kernels
