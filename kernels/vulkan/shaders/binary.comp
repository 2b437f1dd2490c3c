#version 450
#extension GL_GOOGLE_include_directive : require
// y = y + a (op 0) or y * a (op 1), element-wise.
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer Yb { float y[]; };
layout(std430, binding = 1) readonly buffer A { float a[]; };
layout(push_constant) uniform P { uint n; uint op; } pc;

void main() {
  const uint i = flat_group() * 256u + gl_LocalInvocationID.x;
  if (i >= pc.n) return;
  y[i] = pc.op == 0u ? y[i] + a[i] : y[i] * a[i];
}
