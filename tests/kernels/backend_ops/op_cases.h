// One table of op cases for every backend (issue 12's op harness, in the spirit of ggml's
// test-backend-ops): every op of kernels/backend.h, every weight format of `linear`, and shapes
// that include non-multiples of the block and of work-group sizes, batch > 1, causal, GQA, masked
// and cross attention, long rows, partial rotary, strided/dilated/grouped convolutions and
// carried recurrent state. backend_ops_test.cpp runs the table on every backend present against
// the cpu scalar reference.
//
// Contract: a case's run() builds its inputs from fixed seeds (the same bytes on every call),
// runs its op on the given backend and returns every output (host tensors, brought back with
// to_host()). Its weights are built once per case (device backends cache them by address) in
// GGUF rows, which every backend runs. `tolerance` is the NMSE limit against the cpu scalar
// reference over its finite elements, one of OpTolerance's; where the reference is NaN or
// infinite the backend must give the same (a NaN activation poisons its row, a fully masked
// softmax row is zeros), and kExact asks for the reference's bits.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/status.h"
#include "kernels/backend.h"
#include "kernels/tensor.h"

namespace am::kernels::testing {

// NMSE limits against the cpu scalar reference. Device kernels use the reference's formulas;
// what remains is float summation order (trees, tiles) and the device's exp/tanh/erf, ~1e-14 to
// 1e-12 on these shapes: two to three decades of margin, many decades below a real defect (a
// wrong element, a missed block, a wrong mask moves NMSE to 1e-3 and beyond).
struct OpTolerance {
  static constexpr double kExact = 0.0;             // bit-identical: a maximum is one of its inputs
  static constexpr double kElementwise = 1e-12;     // add, mul, relu, gathers, copies
  static constexpr double kTranscendental = 1e-10;  // gelu/silu/sigmoid, softmax, rope
  static constexpr double kNorm = 1e-10;            // layer/RMS/group norm
  static constexpr double kFloatMatmul = 1e-10;     // f32/bf16 weights, matmul_nt
  // f16 weights: a device with matrix units rounds activations to f16 (Vulkan cooperative
  // matrices): relative error 2^-11 per element, ~1e-7 in NMSE.
  static constexpr double kF16Matmul = 1e-6;
  static constexpr double kQuantMatmul = 1e-10;     // identical int8 activation quants and int sums
  static constexpr double kAttention = 1e-10;       // online softmax against two-pass
  static constexpr double kConvolution = 1e-10;
  static constexpr double kRecurrence = 1e-10;      // exp carried through the recurrence
};

struct OpCase {
  std::string name;  // "<op> <format> <shape>", unique
  Op op = Op::kAdd;
  WeightFormat format = WeightFormat::kF32;
  double tolerance = OpTolerance::kElementwise;
  double flops = 0.0;         // arithmetic of one call where it is defined (matmuls), else 0
  double weight_bytes = 0.0;  // bytes of the weights one call reads (linear)
  std::function<Result<std::vector<Tensor>>(Backend&)> run;
};

std::vector<OpCase> all_op_cases();

// Arguments every backend must refuse before touching a device: `call` returns the op's status,
// which must be InvalidArgument with `must_mention` in its message.
struct RejectCase {
  std::string name;
  Op op = Op::kAdd;
  std::string must_mention;
  std::function<Status(Backend&)> call;
};
std::vector<RejectCase> all_reject_cases();
// The perf mode's own table (bench_backend_ops only: too big for a software device's test
// time). [0] is the copy baseline: index_rows over 128 MiB (32 MiB with `quick`), read + write,
// the bandwidth the backend's own kernels reach. Then issue 12's target shapes: GEMV (M = 1) in
// q4_0, q8_0, f16 and f32 at K x N = 4096 x 14336 and 14336 x 4096, and GEMM M = 512,
// K = N = 4096 in f16, f32 and q8_0 (quick: 1x1024x2048 and 64x512x512). A GEMV rotates over
// copies of its layer that together exceed `rotate_bytes` (not with `quick`), so no cache holds
// its weights between calls. Weights are built when a case runs and freed after it.
inline constexpr double kDefaultRotateBytes = 256.0 * (1 << 20);
std::vector<OpCase> perf_op_cases(bool quick, double rotate_bytes = kDefaultRotateBytes);

// Perf mode (bench_backend_ops): while `on`, a case's run() calls its op once to warm up and
// then repeatedly for at least `min_s` seconds, waiting for the device's work, and leaves the
// mean time per call in `ms`, the part of it spent on the host outside the waits (recording
// and launching; on a device the work recorded runs only after the wait's submit, so the two
// add up) in `host_ms`, and the bytes of the tensors the call reads and writes in `bytes`.
struct OpTiming {
  bool on = false;
  double min_s = 0.2;
  double ms = 0.0;
  double host_ms = 0.0;
  double bytes = 0.0;
  // The timed calls' device time per kernel (empty unless the backend profiles: device_profile.h).
  std::vector<DeviceKernelTime> profile;
  int64_t reps = 0;  // timed calls
};
OpTiming& op_timing();

}  // namespace am::kernels::testing
