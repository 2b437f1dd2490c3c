// Checked conversions between f32 tensors and the layers models store them in, shared by the
// models' from_tensors() / tensors() (checkpoint import and export).
//
// Contract: errors are InvalidArgument "<owner>: <name> ..." giving the shape found and the one
// expected; nothing aborts on bad input. Pure functions, thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include "common/status.h"
#include "kernels/exec_context.h"
#include "kernels/cpu/linear.h"
#include "kernels/tensor.h"
#include "kernels/formats/weight_format.h"

namespace am::kernels {

// OK when `t` has exactly `expected` shape.
Status check_tensor_shape(std::string_view owner, std::string_view name, const Tensor& t, const Shape& expected);

// A Linear [out, in] at `format` from an f32 weight and a bias [out] (required when with_bias,
// which must otherwise be empty).
Result<Linear> linear_from_tensors(std::string_view owner, std::string_view name, Tensor weight, Tensor bias,
                                   int64_t in, int64_t out, bool with_bias, WeightFormat format,
                                   const ExecContext& ctx);

// Copies of an f32 layer's weight [out, in] and bias ([out] or empty); FailedPrecondition naming
// the layer's format otherwise.
Result<std::pair<Tensor, Tensor>> linear_to_tensors(std::string_view owner, std::string_view name, const Linear& l);

}  // namespace am::kernels
