// Execution backends: the ops model graphs are built from, one implementation per kind of device.
//
// Contract:
// - Graph builders (kernels/models/) call ops only through a Backend, so a graph runs on every
//   backend that implements its ops. Before running, a graph asks supports() for every
//   (op, weight format) it needs; a backend that lacks one answers Unsupported with a message
//   naming the op, the format and the backend ("op attention (causal) not implemented on backend
//   opencl"). That message becomes the job's `unsupported` reason, i.e. the matrix cell's ❌.
// - Every op takes tensor views (TensorView, row-major f32) addressed by host pointers. Weights:
//   every `Linear` and every pointer documented as a weight (norm gamma/beta, embedding tables)
//   is immutable and stays alive and unmoved for the backend's lifetime, so a device backend
//   uploads it once and caches it by address.
// - Residency. Activations a graph allocates with tensor() live on this backend: a device
//   backend keeps their current values on the device between ops (ops on them are only
//   recorded, and run when a result is needed), so their host bytes may be stale. A graph
//   calls to_host(v) before the host reads v, and from_host(v) after the host writes v
//   (any part of a tensor() tensor). Plain `Tensor`s (not from tensor()) are copied in and out
//   per op, as are the int32 arrays (ids, masks, positions) ops take. On the cpu backend all
//   three are plain host memory and no-ops. transfers() counts what crossed between host and
//   device, so tests can assert that a forward pass moves only its inputs and outputs.
// - Row-wise ops (layer_norm, rms_norm) accept y aliasing x exactly (in place).
// - Outputs are fully written. Ops return Status; they never throw, except std::bad_alloc.
// - The base class implements every op as Unsupported, so a new op is added here (with its
//   scalar reference in the cpu backend) without touching other backends.
// - A Backend is used from one thread at a time (it may use its own worker threads inside).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "kernels/cpu/activation.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/conv1d.h"
#include "kernels/cpu/conv2d.h"
#include "kernels/cpu/group_norm.h"
#include "kernels/cpu/pool2d.h"
#include "kernels/cpu/selective_scan.h"
#include "kernels/cpu/time_mix.h"
#include "kernels/cpu/matmul_nt.h"
#include "kernels/cpu/rope.h"
#include "kernels/exec_context.h"
#include "kernels/cpu/linear.h"
#include "kernels/device_profile.h"
#include "kernels/tensor.h"
#include "kernels/formats/weight_format.h"

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
  kRope,           // rotary position embeddings in place, see rope.h
  kConv1d,         // channels-last 1-D convolution, see conv1d.h
  kTopK,           // MoE routing: softmax + top-k experts per row, see routing.h
  kIndexRows,      // y[i] = x[ids[i]] over activations
  kScatterAddRows, // y[ids[i]] += s[i] * x[i]
  kAttentionBias,  // attention with an additive score bias (T5), see attention_bias.h
  kConv2d,         // channels-last (NHWC) 2-D convolution, see conv2d.h
  kGroupNorm,      // per-sample group normalisation, see group_norm.h
  kPool2d,         // max / average spatial pooling, see pool2d.h
  kGlobalAvgPool,  // mean over each sample's rows, see pool2d.h
  kSelectiveScan,  // Mamba selective scan with carried state, see selective_scan.h
  kTimeMix,        // RWKV-4 WKV recurrence with carried state, see time_mix.h
  kMatmulNt,       // y = scale * a · b^T over activations, see matmul_nt.h
  kFmaChain,       // calibration: dependent fp32 FMA chains (the FMA rate), see cpu/fma_chain.h
};

std::string_view op_name(Op op);

// Unsupported "op <name> (<detail>) not implemented on backend <backend>": the one wording of a
// missing op or format, which becomes a job's `unsupported` reason (the matrix cell's ❌).
Status unsupported_op_on(std::string_view backend, Op op, std::string_view detail = {});

// The precisions whose every weight format `supports` accepts for Op::kLinear, in the canonical
// order of jobs/precision.h. A device advertises exactly these in its capability record, so the
// coordinator schedules a precision on a device only when the device's backend runs it.
std::vector<Precision> supported_precisions(const std::function<Status(Op, WeightFormat)>& supports);

// Host<->device traffic of a device backend since it was made (all zero on the cpu backend).
struct TransferCounts {
  int64_t weight_uploads = 0;        // weights and their device layouts, once per weight
  int64_t weight_upload_bytes = 0;
  int64_t tensor_uploads = 0;        // tensor() activations the host wrote, uploaded on first use
  int64_t tensor_upload_bytes = 0;
  int64_t tensor_downloads = 0;      // to_host() of a tensor() activation the device wrote
  int64_t tensor_download_bytes = 0;
  int64_t plain_uploads = 0;         // plain host tensors copied in for one op
  int64_t plain_upload_bytes = 0;
  int64_t plain_downloads = 0;       // plain host tensors copied out after one op
  int64_t plain_download_bytes = 0;
  int64_t index_uploads = 0;         // int32 ids, masks and positions
  int64_t index_upload_bytes = 0;
  int64_t device_copies = 0;         // device-side copies (row ranges of resident tensors)

  TransferCounts operator-(const TransferCounts& o) const;
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual std::string_view name() const = 0;          // "cpu", "opencl", ...
  virtual std::string device_name() const = 0;        // e.g. "AMD EPYC (avx512)"

  // OK when `op` runs here (with weights in `format` for kLinear; other ops ignore `format`).
  virtual Status supports(Op op, WeightFormat format = WeightFormat::kF32) const;

  // Residency (see the contract). tensor(): a zero-filled activation tensor kept on this
  // backend's device between ops (a plain Tensor on the cpu backend). It may outlive the
  // backend (then it is plain host memory).
  virtual Tensor tensor(Shape shape);
  // The host is about to read `v`: make its host bytes current (downloads the whole tensor it
  // lies in when the device holds newer values; waits for every op recorded before).
  virtual Status to_host(ConstTensorView v);
  // The host wrote `v` (part of a tensor() tensor): bring the device copy up to date.
  virtual Status from_host(ConstTensorView v);
  virtual TransferCounts transfers() const;
  // Waits until every op recorded so far has run on the device; moves no data (the cpu
  // backend runs ops synchronously: nothing to wait for). For timing device work.
  virtual Status synchronize();
  // Device time per kernel since the last call (device_profile.h: only when the backend was
  // made with ACCELMATRIX_DEVICE_PROFILE set; empty otherwise and on the cpu backend).
  virtual std::vector<DeviceKernelTime> take_device_profile();

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
  // In place on x [rows, heads*head_dim]; positions has rows entries (rope.h).
  virtual Status rope(TensorView x, const int32_t* positions, const RopeParams& params);
  // Channels-last conv (conv1d.h); args.weight and args.bias are weights.
  virtual Status conv1d(const Conv1dArgs& args);
  // Routing (routing.h): ids and weights hold logits.rows()*k entries.
  virtual Status top_k(ConstTensorView logits, int64_t k, bool renormalize, int32_t* ids, float* weights);
  virtual Status index_rows(ConstTensorView x, const int32_t* ids, int64_t n, TensorView y);
  virtual Status scatter_add_rows(ConstTensorView x, const int32_t* ids, const float* scales, int64_t n,
                                  TensorView y);
  // bias is [q_len*kv_len, heads] (attention_bias.h).
  virtual Status attention_bias(const AttentionArgs& args, ConstTensorView bias);
  // conv2d.h; args.weight and args.bias are weights.
  virtual Status conv2d(const Conv2dArgs& args);
  // group_norm.h; gamma/beta are weights of x.cols() floats (beta may be null); y may alias x.
  virtual Status group_norm(ConstTensorView x, int64_t batch, int64_t groups, const float* gamma,
                            const float* beta, float eps, TensorView y);
  virtual Status pool2d(const Pool2dArgs& args);                             // pool2d.h
  virtual Status global_avg_pool(ConstTensorView x, int64_t batch, TensorView y);  // pool2d.h
  virtual Status selective_scan(const SelectiveScanArgs& args);              // selective_scan.h
  virtual Status time_mix(const TimeMixArgs& args);                          // time_mix.h
  virtual Status matmul_nt(ConstTensorView a, ConstTensorView b, float scale, TensorView y);  // matmul_nt.h
  // Calibration, not a model op: out = the FMA chains of cpu/fma_chain.h, `iterations` >= 0.
  virtual Status fma_chain(int32_t iterations, TensorView out);

 protected:
  Status unsupported_op(Op op, std::string_view detail = {}) const;
};

// The backend named by a job ("cpu", "opencl", ...) for this process. `ctx` carries the cpu
// kernel path and thread pool (which must outlive the backend). Unsupported when the name is
// not built in or no device for it is present here, with a message saying which.
Result<std::unique_ptr<Backend>> make_backend(std::string_view name, const ExecContext& ctx);

}  // namespace am::kernels
