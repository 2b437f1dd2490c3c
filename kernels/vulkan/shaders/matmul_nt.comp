#version 450
#extension GL_GOOGLE_include_directive : require
// y[m, n] = scale * (a[m] . b[n]) over activations (matmul_nt.h), one invocation per output.
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer A { float a[]; };
layout(std430, binding = 1) readonly buffer B { float b[]; };
layout(std430, binding = 2) writeonly buffer Yb { float y[]; };
layout(push_constant) uniform P { uint M; uint N; uint K; float scale; } pc;

void main() {
  const uint id = flat_group() * 256u + gl_LocalInvocationID.x;
  if (id >= pc.M * pc.N) return;
  const uint m = id / pc.N;
  const uint n = id % pc.N;
  float acc = 0.0;
  for (uint k = 0u; k < pc.K; ++k) acc += a[m * pc.K + k] * b[n * pc.K + k];
  y[id] = pc.scale * acc;
}
