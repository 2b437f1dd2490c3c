// f16 / bf16 weights with many rows of X on the avx2 path go through OpenBLAS on weight tiles
// decoded to f32 (kernels/cpu/matmul.h); they must still give the reference's products.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "kernels/cpu/matmul.h"
#include "kernels/formats/weight_matrix.h"
#include "test_util.h"

namespace am::kernels {
namespace {

// Same exact products (f16 weights x f32 activations; bf16 x bf16), another f32 summation order.
constexpr double kReorderRelTol = 2e-5;

TEST(HalfWeightGemm, ManyRowsMatchTheScalarReferenceOnEveryPath) {
  ThreadPool pool(2);
  struct Shape3 {
    int64_t m, k, n;
  };
  // M at and past the OpenBLAS crossover; N past one 256-row weight tile with a partial one.
  const Shape3 shapes[] = {{f32_blas_min_rows(300, 300), 300, 300}, {70, 129, 513}};
  for (KernelPath path : available_kernel_paths()) {
    const ExecContext ctx{path, &pool};
    for (WeightFormat f : {WeightFormat::kF16, WeightFormat::kBF16}) {
      uint32_t seed = 500;
      for (const Shape3& s : shapes) {
        const Tensor x = testing::random_tensor(Shape{s.m, s.k}, seed++);
        const Tensor w = testing::random_tensor(Shape{s.n, s.k}, seed++, 0.02f);
        const Tensor bias = testing::random_tensor(Shape{s.n}, seed++, 0.02f);
        const WeightMatrix q = WeightMatrix::quantize(w.view(), f, ctx);
        Tensor want(Shape{s.m, s.n}), got(Shape{s.m, s.n});
        testing::poison(got.view());
        matmul_reference(x.view(), q, bias.data(), want.view());
        matmul(x.view(), q, bias.data(), got.view(), ctx);
        const Tensor wd = q.dequantize();
        for (int64_t i = 0; i < s.m; ++i) {
          for (int64_t j = 0; j < s.n; ++j) {
            double mag = std::fabs(bias.data()[j]);
            for (int64_t p = 0; p < s.k; ++p) mag += std::fabs(static_cast<double>(x.row(i)[p]) * wd.row(j)[p]);
            ASSERT_NEAR(got.row(i)[j], want.row(i)[j], kReorderRelTol * mag)
                << weight_format_name(f) << " " << kernel_path_name(path) << " M=" << s.m << " at " << i << "," << j;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace am::kernels
