#version 450
#extension GL_GOOGLE_include_directive : require
// y[ids[i]] += scales[i] * x[i] (routing.h), one invocation per column walking i in order, so
// repeated ids accumulate in the cpu's order and never race.
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer I { int ids[]; };
layout(std430, binding = 2) readonly buffer S { float scales[]; };
layout(std430, binding = 3) buffer Yb { float y[]; };
layout(push_constant) uniform P { uint n; uint cols; } pc;

void main() {
  const uint c = flat_group() * 256u + gl_LocalInvocationID.x;
  if (c >= pc.cols) return;
  for (uint i = 0u; i < pc.n; ++i) {
    const uint at = uint(ids[i]) * pc.cols + c;
    y[at] = y[at] + scales[i] * x[i * pc.cols + c];
  }
}
