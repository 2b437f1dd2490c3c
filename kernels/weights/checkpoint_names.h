// Reading a tensor that checkpoints spell in more than one way (internal to kernels/weights/).
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "kernels/tensor.h"
#include "kernels/weights/checkpoint.h"

namespace am::kernels {

// The first of `names` the file holds, read as f32 of shape `expected`; NotFound naming the
// first (canonical) name, the alternatives and the checkpoint when none is present.
Result<Tensor> read_first_of(const Checkpoint& file, const std::vector<std::string>& names, const Shape& expected);

}  // namespace am::kernels
