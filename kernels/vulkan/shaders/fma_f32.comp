#version 450
#extension GL_GOOGLE_include_directive : require
// The fp32 FMA rate (Backend::fma_chain, contract in kernels/cpu/fma_chain.h with seed 0): every
// invocation runs CHAINS independent vec4 chains of `iterations` dependent FMAs (enough
// independent work to hide FMA latency), then writes their sum so the compiler keeps them.
// FMAs per invocation: CHAINS * 4 * iterations.
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) writeonly buffer O { float result[]; };
layout(push_constant) uniform P { uint iterations; float seed; uint count; } pc;
const uint CHAINS = 4u;

void main() {
  const uint i = flat_group() * 256u + gl_LocalInvocationID.x;
  if (i >= pc.count) return;
  const float s = float(i) * 1e-7 + pc.seed;
  vec4 a[CHAINS];
  for (uint c = 0u; c < CHAINS; ++c) {
    a[c] = vec4(s + 0.25 * float(4u * c), s + 0.25 * float(4u * c + 1u), s + 0.25 * float(4u * c + 2u),
                s + 0.25 * float(4u * c + 3u));
  }
  const vec4 mul = vec4(0.999999);
  const vec4 add = vec4(1e-6);
  for (uint it = 0u; it < pc.iterations; ++it) {
    for (uint c = 0u; c < CHAINS; ++c) a[c] = fma(a[c], mul, add);
  }
  vec4 sum = vec4(0.0);
  for (uint c = 0u; c < CHAINS; ++c) sum += a[c];
  result[i] = ((sum.x + sum.y) + sum.z) + sum.w;
}
