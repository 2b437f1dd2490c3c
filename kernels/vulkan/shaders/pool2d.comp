#version 450
#extension GL_GOOGLE_include_directive : require
// Max / average pooling over channels-last activations (pool2d.h), one invocation per output
// element (pixel p of [batch * out_h * out_w], channel c): the window in the cpu's order (ky,
// kx), padded positions ignored; average divides by the in-bounds count (count_include_pad
// false), as the sum times 1/count like the cpu (1/count correctly rounded, div_rn).
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform P {
  uint total;  // batch * out_h * out_w * channels
  uint height, width, out_h, out_w, channels, kernel, stride, padding, is_max;
} pc;

void main() {
  const uint id = flat_group() * 256u + gl_LocalInvocationID.x;
  if (id >= pc.total) return;
  const uint c = id % pc.channels;
  const uint p = id / pc.channels;
  const uint ox = p % pc.out_w;
  const uint oy = (p / pc.out_w) % pc.out_h;
  const uint b = p / (pc.out_w * pc.out_h);
  float acc = pc.is_max != 0u ? uintBitsToFloat(0xFF800000u) : 0.0;  // -inf
  uint count = 0u;
  for (uint ky = 0u; ky < pc.kernel; ++ky) {
    const int iy = int(oy * pc.stride + ky) - int(pc.padding);
    if (iy < 0 || iy >= int(pc.height)) continue;
    for (uint kx = 0u; kx < pc.kernel; ++kx) {
      const int ix = int(ox * pc.stride + kx) - int(pc.padding);
      if (ix < 0 || ix >= int(pc.width)) continue;
      const float v = x[((b * pc.height + uint(iy)) * pc.width + uint(ix)) * pc.channels + c];
      ++count;
      // The cpu's `v > acc ? v : acc`: a NaN never replaces the running maximum.
      acc = pc.is_max != 0u ? (v > acc ? v : acc) : acc + v;
    }
  }
  y[id] = pc.is_max != 0u ? acc : acc * div_rn(1.0, float(count));
}
