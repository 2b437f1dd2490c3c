#include "kernels/cpu/matmul.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "kernels/formats/bf16.h"
#include "kernels/formats/quantized_activations.h"
#include "kernels/formats/dot_kernels.h"
#include "test_util.h"

namespace am::kernels {
namespace {

// Summation-order tolerance, relative to sum |x_i w_i| (which bounds every partial sum): the
// paths add the same exact int32 block sums (or the same f32 products) in another order, with
// FMA, so they differ by a few f32 roundings of the running sum.
constexpr double kReorderRelTol = 2e-5;

// NMSE of Y = X W^T against the f32 product, for Gaussian X and W (both quantized where the
// format quantizes activations). Measured on this shape: f16 4.9e-8, bf16 6.0e-6 (activations
// rounded too), q8_0 5.8e-5, q4_0 8.0e-3, q4_1 7.0e-3, q3_k 2.5e-2, q2_k 9.0e-2; the bounds
// leave a 1.5x margin (more for the tiny float-format errors).
struct FormatTolerance {
  WeightFormat format;
  double max_nmse;
};
constexpr FormatTolerance kNmseVsF32[] = {
    {WeightFormat::kF16, 2e-7},   {WeightFormat::kBF16, 2e-5},    {WeightFormat::kQ8_0, 1e-4},
    {WeightFormat::kQ4_0, 1.2e-2}, {WeightFormat::kQ4_1, 1.1e-2}, {WeightFormat::kQ3_K, 3.8e-2},
    {WeightFormat::kQ2_K, 0.135},
};

struct Shape3 {
  int64_t m, k, n;
};

std::string describe(const Shape3& s) {
  return "M=" + std::to_string(s.m) + " K=" + std::to_string(s.k) + " N=" + std::to_string(s.n);
}

std::vector<WeightFormat> quantized_formats() {
  std::vector<WeightFormat> f;
  for (WeightFormat w : all_weight_formats()) {
    if (w != WeightFormat::kF32) f.push_back(w);
  }
  return f;
}

std::string label(WeightFormat f, KernelPath p, const Shape3& s) {
  return std::string(weight_format_name(f)) + " " + std::string(kernel_path_name(p)) + " " + describe(s);
}

double magnitude(const float* x, const float* w, int64_t k, float bias) {
  double mag = std::fabs(bias);
  for (int64_t p = 0; p < k; ++p) mag += std::fabs(static_cast<double>(x[p]) * w[p]);
  return mag;
}

TEST(MatmulF32, MatchesNaiveTripleLoopWithAndWithoutBias) {
  ThreadPool pool(2);
  const ExecContext ctx{best_kernel_path(), &pool};
  for (const Shape3& s : {Shape3{1, 32, 1}, Shape3{3, 100, 5}, Shape3{17, 257, 64}}) {
    const Tensor x = testing::random_tensor(Shape{s.m, s.k}, 1);
    const Tensor w = testing::random_tensor(Shape{s.n, s.k}, 2);
    const Tensor bias = testing::random_tensor(Shape{s.n}, 3);
    for (bool with_bias : {false, true}) {
      Tensor y(Shape{s.m, s.n});
      testing::poison(y.view());
      matmul_f32(x.view(), w.view(), with_bias ? bias.data() : nullptr, y.view(), ctx);
      for (int64_t i = 0; i < s.m; ++i) {
        for (int64_t j = 0; j < s.n; ++j) {
          double ref = with_bias ? bias.data()[j] : 0.0;
          for (int64_t p = 0; p < s.k; ++p) ref += static_cast<double>(x.row(i)[p]) * w.row(j)[p];
          ASSERT_NEAR(y.row(i)[j], ref, kReorderRelTol * magnitude(x.row(i), w.row(j), s.k, 3.0f))
              << describe(s);
        }
      }
    }
  }
}

// The values the format's kernels multiply X by: bf16-rounded rows, dequantized 8-bit blocks,
// or X itself.
std::vector<float> activations_as_seen(const float* x, int64_t k, WeightFormat f) {
  std::vector<float> out(x, x + k);
  switch (activation_kind(f)) {
    case ActivationKind::kF32:
      break;
    case ActivationKind::kBf16:
      for (float& v : out) v = round_to_bf16(v);
      break;
    case ActivationKind::kQ8Block32:
    case ActivationKind::kQ8Block256: {
      const int64_t block = activation_kind(f) == ActivationKind::kQ8Block32 ? 32 : 256;
      const int64_t blocks = (k + block - 1) / block;
      std::vector<int8_t> q(blocks * block);
      std::vector<float> d(blocks);
      std::vector<int32_t> sum(blocks);
      std::vector<int16_t> bsum(blocks * block / 16);
      quantize_activation_row_ref(x, k, block, q.data(), d.data(), sum.data(), bsum.data());
      for (int64_t i = 0; i < k; ++i) out[i] = d[i / block] * q[i];
      break;
    }
  }
  return out;
}

// The scalar reference computes exactly sum(seen(x) * dequant(w)): checked in double, so the
// reference the SIMD paths are held to is itself right.
TEST(MatmulReference, EqualsDotOfDequantizedOperandsForEveryFormat) {
  for (WeightFormat f : quantized_formats()) {
    for (const Shape3& s : {Shape3{2, 32, 3}, Shape3{3, 300, 7}, Shape3{1, 520, 4}}) {
      const Tensor x = testing::random_tensor(Shape{s.m, s.k}, 10);
      const Tensor w = testing::random_tensor(Shape{s.n, s.k}, 11, 0.05f);
      const Tensor bias = testing::random_tensor(Shape{s.n}, 12, 0.05f);
      const WeightMatrix wq = WeightMatrix::quantize(w.view(), f, ExecContext{});
      const Tensor wd = wq.dequantize();
      Tensor y(Shape{s.m, s.n});
      testing::poison(y.view());
      matmul_reference(x.view(), wq, bias.data(), y.view());
      for (int64_t i = 0; i < s.m; ++i) {
        const std::vector<float> xs = activations_as_seen(x.row(i), s.k, f);
        for (int64_t j = 0; j < s.n; ++j) {
          double ref = bias.data()[j];
          for (int64_t p = 0; p < s.k; ++p) ref += static_cast<double>(xs[p]) * wd.row(j)[p];
          ASSERT_NEAR(y.row(i)[j], ref, kReorderRelTol * magnitude(xs.data(), wd.row(j), s.k, bias.data()[j]))
              << weight_format_name(f) << " " << describe(s);
        }
      }
    }
  }
}

// Shapes that cover: GEMV (M = 1), the row-dot path (M < kGemmMinRows), the GEMM path with
// partial register tiles and column panels, K that is not a multiple of 32 or 256, and N that
// is not a multiple of the kernels' row groups.
std::vector<Shape3> path_shapes() {
  return {{1, 32, 1},    {1, 100, 37},  {1, 256, 16},  {3, 520, 9},   {kGemmMinRows, 64, 33},
          {13, 300, 70}, {37, 96, 130}, {9, 1000, 5},  {64, 2100, 48}};
}

TEST(Matmul, EveryPathMatchesTheScalarReferenceAndWritesEveryOutput) {
  ThreadPool pool(3);
  for (KernelPath path : available_kernel_paths()) {
    for (WeightFormat f : quantized_formats()) {
      for (const Shape3& s : path_shapes()) {
        const Tensor x = testing::random_tensor(Shape{s.m, s.k}, 20);
        const Tensor w = testing::random_tensor(Shape{s.n, s.k}, 21, 0.05f);
        const Tensor bias = testing::random_tensor(Shape{s.n}, 22, 0.05f);
        const WeightMatrix wq = WeightMatrix::quantize(w.view(), f, ExecContext{path, &pool});
        Tensor ref(Shape{s.m, s.n}), got(Shape{s.m, s.n});
        testing::poison(ref.view());
        testing::poison(got.view());
        matmul_reference(x.view(), wq, bias.data(), ref.view());
        matmul(x.view(), wq, bias.data(), got.view(), ExecContext{path, &pool});
        ASSERT_TRUE(testing::all_finite(got.view())) << label(f, path, s);
        for (int64_t i = 0; i < s.m; ++i) {
          for (int64_t j = 0; j < s.n; ++j) {
            const double tol = kReorderRelTol * magnitude(x.row(i), w.row(j), s.k, bias.data()[j]) * 1.5 + 1e-6;
            ASSERT_NEAR(got.row(i)[j], ref.row(i)[j], tol)
                << label(f, path, s) << " i=" << i << " j=" << j;
          }
        }
      }
    }
  }
}

// The blocked GEMM itself (not the row-dot fallback) handles every non-f32 format, including
// several K chunks, column tasks, and partial register tiles in both directions.
TEST(Matmul, BlockedAvx512GemmHandlesEveryFormat) {
  if (!kernel_path_available(KernelPath::kAvx512)) GTEST_SKIP() << "no AVX-512 VNNI";
  ThreadPool pool(2);
  const ExecContext ctx{KernelPath::kAvx512, &pool};
  const Shape3 s{kGemmMinRows + 7, 4400, 200};
  const Tensor x = testing::random_tensor(Shape{s.m, s.k}, 70);
  const Tensor w = testing::random_tensor(Shape{s.n, s.k}, 71, 0.02f);
  for (WeightFormat f : quantized_formats()) {
    const WeightMatrix wq = WeightMatrix::quantize(w.view(), f, ctx);
    PreparedActivations a;
    a.prepare(x.view(), f, ctx);
    Tensor ref(Shape{s.m, s.n}), got(Shape{s.m, s.n});
    testing::poison(got.view());
    matmul_reference(x.view(), wq, nullptr, ref.view());
    ASSERT_TRUE(detail::gemm_avx512(a, f, wq.data(), wq.row_bytes(), wq.rows(), got.data(), s.n, ctx))
        << weight_format_name(f);
    for (int64_t i = 0; i < s.m; ++i) {
      for (int64_t j = 0; j < s.n; ++j) {
        ASSERT_NEAR(got.row(i)[j], ref.row(i)[j], kReorderRelTol * magnitude(x.row(i), w.row(j), s.k, 0.0f) * 1.5)
            << label(f, KernelPath::kAvx512, s) << " i=" << i << " j=" << j;
      }
    }
  }
}

TEST(Matmul, ResultDoesNotDependOnThreadCount) {
  for (WeightFormat f : quantized_formats()) {
    for (const Shape3& s : {Shape3{1, 600, 131}, Shape3{40, 600, 131}}) {
      const Tensor x = testing::random_tensor(Shape{s.m, s.k}, 30);
      const Tensor w = testing::random_tensor(Shape{s.n, s.k}, 31, 0.02f);
      for (KernelPath path : available_kernel_paths()) {
        const WeightMatrix wq = WeightMatrix::quantize(w.view(), f, ExecContext{path, nullptr});
        Tensor one(Shape{s.m, s.n}), many(Shape{s.m, s.n});
        matmul(x.view(), wq, nullptr, one.view(), ExecContext{path, nullptr});
        ThreadPool pool(4);
        matmul(x.view(), wq, nullptr, many.view(), ExecContext{path, &pool});
        EXPECT_EQ(std::memcmp(one.data(), many.data(), one.bytes()), 0) << label(f, path, s);
      }
    }
  }
}

TEST(Matmul, EveryFormatStaysWithinItsNamedToleranceOfF32) {
  const Shape3 s{16, 1024, 48};
  const Tensor x = testing::random_tensor(Shape{s.m, s.k}, 40);
  const Tensor w = testing::random_tensor(Shape{s.n, s.k}, 41, 0.02f);
  Tensor yf(Shape{s.m, s.n});
  matmul_f32(x.view(), w.view(), nullptr, yf.view(), ExecContext{best_kernel_path(), nullptr});
  for (const FormatTolerance& t : kNmseVsF32) {
    for (KernelPath path : available_kernel_paths()) {
      const WeightMatrix wq = WeightMatrix::quantize(w.view(), t.format, ExecContext{path, nullptr});
      Tensor yq(Shape{s.m, s.n});
      matmul(x.view(), wq, nullptr, yq.view(), ExecContext{path, nullptr});
      double err = 0.0, ref = 0.0;
      for (int64_t i = 0; i < yf.numel(); ++i) {
        err += std::pow(static_cast<double>(yq.data()[i]) - yf.data()[i], 2);
        ref += std::pow(static_cast<double>(yf.data()[i]), 2);
      }
      EXPECT_GT(err / ref, 0.0) << weight_format_name(t.format);
      EXPECT_LT(err / ref, t.max_nmse) << weight_format_name(t.format) << " " << kernel_path_name(path);
    }
  }
}

TEST(Matmul, NanInActivationsPoisonsOnlyItsRow) {
  for (int64_t m : {int64_t{2}, kGemmMinRows + 1}) {
    Tensor x = testing::random_tensor(Shape{m, 300}, 50);
    x.row(1)[260] = std::numeric_limits<float>::quiet_NaN();
    const Tensor w = testing::random_tensor(Shape{20, 300}, 51, 0.02f);
    for (KernelPath path : available_kernel_paths()) {
      for (WeightFormat f : quantized_formats()) {
        const WeightMatrix wq = WeightMatrix::quantize(w.view(), f, ExecContext{path, nullptr});
        Tensor y(Shape{m, 20});
        matmul(x.view(), wq, nullptr, y.view(), ExecContext{path, nullptr});
        for (int64_t i = 0; i < m; ++i) {
          for (int64_t j = 0; j < 20; ++j) {
            ASSERT_EQ(std::isnan(y.row(i)[j]), i == 1) << label(f, path, Shape3{m, 300, 20}) << " i=" << i;
          }
        }
      }
    }
  }
}

TEST(Matmul, F32WeightMatrixTakesTheF32Path) {
  const Tensor x = testing::random_tensor(Shape{4, 50}, 60);
  const Tensor w = testing::random_tensor(Shape{6, 50}, 61);
  const WeightMatrix wm = WeightMatrix::quantize(w.view(), WeightFormat::kF32, ExecContext{});
  Tensor a(Shape{4, 6}), b(Shape{4, 6});
  const ExecContext ctx{best_kernel_path(), nullptr};
  matmul_f32(x.view(), w.view(), nullptr, a.view(), ctx);
  matmul(x.view(), wm, nullptr, b.view(), ctx);
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.bytes()), 0);
}

}  // namespace
}  // namespace am::kernels
