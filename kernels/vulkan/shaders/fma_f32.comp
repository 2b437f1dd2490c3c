#version 450
// The bench's fp32 FMA rate: every invocation runs CHAINS independent dependent-FMA chains of
// `iterations` steps (enough independent work to hide FMA latency), then writes their sum so
// the compiler keeps them. FMAs per invocation: CHAINS * 4 * iterations (vec4 chains).
layout(local_size_x = 256) in;
layout(std430, binding = 0) writeonly buffer O { float result[]; };
layout(push_constant) uniform P { uint iterations; float seed; } pc;
const uint CHAINS = 4u;

void main() {
  const float s = float(gl_GlobalInvocationID.x) * 1e-7 + pc.seed;
  vec4 a[CHAINS];
  for (uint c = 0u; c < CHAINS; ++c) a[c] = vec4(s + float(c), s - float(c), s * 0.5, s * 0.25);
  const vec4 mul = vec4(0.999999);
  const vec4 add = vec4(1e-6);
  for (uint i = 0u; i < pc.iterations; ++i) {
    for (uint c = 0u; c < CHAINS; ++c) a[c] = fma(a[c], mul, add);
  }
  vec4 sum = vec4(0.0);
  for (uint c = 0u; c < CHAINS; ++c) sum += a[c];
  result[gl_GlobalInvocationID.x] = sum.x + sum.y + sum.z + sum.w;
}
