#version 450
#extension GL_GOOGLE_include_directive : require
// y[i] (+)= table[ids[i]] over `cols` columns; ids were range-checked on the host. With VEC4
// (cols a multiple of 4) each invocation moves four floats: `total` and `cols` count vec4s.
#include "common.glsl"
#ifdef VEC4
#define ELEM vec4
#else
#define ELEM float
#endif
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer T { ELEM table[]; };
layout(std430, binding = 1) readonly buffer I { int ids[]; };
layout(std430, binding = 2) buffer Yb { ELEM y[]; };
layout(push_constant) uniform P { uint total; uint cols; uint accumulate; } pc;

void main() {
  const uint e = flat_group() * 256u + gl_LocalInvocationID.x;
  if (e >= pc.total) return;
  const uint i = e / pc.cols;
  const uint c = e % pc.cols;
  const ELEM v = table[uint(ids[i]) * pc.cols + c];
  y[e] = pc.accumulate != 0u ? y[e] + v : v;
}
