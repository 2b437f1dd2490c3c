#version 450
#extension GL_GOOGLE_include_directive : require
// In place: kind 0 gelu (erf), 1 gelu (tanh), 2 relu (NaN passes through), 3 silu, 4 sigmoid,
// 5 quick_gelu (x * sigmoid(1.702 x)). GLSL has no erf: erf_approx() below.
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer X { float x[]; };
layout(push_constant) uniform P { uint n; uint kind; } pc;

// erf with |error| < 1.2e-7 (Numerical Recipes' erfc Chebyshev fit), evaluated in float:
// gelu's error then stays near float rounding (NMSE ~1e-14 against the cpu's erff).
float erf_approx(float v) {
  const float z = abs(v);
  const float t = 1.0 / (1.0 + 0.5 * z);
  const float r = t * exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 +
                  t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 +
                  t * (-0.82215223 + t * 0.17087277)))))))));
  return v >= 0.0 ? 1.0 - r : r - 1.0;
}

void main() {
  const uint i = flat_group() * 256u + gl_LocalInvocationID.x;
  if (i >= pc.n) return;
  const float v = x[i];
  float r;
  if (pc.kind == 0u) {
    r = 0.5 * v * (1.0 + erf_approx(v * 0.70710678118654752440));
  } else if (pc.kind == 1u) {
    r = 0.5 * v * (1.0 + tanh(0.79788456080286535588 * (v + 0.044715 * v * v * v)));
  } else if (pc.kind == 2u) {
    // Not `v < 0.0 ? 0.0 : v`: NVIDIA's compiler turns that into max(v, 0.0), which drops NaN
    // (Vulkan does not promise NaN-preserving float arithmetic); the bit test is integer math.
    r = is_nan_bits(v) ? v : max(v, 0.0);
  } else if (pc.kind == 3u) {
    r = v / (1.0 + exp(-v));
  } else if (pc.kind == 4u) {
    r = 1.0 / (1.0 + exp(-v));
  } else {
    r = v * (1.0 / (1.0 + exp(-1.702 * v)));
  }
  x[i] = r;
}
