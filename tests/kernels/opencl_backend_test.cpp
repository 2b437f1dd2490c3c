// The OpenCL backend against the cpu scalar reference: every implemented op x weight format on
// every OpenCL device present, seeded random inputs, several shapes (odd sizes included),
// outputs poisoned with NaN first so a skipped element fails the test.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tests/kernels/named_formats.h"
#include "kernels/cpu/attention_bias.h"
#include "kernels/backend.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/linear.h"
#include "kernels/opencl/opencl_backend.h"
#include "kernels/formats/weight_format.h"
#include "tests/kernels/opencl_test_util.h"
#include "tests/kernels/test_util.h"

namespace am::kernels {
namespace {

using testing::all_finite;
using testing::nmse;
using testing::OpenClTolerance;
using testing::poison;
using testing::random_tensor;
using testing::scalar_context;

// One backend per device for the whole binary: building the program is the slow part on PoCL.
// Each case drops the cached weights of the previous one (their addresses get reused).
OpenClBackend& backend_for(const opencl::OpenClDevice& device, bool f16_anywhere = false) {
  static std::map<std::string, std::unique_ptr<OpenClBackend>> backends;
  const std::string key = device.label() + (f16_anywhere ? "/f16" : "");
  auto it = backends.find(key);
  if (it == backends.end()) {
    OpenClBackendOptions options;
    options.f16_without_extension = f16_anywhere;
    Result<std::unique_ptr<OpenClBackend>> be = OpenClBackend::create(device, options);
    EXPECT_TRUE(be.ok()) << be.status().message();
    if (!be.ok()) std::abort();
    it = backends.emplace(key, std::move(be).value()).first;
  }
  it->second->release_cached_weights();
  return *it->second;
}

struct MatmulShape {
  int64_t m, k, n;
};

const MatmulShape kMatmulShapes[] = {{1, 32, 16}, {7, 45, 33}, {33, 64, 100}, {64, 130, 96}};

TEST(OpenClDevices, ListsEveryDeviceWithNameAndLimits) {
  AM_REQUIRE_OPENCL_DEVICES(devices);
  ASSERT_FALSE(devices.empty());
  for (const opencl::OpenClDevice& d : devices) {
    EXPECT_FALSE(d.name.empty());
    EXPECT_FALSE(d.platform_name.empty());
    EXPECT_GT(d.max_alloc_bytes, 0u);
    EXPECT_GT(d.max_work_group_size, 0u);
    EXPECT_NE(d.label().find(d.name), std::string::npos);
  }
  Result<opencl::OpenClDevice> picked = opencl::select_opencl_device();
  ASSERT_TRUE(picked.ok()) << picked.status().message();
}

TEST(OpenClDevices, MalformedDeviceVariableIsRejectedByName) {
  AM_REQUIRE_OPENCL_DEVICES(devices);
  ASSERT_EQ(setenv(opencl::kOpenClDeviceEnv, "gpu", 1), 0);
  Result<opencl::OpenClDevice> bad = opencl::select_opencl_device();
  ASSERT_EQ(setenv(opencl::kOpenClDeviceEnv, "97:0", 1), 0);
  Result<opencl::OpenClDevice> missing = opencl::select_opencl_device();
  ASSERT_EQ(setenv(opencl::kOpenClDeviceEnv, "0:0", 1), 0);
  Result<opencl::OpenClDevice> first = opencl::select_opencl_device();
  unsetenv(opencl::kOpenClDeviceEnv);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find(opencl::kOpenClDeviceEnv), std::string::npos);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("97:0"), std::string::npos);
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_EQ(first->platform_index, 0);
}

TEST(OpenClBackend, MakeBackendNamesOpenClAndItsDevice) {
  AM_REQUIRE_OPENCL_DEVICES(devices);
  Result<std::unique_ptr<Backend>> be = make_backend("opencl", scalar_context());
  ASSERT_TRUE(be.ok()) << be.status().message();
  EXPECT_EQ((*be)->name(), "opencl");
  EXPECT_FALSE((*be)->device_name().empty());
}

// The formats whose linear the OpenCL backend must match the cpu on, when the core has them.
const char* const kLinearFormats[] = {"f32", "f16", "bf16", "q8_0", "q4_0", "q4_1"};

double linear_tolerance(std::string_view format) {
  return (format == "f32" || format == "f16" || format == "bf16") ? OpenClTolerance::kFloatMatmul
                                                                  : OpenClTolerance::kQuantMatmul;
}

TEST(OpenClBackend, LinearMatchesCpuForEveryFormatAndShape) {
  AM_REQUIRE_OPENCL_DEVICES(devices);
  const ExecContext ctx = scalar_context();
  CpuBackend cpu(ctx);
  for (const opencl::OpenClDevice& device : devices) {
    for (const char* name : kLinearFormats) {
      Result<WeightFormat> format = Result<WeightFormat>(format_named(name));
      if (!format.ok()) {
        ADD_FAILURE() << "the core lost format " << name << ": " << format.status().message();
        continue;
      }
      // f16 runs on PoCL only with the storage-only option (PoCL has no cl_khr_fp16).
      OpenClBackend& be = backend_for(device, std::string_view(name) == "f16");
      uint32_t seed = 100;
      for (const MatmulShape& s : kMatmulShapes) {
        for (bool with_bias : {true, false}) {
          SCOPED_TRACE(device.label() + " " + name + " m=" + std::to_string(s.m) + " k=" +
                       std::to_string(s.k) + " n=" + std::to_string(s.n) +
                       (with_bias ? " bias" : " no bias"));
          be.release_cached_weights();  // the previous case's layer may sit at the same address
          Tensor w = random_tensor(Shape{s.n, s.k}, ++seed, 0.5f);
          Tensor b = with_bias ? random_tensor(Shape{s.n}, ++seed) : Tensor();
          const Linear layer = Linear::create(std::move(w), std::move(b), *format, ctx);
          const Tensor x = random_tensor(Shape{s.m, s.k}, ++seed);
          Tensor ref(Shape{s.m, s.n});
          Tensor y(Shape{s.m, s.n});
          ASSERT_TRUE(cpu.linear(layer, x.view(), ref.view()).ok());
          poison(y.view());
          ASSERT_TRUE(be.supports(Op::kLinear, *format).ok());
          const Status st = be.linear(layer, x.view(), y.view());
          ASSERT_TRUE(st.ok()) << st.message();
          ASSERT_TRUE(all_finite(y.view()));
          EXPECT_LE(nmse(y.view(), ref.view()), linear_tolerance(name));
          // The second call reuses the uploaded weight and must give the same bits.
          Tensor again(Shape{s.m, s.n});
          ASSERT_TRUE(be.linear(layer, x.view(), again.view()).ok());
          EXPECT_EQ(std::memcmp(again.data(), y.data(), y.bytes()), 0);
        }
      }
    }
  }
}

TEST(OpenClBackend, LinearPropagatesNaNFromAnActivationBlock) {
  AM_REQUIRE_OPENCL_DEVICES(devices);
  const ExecContext ctx = scalar_context();
  for (const opencl::OpenClDevice& device : devices) {
    OpenClBackend& be = backend_for(device);
    for (const char* name : {"f32", "q8_0", "q4_0"}) {
      be.release_cached_weights();
      const Linear layer =
          Linear::create(random_tensor(Shape{8, 64}, 7), Tensor(), format_named(name), ctx);
      Tensor x = random_tensor(Shape{2, 64}, 8);
      x.data()[64 + 40] = std::numeric_limits<float>::quiet_NaN();  // row 1, second block
      Tensor y(Shape{2, 8});
      ASSERT_TRUE(be.linear(layer, x.view(), y.view()).ok());
      for (int64_t c = 0; c < 8; ++c) {
        EXPECT_TRUE(std::isfinite(y.row(0)[c])) << name;
        EXPECT_TRUE(std::isnan(y.row(1)[c])) << name;
      }
    }
  }
}

TEST(OpenClBackend, SupportsEveryOpAndFormatButF16WithoutTheExtension) {
  AM_REQUIRE_OPENCL_DEVICES(devices);
  for (const opencl::OpenClDevice& device : devices) {
    OpenClBackend& be = backend_for(device);
    for (WeightFormat f : all_weight_formats()) {
      const std::string name(weight_format_name(f));
      const Status s = be.supports(Op::kLinear, f);
      if (name == "f16" && !device.has_extension("cl_khr_fp16")) {
        ASSERT_FALSE(s.ok());
        EXPECT_EQ(s.code(), StatusCode::kUnsupported);
        EXPECT_EQ(s.message(), "precision f16 needs cl_khr_fp16 on device " + device.name);
      } else {
        EXPECT_TRUE(s.ok()) << name << ": " << s.message();
      }
      // supports_on() is what the worker's probe advertises: the same answer without a context.
      EXPECT_EQ(OpenClBackend::supports_on({device.name, device.has_extension("cl_khr_fp16"), false}, Op::kLinear, f)
                    .message(),
                s.message());
    }
    for (Op op : {Op::kGatherRows, Op::kLayerNorm, Op::kRmsNorm, Op::kActivation, Op::kAdd, Op::kMul,
                  Op::kSoftmax, Op::kAttention, Op::kAttentionBias, Op::kRope, Op::kIndexRows,
                  Op::kScatterAddRows, Op::kTopK, Op::kMatmulNt, Op::kGlobalAvgPool, Op::kConv1d,
                  Op::kConv2d, Op::kGroupNorm, Op::kPool2d, Op::kSelectiveScan, Op::kTimeMix}) {
      EXPECT_TRUE(be.supports(op).ok()) << op_name(op);
    }
  }
}

TEST(OpenClBackend, LinearRejectsMismatchedShapes) {
  AM_REQUIRE_OPENCL_DEVICES(devices);
  OpenClBackend& be = backend_for(devices.front());
  const Linear layer = Linear::create(random_tensor(Shape{5, 6}, 1), Tensor(), WeightFormat::kF32,
                                      scalar_context());
  Tensor x(Shape{2, 7});
  Tensor y(Shape{2, 5});
  const Status s = be.linear(layer, x.view(), y.view());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("linear"), std::string::npos);
}

TEST(OpenClBackend, GatherRowsMatchesCpuAndRejectsOutOfRangeIds) {
  AM_REQUIRE_OPENCL_DEVICES(devices);
  CpuBackend cpu(scalar_context());
  for (const opencl::OpenClDevice& device : devices) {
    OpenClBackend& be = backend_for(device);
    const Tensor table = random_tensor(Shape{50, 37}, 11);
    std::vector<int32_t> ids;
    for (int i = 0; i < 23; ++i) ids.push_back((i * 17 + 3) % 50);
    for (bool accumulate : {false, true}) {
      const Tensor base = random_tensor(Shape{23, 37}, 12);
      Tensor ref = base.clone();
      Tensor y = base.clone();
      if (!accumulate) poison(y.view());
      ASSERT_TRUE(cpu.gather_rows(table.view(), ids.data(), 23, ref.view(), accumulate).ok());
      ASSERT_TRUE(be.gather_rows(table.view(), ids.data(), 23, y.view(), accumulate).ok());
      ASSERT_TRUE(all_finite(y.view()));
      EXPECT_LE(nmse(y.view(), ref.view()), OpenClTolerance::kElementwise);
    }
    std::vector<int32_t> bad = {0, 50};
    Tensor y(Shape{2, 37});
    const Status s = be.gather_rows(table.view(), bad.data(), 2, y.view(), false);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find("id 50"), std::string::npos);
  }
}

struct RowShape {
  int64_t rows, cols;
};
const RowShape kRowShapes[] = {{1, 1}, {5, 7}, {33, 128}, {3, 1000}};

TEST(OpenClBackend, LayerNormAndRmsNormMatchCpuInPlaceAndOutOfPlace) {
  AM_REQUIRE_OPENCL_DEVICES(devices);
  CpuBackend cpu(scalar_context());
  for (const opencl::OpenClDevice& device : devices) {
    OpenClBackend& be = backend_for(device);
    uint32_t seed = 200;
    for (const RowShape& s : kRowShapes) {
      SCOPED_TRACE(device.label() + " " + std::to_string(s.rows) + "x" + std::to_string(s.cols));
      be.release_cached_weights();
      Tensor x = random_tensor(Shape{s.rows, s.cols}, ++seed, 3.0f);
      for (int64_t i = 0; i < x.numel(); ++i) x.data()[i] += 20.0f;  // a large mean
      const Tensor gamma = random_tensor(Shape{s.cols}, ++seed);
      const Tensor beta = random_tensor(Shape{s.cols}, ++seed);
      for (bool with_beta : {true, false}) {
        Tensor ref(x.shape()), y(x.shape());
        poison(y.view());
        const float* b = with_beta ? beta.data() : nullptr;
        ASSERT_TRUE(cpu.layer_norm(x.view(), gamma.data(), b, 1e-5f, ref.view()).ok());
        ASSERT_TRUE(be.layer_norm(x.view(), gamma.data(), b, 1e-5f, y.view()).ok());
        ASSERT_TRUE(all_finite(y.view()));
        if (s.cols > 1) {
          EXPECT_LE(nmse(y.view(), ref.view()), OpenClTolerance::kNorm);
        } else {
          // One column: x - mean is exactly 0, so y = beta (or 0) on both backends.
          EXPECT_EQ(std::memcmp(y.data(), ref.data(), y.bytes()), 0);
        }
        Tensor in_place = x.clone();
        ASSERT_TRUE(be.layer_norm(in_place.view(), gamma.data(), b, 1e-5f, in_place.view()).ok());
        EXPECT_EQ(std::memcmp(in_place.data(), y.data(), y.bytes()), 0);
      }
      Tensor ref(x.shape()), y(x.shape());
      poison(y.view());
      ASSERT_TRUE(cpu.rms_norm(x.view(), gamma.data(), 1e-6f, ref.view()).ok());
      ASSERT_TRUE(be.rms_norm(x.view(), gamma.data(), 1e-6f, y.view()).ok());
      ASSERT_TRUE(all_finite(y.view()));
      EXPECT_LE(nmse(y.view(), ref.view()), OpenClTolerance::kNorm);
    }
  }
}

TEST(OpenClBackend, ActivationsMatchCpuAndReluKeepsNaN) {
  AM_REQUIRE_OPENCL_DEVICES(devices);
  CpuBackend cpu(scalar_context());
  for (const opencl::OpenClDevice& device : devices) {
    OpenClBackend& be = backend_for(device);
    for (Activation act : {Activation::kGeluErf, Activation::kGeluTanh, Activation::kRelu,
                           Activation::kSilu, Activation::kSigmoid, Activation::kQuickGelu}) {
      SCOPED_TRACE(device.label() + " " + std::string(activation_name(act)));
      const Tensor x = random_tensor(Shape{9, 131}, 300, 3.0f);
      Tensor ref = x.clone();
      Tensor y = x.clone();
      ASSERT_TRUE(cpu.activation(act, ref.view()).ok());
      ASSERT_TRUE(be.activation(act, y.view()).ok());
      ASSERT_TRUE(all_finite(y.view()));
      EXPECT_LE(nmse(y.view(), ref.view()),
                act == Activation::kRelu ? OpenClTolerance::kElementwise : OpenClTolerance::kTranscendental);
    }
    Tensor nan_in = random_tensor(Shape{1, 3}, 301);
    nan_in.data()[1] = std::numeric_limits<float>::quiet_NaN();
    ASSERT_TRUE(be.activation(Activation::kRelu, nan_in.view()).ok());
    EXPECT_TRUE(std::isnan(nan_in.data()[1]));
  }
}

TEST(OpenClBackend, AddAndMulMatchCpuAndRejectShapeMismatch) {
  AM_REQUIRE_OPENCL_DEVICES(devices);
  CpuBackend cpu(scalar_context());
  for (const opencl::OpenClDevice& device : devices) {
    OpenClBackend& be = backend_for(device);
    const Tensor a = random_tensor(Shape{17, 33}, 400);
    const Tensor base = random_tensor(Shape{17, 33}, 401);
    Tensor ref = base.clone(), y = base.clone();
    ASSERT_TRUE(cpu.add(ref.view(), a.view()).ok());
    ASSERT_TRUE(be.add(y.view(), a.view()).ok());
    EXPECT_LE(nmse(y.view(), ref.view()), OpenClTolerance::kElementwise);
    ASSERT_TRUE(cpu.mul(ref.view(), a.view()).ok());
    ASSERT_TRUE(be.mul(y.view(), a.view()).ok());
    EXPECT_LE(nmse(y.view(), ref.view()), OpenClTolerance::kElementwise);
    Tensor other(Shape{17, 32});
    EXPECT_EQ(be.add(other.view(), a.view()).code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(be.mul(other.view(), a.view()).code(), StatusCode::kInvalidArgument);
  }
}

TEST(OpenClBackend, SoftmaxMatchesCpuWithMaskedRowsAndNaN) {
  AM_REQUIRE_OPENCL_DEVICES(devices);
  CpuBackend cpu(scalar_context());
  constexpr float kInf = std::numeric_limits<float>::infinity();
  for (const opencl::OpenClDevice& device : devices) {
    OpenClBackend& be = backend_for(device);
    for (const RowShape& s : kRowShapes) {
      Tensor x = random_tensor(Shape{s.rows, s.cols}, 500, 4.0f);
      for (int64_t c = 0; c < s.cols; c += 3) x.row(0)[c] = -kInf;  // some masked entries
      Tensor ref = x.clone(), y = x.clone();
      ASSERT_TRUE(cpu.softmax(ref.view()).ok());
      ASSERT_TRUE(be.softmax(y.view()).ok());
      ASSERT_TRUE(all_finite(y.view()));
      EXPECT_LE(nmse(y.view(), ref.view()), OpenClTolerance::kTranscendental);
    }
    Tensor special(Shape{3, 5});
    for (int64_t c = 0; c < 5; ++c) {
      special.row(0)[c] = -kInf;
      special.row(1)[c] = static_cast<float>(c);
      special.row(2)[c] = static_cast<float>(c);
    }
    special.row(1)[2] = std::numeric_limits<float>::quiet_NaN();
    ASSERT_TRUE(be.softmax(special.view()).ok());
    for (int64_t c = 0; c < 5; ++c) {
      EXPECT_EQ(special.row(0)[c], 0.0f);
      EXPECT_TRUE(std::isnan(special.row(1)[c]));
    }
    float sum = 0.0f;
    for (int64_t c = 0; c < 5; ++c) sum += special.row(2)[c];
    EXPECT_NEAR(sum, 1.0f, 1e-6f);
  }
}

struct AttentionCase {
  const char* what;
  int64_t batch, q_len, kv_len, heads, kv_heads, head_dim, q_offset;
  bool causal, masked;
};

const AttentionCase kAttentionCases[] = {
    {"bidirectional, key mask", 3, 16, 16, 4, 4, 32, 0, false, true},
    {"bidirectional, odd head_dim", 2, 7, 7, 3, 3, 13, 0, false, false},
    {"causal prompt", 2, 19, 19, 2, 2, 24, 0, true, false},
    {"causal with cache offset", 2, 5, 21, 4, 4, 16, 16, true, false},
    {"causal, grouped-query", 1, 9, 9, 8, 2, 16, 0, true, true},
    {"cross, q_len != kv_len", 2, 6, 11, 2, 1, 20, 0, false, true},
    {"more keys than one chunk", 1, 3, 600, 2, 2, 64, 0, false, true},
    {"causal decode past one chunk", 1, 1, 300, 2, 1, 40, 299, true, false},
    {"head_dim above the group size", 1, 4, 4, 1, 1, 200, 0, false, false},
};

TEST(OpenClBackend, AttentionMatchesCpuOnEveryVariant) {
  AM_REQUIRE_OPENCL_DEVICES(devices);
  CpuBackend cpu(scalar_context());
  for (const opencl::OpenClDevice& device : devices) {
    OpenClBackend& be = backend_for(device);
    uint32_t seed = 600;
    for (const AttentionCase& c : kAttentionCases) {
      SCOPED_TRACE(device.label() + " " + c.what);
      const Tensor q = random_tensor(Shape{c.batch * c.q_len, c.heads * c.head_dim}, ++seed);
      const Tensor k = random_tensor(Shape{c.batch * c.kv_len, c.kv_heads * c.head_dim}, ++seed);
      const Tensor v = random_tensor(Shape{c.batch * c.kv_len, c.kv_heads * c.head_dim}, ++seed);
      std::vector<int32_t> mask(static_cast<std::size_t>(c.batch * c.kv_len), 1);
      if (c.masked) {
        for (int64_t b = 1; b < c.batch; ++b) {  // sample 0 full; later samples padded at the end
          for (int64_t j = c.kv_len - b * (c.kv_len / 4 + 1); j < c.kv_len; ++j) {
            mask[static_cast<std::size_t>(b * c.kv_len + j)] = 0;
          }
        }
        if (c.batch == 1) mask[1] = 0;
      }
      Tensor ref(q.shape()), out(q.shape());
      poison(out.view());
      AttentionArgs a;
      a.q = q.view();
      a.k = k.view();
      a.v = v.view();
      a.batch = c.batch;
      a.q_len = c.q_len;
      a.kv_len = c.kv_len;
      a.heads = c.heads;
      a.kv_heads = c.kv_heads;
      a.head_dim = c.head_dim;
      a.key_mask = c.masked ? mask.data() : nullptr;
      a.causal = c.causal;
      a.q_offset = c.q_offset;
      a.out = ref.view();
      ASSERT_TRUE(cpu.attention(a).ok());
      a.out = out.view();
      const Status s = be.attention(a);
      ASSERT_TRUE(s.ok()) << s.message();
      ASSERT_TRUE(all_finite(out.view()));
      EXPECT_LE(nmse(out.view(), ref.view()), OpenClTolerance::kAttention);
    }
  }
}

TEST(OpenClBackend, AttentionGivesZeroRowsWhereEveryKeyIsMaskedAndValidatesArgs) {
  AM_REQUIRE_OPENCL_DEVICES(devices);
  OpenClBackend& be = backend_for(devices.front());
  const Tensor q = random_tensor(Shape{2 * 4, 8}, 700);
  const Tensor k = random_tensor(Shape{2 * 4, 8}, 701);
  const Tensor v = random_tensor(Shape{2 * 4, 8}, 702);
  std::vector<int32_t> mask = {1, 1, 0, 1, 0, 0, 0, 0};  // sample 1 has no key at all
  Tensor out(q.shape());
  poison(out.view());
  AttentionArgs a;
  a.q = q.view();
  a.k = k.view();
  a.v = v.view();
  a.out = out.view();
  a.batch = 2;
  a.q_len = 4;
  a.kv_len = 4;
  a.heads = 2;
  a.kv_heads = 2;
  a.head_dim = 4;
  a.key_mask = mask.data();
  ASSERT_TRUE(be.attention(a).ok());
  for (int64_t r = 0; r < 4; ++r) {
    for (int64_t c = 0; c < 8; ++c) EXPECT_TRUE(std::isfinite(out.row(r)[c]));
  }
  for (int64_t r = 4; r < 8; ++r) {
    for (int64_t c = 0; c < 8; ++c) EXPECT_EQ(out.row(r)[c], 0.0f);
  }
  a.kv_heads = 3;
  const Status bad = be.attention(a);
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("kv_heads"), std::string::npos);
}

TEST(OpenClBackend, CachesEachWeightOnceAndReleasesOnRequest) {
  AM_REQUIRE_OPENCL_DEVICES(devices);
  OpenClBackend& be = backend_for(devices.front());
  const ExecContext ctx = scalar_context();
  EXPECT_EQ(be.cached_weight_bytes(), 0u);
  const Linear layer = Linear::create(random_tensor(Shape{16, 64}, 800), random_tensor(Shape{16}, 801),
                                      WeightFormat::kQ8_0, ctx);
  const Tensor x = random_tensor(Shape{3, 64}, 802);
  Tensor y(Shape{3, 16});
  ASSERT_TRUE(be.linear(layer, x.view(), y.view()).ok());
  const std::size_t once = be.cached_weight_bytes();
  // q8_0 repacked: 16 rows x 2 blocks x (32 values + 4-byte scale) + 16 bias floats.
  EXPECT_EQ(once, 16u * 2u * (32u + 4u) + 16u * 4u);
  ASSERT_TRUE(be.linear(layer, x.view(), y.view()).ok());
  EXPECT_EQ(be.cached_weight_bytes(), once);
  be.release_cached_weights();
  EXPECT_EQ(be.cached_weight_bytes(), 0u);
}

}  // namespace
}  // namespace am::kernels
