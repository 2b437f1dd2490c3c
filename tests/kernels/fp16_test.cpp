#include "kernels/formats/fp16.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace am::kernels {
namespace {

// Independent decoding of a finite half from its fields, in double.
double half_value(uint16_t h) {
  const int sign = (h & 0x8000) ? -1 : 1;
  const int exp = (h >> 10) & 0x1F;
  const int mant = h & 0x3FF;
  if (exp == 0) return sign * std::ldexp(static_cast<double>(mant), -24);
  return sign * std::ldexp(1.0 + mant / 1024.0, exp - 15);
}

bool is_nan_half(uint16_t h) { return ((h >> 10) & 0x1F) == 0x1F && (h & 0x3FF) != 0; }

TEST(Fp16, DecodesEveryHalfExactlyAndRoundTrips) {
  for (uint32_t i = 0; i < 65536; ++i) {
    const uint16_t h = static_cast<uint16_t>(i);
    const float f = fp16_to_fp32(h);
    const int exp = (h >> 10) & 0x1F;
    if (is_nan_half(h)) {
      ASSERT_TRUE(std::isnan(f)) << std::hex << h;
      ASSERT_EQ(std::signbit(f), (h & 0x8000) != 0) << std::hex << h;
      // Payload kept, quiet bit set: the same thing F16C hardware does.
      ASSERT_EQ(fp32_to_fp16(f), h | 0x0200) << std::hex << h;
      continue;
    }
    if (exp == 0x1F) {
      ASSERT_TRUE(std::isinf(f)) << std::hex << h;
    } else {
      ASSERT_EQ(static_cast<double>(f), half_value(h)) << std::hex << h;
    }
    ASSERT_EQ(fp32_to_fp16(f), h) << std::hex << h;
  }
}

TEST(Fp16, MidpointsBetweenNeighboursRoundToEven) {
  for (uint16_t h = 0; h < 0x7BFF; ++h) {  // every pair of adjacent finite positive halves
    const double lo = half_value(h), hi = half_value(static_cast<uint16_t>(h + 1));
    const float mid = static_cast<float>((lo + hi) / 2);  // exact: halves need 11 bits
    ASSERT_EQ(static_cast<double>(mid), (lo + hi) / 2);
    const uint16_t even = (h & 1) ? static_cast<uint16_t>(h + 1) : h;
    ASSERT_EQ(fp32_to_fp16(mid), even) << std::hex << h;
    ASSERT_EQ(fp32_to_fp16(-mid), even | 0x8000) << std::hex << h;
    ASSERT_EQ(fp32_to_fp16(std::nextafter(mid, 0.0f)), h) << std::hex << h;
    ASSERT_EQ(fp32_to_fp16(std::nextafter(mid, 1e9f)), h + 1) << std::hex << h;
  }
}

TEST(Fp16, RandomFloatsRoundToNearestHalf) {
  std::mt19937 gen(1234);
  std::uniform_real_distribution<float> exponent(-26.0f, 16.0f);
  std::uniform_real_distribution<float> mantissa(1.0f, 2.0f);
  for (int i = 0; i < 200000; ++i) {
    const float f =
        std::ldexp(mantissa(gen), static_cast<int>(exponent(gen))) * ((i & 1) ? -1.0f : 1.0f);
    const uint16_t h = fp32_to_fp16(f);
    if (std::fabs(f) >= 65520.0f) {
      ASSERT_EQ(h & 0x7FFF, 0x7C00) << f;
      continue;
    }
    const double err = std::fabs(static_cast<double>(f) - half_value(h));
    // Neither neighbour may be strictly closer.
    const uint16_t mag = h & 0x7FFF;
    if (mag < 0x7BFF) {
      ASSERT_LE(err, std::fabs(f - half_value(static_cast<uint16_t>(h + 1)))) << f;
    }
    if (mag > 0) {
      ASSERT_LE(err, std::fabs(f - half_value(static_cast<uint16_t>(h - 1)))) << f;
    }
    ASSERT_EQ(std::signbit(f), (h & 0x8000) != 0);
  }
}

TEST(Fp16, HandlesOverflowUnderflowAndSpecials) {
  EXPECT_EQ(fp32_to_fp16(65504.0f), 0x7BFF);
  EXPECT_EQ(fp32_to_fp16(65519.996f), 0x7BFF);
  EXPECT_EQ(fp32_to_fp16(65520.0f), 0x7C00);  // tie between 65504 and 2^16: to even = inf
  EXPECT_EQ(fp32_to_fp16(1e10f), 0x7C00);
  EXPECT_EQ(fp32_to_fp16(-1e10f), 0xFC00);
  EXPECT_EQ(fp32_to_fp16(INFINITY), 0x7C00);
  EXPECT_EQ(fp32_to_fp16(-INFINITY), 0xFC00);
  EXPECT_EQ(fp32_to_fp16(0x1p-24f), 0x0001);  // smallest subnormal
  EXPECT_EQ(fp32_to_fp16(0x1p-25f), 0x0000);  // exactly half of it: tie to even 0
  EXPECT_EQ(fp32_to_fp16(std::nextafter(0x1p-25f, 1.0f)), 0x0001);
  EXPECT_EQ(fp32_to_fp16(0x1.8p-24f), 0x0002);    // 1.5 units: tie to even 2
  EXPECT_EQ(fp32_to_fp16(0x1p-14f), 0x0400);      // smallest normal
  EXPECT_EQ(fp32_to_fp16(0x1.ff8p-15f), 0x03FF);  // largest subnormal
  EXPECT_EQ(fp32_to_fp16(0x1.ffcp-15f), 0x0400);  // ... plus half a unit: carries into normal
  EXPECT_EQ(fp32_to_fp16(1e-30f), 0x0000);
  EXPECT_EQ(fp32_to_fp16(-1e-30f), 0x8000);
  EXPECT_EQ(fp32_to_fp16(-0.0f), 0x8000);
  EXPECT_EQ(fp32_to_fp16(1.0f), 0x3C00);
  EXPECT_EQ(fp32_to_fp16(-2.0f), 0xC000);
  EXPECT_EQ(fp32_to_fp16(std::bit_cast<float>(0x7FC00000u)), 0x7E00);
  EXPECT_EQ(fp32_to_fp16(std::bit_cast<float>(0x7F800001u)), 0x7E00);  // signalling -> quiet
}

TEST(Fp16, F16cAndScalarRowsAgreeBitForBit) {
  if (!f16c_available()) GTEST_SKIP() << "CPU has no F16C";
  std::vector<uint16_t> halves(65536);
  for (uint32_t i = 0; i < 65536; ++i) halves[i] = static_cast<uint16_t>(i);
  std::vector<float> a(65536), b(65536);
  fp16_to_fp32_row_scalar(halves.data(), a.data(), 65536);
  fp16_to_fp32_row_f16c(halves.data(), b.data(), 65536);
  for (uint32_t i = 0; i < 65536; ++i) {
    ASSERT_EQ(std::bit_cast<uint32_t>(a[i]), std::bit_cast<uint32_t>(b[i])) << std::hex << i;
  }

  // Random bit patterns cover NaN payloads, infinities, subnormals and every rounding case;
  // an odd count exercises the scalar tail of the vector loop.
  std::mt19937 gen(99);
  std::vector<float> floats(100003);
  for (float& f : floats) f = std::bit_cast<float>(static_cast<uint32_t>(gen()));
  std::vector<uint16_t> hs(floats.size()), hv(floats.size());
  fp32_to_fp16_row_scalar(floats.data(), hs.data(), static_cast<int64_t>(floats.size()));
  fp32_to_fp16_row_f16c(floats.data(), hv.data(), static_cast<int64_t>(floats.size()));
  for (std::size_t i = 0; i < floats.size(); ++i) {
    ASSERT_EQ(hs[i], hv[i]) << std::hex << std::bit_cast<uint32_t>(floats[i]);
  }
}

TEST(Fp16, DispatchingRowFunctionsMatchScalar) {
  const std::vector<float> src = {0.0f, -1.5f, 3.14159f, 65504.0f, 1e-6f, -7e-8f, 70000.0f};
  std::vector<uint16_t> h(src.size());
  fp32_to_fp16_row(src.data(), h.data(), static_cast<int64_t>(src.size()));
  std::vector<float> back(src.size());
  fp16_to_fp32_row(h.data(), back.data(), static_cast<int64_t>(h.size()));
  for (std::size_t i = 0; i < src.size(); ++i) {
    EXPECT_EQ(h[i], fp32_to_fp16(src[i]));
    EXPECT_EQ(std::bit_cast<uint32_t>(back[i]), std::bit_cast<uint32_t>(fp16_to_fp32(h[i])));
  }
}

}  // namespace
}  // namespace am::kernels
