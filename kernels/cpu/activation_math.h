// Constants of the vector exp and erf in activation_avx512.cpp / activation_avx2.cpp (see
// activation_kernels.h for the accuracy they give).
#pragma once

namespace am::kernels::detail::act_math {

// exp: arguments clamped so that 2^n stays a normal float (e^88.3 < FLT_MAX; e^-87.3 is
// FLT_MIN's order), a = n ln2 + r with ln2 split in two so n ln2 is exact for |n| <= 128.
inline constexpr float kExpMinArg = -87.3f;
inline constexpr float kExpMaxArg = 88.3f;
inline constexpr float kLog2E = 1.44269504088896341f;
inline constexpr float kLn2Hi = 0.693359375f;            // 8 significant bits
inline constexpr float kLn2Lo = -2.12194440054690583e-4f;  // ln2 - kLn2Hi
// e^r = sum r^k / k!, k = 0..7 (|r| <= 0.347: the first term left out is under 1e-8).
inline constexpr float kExpPoly[8] = {1.0f,        1.0f,         0.5f,          1.0f / 6.0f,
                                      1.0f / 24.f, 1.0f / 120.f, 1.0f / 720.0f, 1.0f / 5040.0f};

// erfc(z) ~ t (a1 + t (a2 + t (a3 + t (a4 + t a5)))) e^(-z^2), t = 1 / (1 + p z), z >= 0
// (Abramowitz & Stegun, Handbook of Mathematical Functions, 7.1.26).
inline constexpr float kErfP = 0.3275911f;
inline constexpr float kErfA[5] = {0.254829592f, -0.284496736f, 1.421413741f, -1.453152027f, 1.061405429f};
inline constexpr float kInvSqrt2 = 0.70710678118654752440f;

}  // namespace am::kernels::detail::act_math
