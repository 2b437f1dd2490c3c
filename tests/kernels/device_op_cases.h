// Op cases shared by the device backends' tests (vulkan_spatial_ops_test.cpp,
// opencl_spatial_ops_test.cpp): the convolution, group-norm, pooling and recurrent ops and the
// k-quant linear layers against the cpu backend on the scalar path, on seeded random inputs
// (never zeros), with shapes whose sizes are not multiples of the devices' work-groups or
// blocks, batch > 1, outputs poisoned with NaN first so a skipped element fails. Each case takes
// the backend under test and its tolerance table `Tol` (VulkanTolerance, OpenClTolerance).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include "kernels/accuracy.h"
#include "kernels/backend.h"
#include "kernels/cpu/conv1d.h"
#include "kernels/cpu/conv2d.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/linear.h"
#include "kernels/cpu/pool2d.h"
#include "kernels/cpu/selective_scan.h"
#include "kernels/cpu/time_mix.h"
#include "tests/kernels/test_util.h"

namespace am::kernels::testing {

// Devices cache weights by address for the backend's lifetime (backend.h): the weights of every
// case stay alive until the whole function is done, so no case's weight can land at the address
// of an earlier one's and be read stale from the cache.
class KeptWeights {
 public:
  const Tensor& keep(Tensor t) { return kept_.emplace_back(std::move(t)); }

 private:
  std::deque<Tensor> kept_;
};

inline double device_nmse(ConstTensorView y, ConstTensorView ref) {
  return compare_outputs(y.data, ref.data, ref.rows(), ref.cols()).nmse;
}

inline double device_nmse(const std::vector<float>& y, const std::vector<float>& ref) {
  return compare_outputs(y.data(), ref.data(), 1, static_cast<int64_t>(ref.size())).nmse;
}

struct Conv1dCase {
  int64_t batch, in_len, cin, cout, kernel, stride, dilation, pad_left, pad_right, groups;
  bool bias;
};

// Whisper's stem (k3 p1, then stride 2), a dilated strided conv, Mamba's causal depthwise conv,
// grouped convs; output counts not multiples of 64 or 256.
inline const Conv1dCase kConv1dCases[] = {
    {2, 37, 5, 7, 3, 1, 1, 1, 1, 1, true},   {2, 37, 7, 9, 3, 2, 1, 1, 1, 1, true},
    {3, 29, 6, 10, 3, 2, 2, 2, 1, 2, false}, {2, 13, 37, 37, 4, 1, 1, 3, 0, 37, true},
    {1, 50, 8, 12, 16, 1, 1, 8, 7, 4, true}};

template <typename Tol>
void expect_conv1d_matches_cpu(Backend& be, CpuBackend& cpu) {
  uint32_t seed = 1000;
  KeptWeights kept;
  for (const Conv1dCase& c : kConv1dCases) {
    SCOPED_TRACE("conv1d batch " + std::to_string(c.batch) + " len " + std::to_string(c.in_len) + " " +
                 std::to_string(c.cin) + "->" + std::to_string(c.cout) + " k" + std::to_string(c.kernel) + " s" +
                 std::to_string(c.stride) + " d" + std::to_string(c.dilation) + " g" + std::to_string(c.groups));
    const Tensor x = random_tensor(Shape{c.batch * c.in_len, c.cin}, ++seed);
    const Tensor& w = kept.keep(random_tensor(Shape{c.cout, c.cin / c.groups * c.kernel}, ++seed, 0.3f));
    const Tensor& b = kept.keep(random_tensor(Shape{c.cout}, ++seed));
    Conv1dArgs a;
    a.x = x.view();
    a.weight = w.data();
    a.bias = c.bias ? b.data() : nullptr;
    a.batch = c.batch;
    a.in_len = c.in_len;
    a.in_channels = c.cin;
    a.out_channels = c.cout;
    a.kernel = c.kernel;
    a.stride = c.stride;
    a.dilation = c.dilation;
    a.pad_left = c.pad_left;
    a.pad_right = c.pad_right;
    a.groups = c.groups;
    const int64_t out_len = conv1d_out_len(a);
    Tensor ref(Shape{c.batch * out_len, c.cout}), y(Shape{c.batch * out_len, c.cout});
    a.y = ref.view();
    ASSERT_TRUE(cpu.conv1d(a).ok());
    poison(y.view());
    a.y = y.view();
    ASSERT_TRUE(be.supports(Op::kConv1d).ok());
    const Status s = be.conv1d(a);
    ASSERT_TRUE(s.ok()) << s.message();
    ASSERT_TRUE(all_finite(y.view()));
    EXPECT_LE(device_nmse(y.view(), ref.view()), Tol::kConvolution);
  }
}

struct Conv2dCase {
  int64_t batch, h, w, cin, cout, kh, kw, stride, padding, groups;
  bool bias;
};

// A UNet's 3x3 conv, a strided downsampler, a ViT patch embedding, a 1x1 projection, grouped and
// depthwise convs, a non-square kernel.
inline const Conv2dCase kConv2dCases[] = {
    {2, 9, 11, 6, 10, 3, 3, 1, 1, 1, true},  {2, 9, 11, 6, 10, 3, 3, 2, 1, 1, false},
    {2, 16, 12, 3, 20, 4, 4, 4, 0, 1, true}, {3, 5, 7, 12, 9, 1, 1, 1, 0, 1, true},
    {1, 8, 8, 8, 12, 3, 3, 1, 1, 4, true},   {2, 7, 6, 10, 10, 3, 3, 2, 1, 10, true},
    {1, 6, 9, 4, 5, 2, 3, 1, 0, 1, true}};

template <typename Tol>
void expect_conv2d_matches_cpu(Backend& be, CpuBackend& cpu) {
  uint32_t seed = 2000;
  KeptWeights kept;
  for (const Conv2dCase& c : kConv2dCases) {
    SCOPED_TRACE("conv2d batch " + std::to_string(c.batch) + " " + std::to_string(c.h) + "x" + std::to_string(c.w) +
                 " " + std::to_string(c.cin) + "->" + std::to_string(c.cout) + " k" + std::to_string(c.kh) + "x" +
                 std::to_string(c.kw) + " s" + std::to_string(c.stride) + " p" + std::to_string(c.padding) +
                 " g" + std::to_string(c.groups));
    const Tensor x = random_tensor(Shape{c.batch * c.h * c.w, c.cin}, ++seed);
    const Tensor& w = kept.keep(random_tensor(Shape{c.cout, c.cin / c.groups * c.kh * c.kw}, ++seed, 0.3f));
    const Tensor& b = kept.keep(random_tensor(Shape{c.cout}, ++seed));
    Conv2dArgs a;
    a.x = x.view();
    a.weight = w.data();
    a.bias = c.bias ? b.data() : nullptr;
    a.batch = c.batch;
    a.height = c.h;
    a.width = c.w;
    a.in_channels = c.cin;
    a.out_channels = c.cout;
    a.kernel_h = c.kh;
    a.kernel_w = c.kw;
    a.stride = c.stride;
    a.padding = c.padding;
    a.groups = c.groups;
    const int64_t rows = c.batch * conv_out_size(c.h, c.kh, c.stride, c.padding) *
                         conv_out_size(c.w, c.kw, c.stride, c.padding);
    Tensor ref(Shape{rows, c.cout}), y(Shape{rows, c.cout});
    a.y = ref.view();
    ASSERT_TRUE(cpu.conv2d(a).ok());
    poison(y.view());
    a.y = y.view();
    ASSERT_TRUE(be.supports(Op::kConv2d).ok());
    const Status s = be.conv2d(a);
    ASSERT_TRUE(s.ok()) << s.message();
    ASSERT_TRUE(all_finite(y.view()));
    EXPECT_LE(device_nmse(y.view(), ref.view()), Tol::kConvolution);
  }
  // The weight is cached by address: a second weight of another shape at the same address (a
  // freed layer's storage reused) must not be read with the first one's layout.
  Conv2dArgs a;
  const Tensor x = random_tensor(Shape{2 * 5 * 5, 4}, 2100);
  const Tensor& w = kept.keep(random_tensor(Shape{6, 4 * 9}, 2101));
  a.x = x.view();
  a.weight = w.data();
  a.batch = 2;
  a.height = a.width = 5;
  a.in_channels = 4;
  a.out_channels = 6;
  a.kernel_h = a.kernel_w = 3;
  a.padding = 1;
  Tensor y1(Shape{50, 6});
  a.y = y1.view();
  ASSERT_TRUE(be.conv2d(a).ok());
  a.out_channels = 12;  // the same 216 floats read as 12 x 2 x 3 x 3 with groups = 2
  a.groups = 2;
  Tensor ref(Shape{50, 12}), y2(Shape{50, 12});
  a.y = ref.view();
  ASSERT_TRUE(cpu.conv2d(a).ok());
  a.y = y2.view();
  ASSERT_TRUE(be.conv2d(a).ok());
  EXPECT_LE(device_nmse(y2.view(), ref.view()), Tol::kConvolution);
}

template <typename Tol>
void expect_group_norm_matches_cpu(Backend& be, CpuBackend& cpu) {
  struct Case {
    int64_t batch, positions, channels, groups;
  };
  // Groups of 1 to 37 channels; more values per group than the work-group; groups = channels
  // (wav2vec2's feature encoder).
  const Case cases[] = {{2, 37, 24, 6}, {1, 300, 8, 2}, {3, 5, 37, 1}, {2, 11, 12, 12}};
  uint32_t seed = 3000;
  KeptWeights kept;
  for (const Case& c : cases) {
    SCOPED_TRACE("group_norm " + std::to_string(c.batch) + "x" + std::to_string(c.positions) + "x" +
                 std::to_string(c.channels) + " groups " + std::to_string(c.groups));
    Tensor x = random_tensor(Shape{c.batch * c.positions, c.channels}, ++seed, 2.0f);
    for (int64_t i = 0; i < x.numel(); ++i) x.data()[i] += 15.0f;  // a large mean
    const Tensor& gamma = kept.keep(random_tensor(Shape{c.channels}, ++seed));
    const Tensor& beta = kept.keep(random_tensor(Shape{c.channels}, ++seed));
    for (bool with_beta : {true, false}) {
      const float* bp = with_beta ? beta.data() : nullptr;
      Tensor ref(x.shape()), y(x.shape());
      ASSERT_TRUE(cpu.group_norm(x.view(), c.batch, c.groups, gamma.data(), bp, 1e-5f, ref.view()).ok());
      poison(y.view());
      ASSERT_TRUE(be.supports(Op::kGroupNorm).ok());
      const Status s = be.group_norm(x.view(), c.batch, c.groups, gamma.data(), bp, 1e-5f, y.view());
      ASSERT_TRUE(s.ok()) << s.message();
      ASSERT_TRUE(all_finite(y.view()));
      EXPECT_LE(device_nmse(y.view(), ref.view()), Tol::kNorm);
      Tensor in_place = x.clone();
      ASSERT_TRUE(be.group_norm(in_place.view(), c.batch, c.groups, gamma.data(), bp, 1e-5f, in_place.view()).ok());
      EXPECT_EQ(std::memcmp(in_place.data(), y.data(), y.bytes()), 0);
    }
  }
  Tensor x(Shape{6, 4}), y(Shape{6, 4});
  const Tensor& gamma = kept.keep(random_tensor(Shape{4}, 3100));
  EXPECT_EQ(be.group_norm(x.view(), 4, 2, gamma.data(), nullptr, 1e-5f, y.view()).code(), StatusCode::kInvalidArgument);
}

template <typename Tol>
void expect_pool2d_matches_cpu(Backend& be, CpuBackend& cpu) {
  struct Case {
    int64_t batch, h, w, channels, kernel, stride, padding;
  };
  // ResNet's stem pool (k3 s2 p1: windows cut by the padding), 2x2 windows, overlapping windows.
  const Case cases[] = {{2, 9, 11, 37, 3, 2, 1}, {1, 8, 6, 5, 2, 2, 0}, {3, 7, 7, 4, 3, 1, 1}};
  uint32_t seed = 4000;
  for (const Case& c : cases) {
    for (PoolKind kind : {PoolKind::kMax, PoolKind::kAvg}) {
      SCOPED_TRACE(std::string(kind == PoolKind::kMax ? "max" : "avg") + " pool " + std::to_string(c.h) + "x" +
                   std::to_string(c.w) + " k" + std::to_string(c.kernel) + " s" + std::to_string(c.stride) + " p" +
                   std::to_string(c.padding));
      const Tensor x = random_tensor(Shape{c.batch * c.h * c.w, c.channels}, ++seed);
      const int64_t rows = c.batch * conv_out_size(c.h, c.kernel, c.stride, c.padding) *
                           conv_out_size(c.w, c.kernel, c.stride, c.padding);
      Tensor ref(Shape{rows, c.channels}), y(Shape{rows, c.channels});
      Pool2dArgs a;
      a.x = x.view();
      a.kind = kind;
      a.batch = c.batch;
      a.height = c.h;
      a.width = c.w;
      a.kernel = c.kernel;
      a.stride = c.stride;
      a.padding = c.padding;
      a.y = ref.view();
      ASSERT_TRUE(cpu.pool2d(a).ok());
      poison(y.view());
      a.y = y.view();
      ASSERT_TRUE(be.supports(Op::kPool2d).ok());
      const Status s = be.pool2d(a);
      ASSERT_TRUE(s.ok()) << s.message();
      ASSERT_TRUE(all_finite(y.view()));
      if (kind == PoolKind::kMax) {
        EXPECT_EQ(std::memcmp(y.data(), ref.data(), y.bytes()), 0);  // a maximum is one of the inputs
      } else {
        EXPECT_LE(device_nmse(y.view(), ref.view()), Tol::kElementwise);
      }
    }
  }
}

// Mamba's scan on shapes with channels not a multiple of the channels a work-group holds and
// state sizes that are not powers of two; prefill from a zero state, then the carried state
// token by token must continue it exactly like the cpu.
template <typename Tol>
void expect_selective_scan_matches_cpu(Backend& be, CpuBackend& cpu) {
  struct Case {
    int64_t batch, len, channels, state;
    bool softplus, with_d, with_bias;
  };
  const Case cases[] = {{2, 9, 37, 16, true, true, true}, {1, 12, 20, 5, true, false, true},
                        {3, 4, 7, 3, false, true, false}};
  uint32_t seed = 5000;
  KeptWeights kept;
  for (const Case& c : cases) {
    SCOPED_TRACE("selective_scan batch " + std::to_string(c.batch) + " len " + std::to_string(c.len) +
                 " channels " + std::to_string(c.channels) + " state " + std::to_string(c.state));
    const int64_t rows = c.batch * c.len;
    const Tensor u = random_tensor(Shape{rows, c.channels}, ++seed);
    const Tensor delta = random_tensor(Shape{rows, c.channels}, ++seed, 0.5f);
    const Tensor B = random_tensor(Shape{rows, c.state}, ++seed);
    const Tensor C = random_tensor(Shape{rows, c.state}, ++seed);
    Tensor a_log = random_tensor(Shape{c.channels, c.state}, ++seed, 0.5f);
    for (int64_t i = 0; i < a_log.numel(); ++i) a_log.data()[i] = -std::exp(a_log.data()[i]);  // Mamba's -exp(A_log)
    const Tensor& A = kept.keep(std::move(a_log));
    const Tensor D = random_tensor(Shape{c.channels}, ++seed);
    const Tensor bias = random_tensor(Shape{c.channels}, ++seed, 0.3f);
    auto args = [&](TensorView y, float* state) {
      SelectiveScanArgs a;
      a.u = u.view();
      a.delta = delta.view();
      a.B = B.view();
      a.C = C.view();
      a.y = y;
      a.A = A.data();
      a.D = c.with_d ? D.data() : nullptr;
      a.delta_bias = c.with_bias ? bias.data() : nullptr;
      a.delta_softplus = c.softplus;
      a.batch = c.batch;
      a.len = c.len;
      a.channels = c.channels;
      a.state_size = c.state;
      a.state = state;
      return a;
    };
    Tensor ref(Shape{rows, c.channels}), y(Shape{rows, c.channels});
    std::vector<float> ref_state(static_cast<std::size_t>(c.batch * c.channels * c.state));
    for (std::size_t i = 0; i < ref_state.size(); ++i) ref_state[i] = 0.1f * std::sin(static_cast<float>(i));
    std::vector<float> state = ref_state;
    ASSERT_TRUE(cpu.selective_scan(args(ref.view(), ref_state.data())).ok());
    poison(y.view());
    ASSERT_TRUE(be.supports(Op::kSelectiveScan).ok());
    const Status s = be.selective_scan(args(y.view(), state.data()));
    ASSERT_TRUE(s.ok()) << s.message();
    ASSERT_TRUE(all_finite(y.view()));
    EXPECT_LE(device_nmse(y.view(), ref.view()), Tol::kRecurrence);
    EXPECT_LE(device_nmse(state, ref_state), Tol::kRecurrence);
    // Without a state: a zero start, nothing carried.
    Tensor ref0(Shape{rows, c.channels}), y0(Shape{rows, c.channels});
    ASSERT_TRUE(cpu.selective_scan(args(ref0.view(), nullptr)).ok());
    poison(y0.view());
    ASSERT_TRUE(be.selective_scan(args(y0.view(), nullptr)).ok());
    EXPECT_LE(device_nmse(y0.view(), ref0.view()), Tol::kRecurrence);
  }
  // Prefill then decode with the carried state equals the whole sequence (batch 1).
  const Case c = cases[1];
  const Tensor u = random_tensor(Shape{c.len, c.channels}, 5100);
  const Tensor delta = random_tensor(Shape{c.len, c.channels}, 5101, 0.5f);
  const Tensor B = random_tensor(Shape{c.len, c.state}, 5102);
  const Tensor C = random_tensor(Shape{c.len, c.state}, 5103);
  Tensor s4d(Shape{c.channels, c.state});
  for (int64_t i = 0; i < s4d.numel(); ++i) s4d.data()[i] = -static_cast<float>(i % c.state + 1);
  const Tensor& A = kept.keep(std::move(s4d));
  auto slice = [&](TensorView y, float* state, int64_t t0, int64_t len) {
    SelectiveScanArgs a;
    a.u = u.view().row_range(t0, len);
    a.delta = delta.view().row_range(t0, len);
    a.B = B.view().row_range(t0, len);
    a.C = C.view().row_range(t0, len);
    a.y = y;
    a.A = A.data();
    a.len = len;
    a.channels = c.channels;
    a.state_size = c.state;
    a.state = state;
    return a;
  };
  Tensor whole(Shape{c.len, c.channels});
  ASSERT_TRUE(cpu.selective_scan(slice(whole.view(), nullptr, 0, c.len)).ok());
  std::vector<float> state(static_cast<std::size_t>(c.channels * c.state), 0.0f);
  Tensor pieces(Shape{c.len, c.channels});
  ASSERT_TRUE(be.selective_scan(slice(pieces.view().row_range(0, 8), state.data(), 0, 8)).ok());
  for (int64_t t = 8; t < c.len; ++t) {
    ASSERT_TRUE(be.selective_scan(slice(pieces.view().row_range(t, 1), state.data(), t, 1)).ok());
  }
  EXPECT_LE(device_nmse(pieces.view(), whole.view()), Tol::kRecurrence);
}

template <typename Tol>
void expect_time_mix_matches_cpu(Backend& be, CpuBackend& cpu) {
  struct Case {
    int64_t batch, len, channels;
  };
  const Case cases[] = {{2, 11, 70}, {1, 1, 300}, {3, 6, 5}};
  uint32_t seed = 6000;
  KeptWeights kept;
  for (const Case& c : cases) {
    SCOPED_TRACE("time_mix batch " + std::to_string(c.batch) + " len " + std::to_string(c.len) + " channels " +
                 std::to_string(c.channels));
    const int64_t rows = c.batch * c.len;
    const Tensor k = random_tensor(Shape{rows, c.channels}, ++seed, 2.0f);
    const Tensor v = random_tensor(Shape{rows, c.channels}, ++seed);
    const Tensor& decay = kept.keep(random_tensor(Shape{c.channels}, ++seed));
    const Tensor& first = kept.keep(random_tensor(Shape{c.channels}, ++seed));
    for (bool carried : {false, true}) {
      // A carried state as a previous chunk left it: aa, bb > 0 scaled by e^-pp.
      std::vector<float> ref_state(static_cast<std::size_t>(3 * c.batch * c.channels));
      for (int64_t b = 0; b < c.batch; ++b) {
        for (int64_t ch = 0; ch < c.channels; ++ch) {
          float* st = ref_state.data() + b * 3 * c.channels;
          st[ch] = 0.5f + 0.01f * static_cast<float>(ch % 7);
          st[c.channels + ch] = 1.0f + 0.02f * static_cast<float>(ch % 5);
          st[2 * c.channels + ch] = 0.3f * static_cast<float>(ch % 3);
        }
      }
      std::vector<float> state = ref_state;
      Tensor ref(Shape{rows, c.channels}), y(Shape{rows, c.channels});
      TimeMixArgs a;
      a.k = k.view();
      a.v = v.view();
      a.time_decay = decay.data();
      a.time_first = first.data();
      a.batch = c.batch;
      a.len = c.len;
      a.channels = c.channels;
      a.state = carried ? ref_state.data() : nullptr;
      a.out = ref.view();
      ASSERT_TRUE(cpu.time_mix(a).ok());
      poison(y.view());
      a.out = y.view();
      a.state = carried ? state.data() : nullptr;
      ASSERT_TRUE(be.supports(Op::kTimeMix).ok());
      const Status s = be.time_mix(a);
      ASSERT_TRUE(s.ok()) << s.message();
      ASSERT_TRUE(all_finite(y.view()));
      EXPECT_LE(device_nmse(y.view(), ref.view()), Tol::kRecurrence);
      if (carried) {
        EXPECT_LE(device_nmse(state, ref_state), Tol::kRecurrence);
      }
    }
  }
}

// The 2- and 3-bit k-quant linear layers: K below one super-block, between, and over many;
// decode (M = 1..3) and prefill rows.
template <typename Tol>
void expect_k_quant_linear_matches_cpu(Backend& be, CpuBackend& cpu, const ExecContext& ctx,
                                       void (*release)(Backend&)) {
  struct Case {
    int64_t m, k, n;
  };
  const Case cases[] = {{1, 45, 33}, {3, 256, 20}, {7, 300, 37}, {9, 1100, 18}, {1, 4128, 5}};
  for (WeightFormat format : {WeightFormat::kQ2_K, WeightFormat::kQ3_K}) {
    uint32_t seed = 7000;
    for (const Case& c : cases) {
      for (bool with_bias : {true, false}) {
        SCOPED_TRACE(std::string(weight_format_name(format)) + " m=" + std::to_string(c.m) + " k=" +
                     std::to_string(c.k) + " n=" + std::to_string(c.n) + (with_bias ? " bias" : ""));
        release(be);  // the previous case's layer may sit at the same address
        Tensor b = with_bias ? random_tensor(Shape{c.n}, ++seed) : Tensor();
        const Linear layer = Linear::create(random_tensor(Shape{c.n, c.k}, ++seed, 0.5f), std::move(b), format, ctx);
        const Tensor x = random_tensor(Shape{c.m, c.k}, ++seed);
        Tensor ref(Shape{c.m, c.n}), y(Shape{c.m, c.n});
        ASSERT_TRUE(cpu.linear(layer, x.view(), ref.view()).ok());
        poison(y.view());
        ASSERT_TRUE(be.supports(Op::kLinear, format).ok());
        const Status s = be.linear(layer, x.view(), y.view());
        ASSERT_TRUE(s.ok()) << s.message();
        ASSERT_TRUE(all_finite(y.view()));
        EXPECT_LE(device_nmse(y.view(), ref.view()), Tol::kQuantMatmul);
      }
    }
    // A NaN activation poisons its row only.
    release(be);
    const Linear layer = Linear::create(random_tensor(Shape{6, 512}, 7100), Tensor(), format, ctx);
    Tensor x = random_tensor(Shape{2, 512}, 7101);
    x.data()[512 + 300] = std::nanf("");
    Tensor y(Shape{2, 6});
    ASSERT_TRUE(be.linear(layer, x.view(), y.view()).ok());
    for (int64_t o = 0; o < 6; ++o) {
      EXPECT_TRUE(std::isfinite(y.row(0)[o]));
      EXPECT_TRUE(std::isnan(y.row(1)[o]));
    }
  }
}

}  // namespace am::kernels::testing
