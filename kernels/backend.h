// Execution backends: the ops model graphs are built from, one implementation per kind of device.
//
// Contract:
// - Graph builders (kernels/models/) call ops only through a Backend, so a graph runs on every
//   backend that implements its ops. Before running, a graph asks supports() for every
//   (op, weight format) it needs; a backend that lacks one answers Unsupported with a message
//   naming the op, the format and the backend ("op attention (causal) not implemented on backend
//   opencl"). That message becomes the job's `unsupported` reason, i.e. the matrix cell's ❌.
// - Every op reads and writes host tensors (TensorView, row-major f32). A device backend copies
//   activations in and out per op; it MAY cache weights on its device: every `Linear` and every
//   pointer documented as a weight (norm gamma/beta, embedding tables) is immutable and stays
//   alive and unmoved for the backend's lifetime, so it can be cached by address.
// - Row-wise ops (layer_norm, rms_norm) accept y aliasing x exactly (in place).
// - Outputs are fully written. Ops return Status; they never throw, except std::bad_alloc.
// - The base class implements every op as Unsupported, so a new op is added here (with its
//   scalar reference in the cpu backend) without touching other backends.
// - A Backend is used from one thread at a time (it may use its own worker threads inside).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"
#include "kernels/activation.h"
#include "kernels/attention.h"
#include "kernels/exec_context.h"
#include "kernels/linear.h"
#include "kernels/tensor.h"
#include "kernels/weight_format.h"

namespace am::kernels {

enum class Op {
  kLinear,         // y = x · W^T + b, W in a WeightFormat
  kGatherRows,     // y[i] (+)= table[ids[i]]
  kLayerNorm,
  kRmsNorm,
  kActivation,     // in place: gelu (erf/tanh), relu, silu
  kAdd,            // y += a
  kMul,            // y *= a
  kSoftmax,        // per row
  kAttention,      // scaled dot-product attention, see AttentionArgs
};

std::string_view op_name(Op op);

class Backend {
 public:
  virtual ~Backend() = default;

  virtual std::string_view name() const = 0;          // "cpu", "opencl", ...
  virtual std::string device_name() const = 0;        // e.g. "AMD EPYC (avx512)"

  // OK when `op` runs here (with weights in `format` for kLinear; other ops ignore `format`).
  virtual Status supports(Op op, WeightFormat format = WeightFormat::kF32) const;

  // Ops. Shapes are checked; a mismatch is InvalidArgument naming the op.
  virtual Status linear(const Linear& layer, ConstTensorView x, TensorView y);
  // y[i] = table[ids[i]] (accumulate=false) or y[i] += table[ids[i]] (accumulate=true).
  // `table` is a weight. Out-of-range ids are InvalidArgument.
  virtual Status gather_rows(ConstTensorView table, const int32_t* ids, int64_t n, TensorView y,
                             bool accumulate);
  // gamma/beta are weights of length cols; beta may be null.
  virtual Status layer_norm(ConstTensorView x, const float* gamma, const float* beta, float eps,
                            TensorView y);
  virtual Status rms_norm(ConstTensorView x, const float* gamma, float eps, TensorView y);
  virtual Status activation(Activation act, TensorView x);
  virtual Status add(TensorView y, ConstTensorView a);
  virtual Status mul(TensorView y, ConstTensorView a);
  virtual Status softmax(TensorView x);
  virtual Status attention(const AttentionArgs& args);

 protected:
  Status unsupported_op(Op op, std::string_view detail = {}) const;
};

// The backend named by a job ("cpu", "opencl", ...) for this process. `ctx` carries the cpu
// kernel path and thread pool (which must outlive the backend). Unsupported when the name is
// not built in or no device for it is present here, with a message saying which.
Result<std::unique_ptr<Backend>> make_backend(std::string_view name, const ExecContext& ctx);

}  // namespace am::kernels
