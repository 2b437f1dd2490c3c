#version 450
#extension GL_GOOGLE_include_directive : require
// Channels-last (NHWC) 2-D convolution (conv2d.h), one invocation per output element (pixel p of
// [batch * out_h * out_w], channel o), zero padding, in the cpu's direct order: acc = bias, then
// ky, kx, the group's input channels. Neighbouring invocations take neighbouring o: they read
// one x value (a broadcast) and neighbouring weights, rearranged at upload to
// w[((ky * kernel_w + kx) * cin_g + c) * out + o] (kernels/conv_weight_layout.h).
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer W { float w[]; };
layout(std430, binding = 2) readonly buffer B { float bias[]; };
layout(std430, binding = 3) writeonly buffer Y { float y[]; };
layout(push_constant) uniform P {
  uint total;  // batch * out_h * out_w * out
  uint height, width, out_h, out_w, cin, cout, kernel_h, kernel_w, stride, padding, groups, has_bias;
} pc;

void main() {
  const uint id = flat_group() * 256u + gl_LocalInvocationID.x;
  if (id >= pc.total) return;
  const uint o = id % pc.cout;
  const uint p = id / pc.cout;
  const uint ox = p % pc.out_w;
  const uint oy = (p / pc.out_w) % pc.out_h;
  const uint b = p / (pc.out_w * pc.out_h);
  const uint cin_g = pc.cin / pc.groups;
  const uint g = o / (pc.cout / pc.groups);
  float acc = pc.has_bias != 0u ? bias[o] : 0.0;
  for (uint ky = 0u; ky < pc.kernel_h; ++ky) {
    const int iy = int(oy * pc.stride + ky) - int(pc.padding);
    if (iy < 0 || iy >= int(pc.height)) continue;
    for (uint kx = 0u; kx < pc.kernel_w; ++kx) {
      const int ix = int(ox * pc.stride + kx) - int(pc.padding);
      if (ix < 0 || ix >= int(pc.width)) continue;
      const uint xrow = ((b * pc.height + uint(iy)) * pc.width + uint(ix)) * pc.cin + g * cin_g;
      const uint wrow = (ky * pc.kernel_w + kx) * cin_g * pc.cout + o;
      for (uint c = 0u; c < cin_g; ++c) acc += x[xrow + c] * w[wrow + c * pc.cout];
    }
  }
  y[id] = acc;
}
