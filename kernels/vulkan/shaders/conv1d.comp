#version 450
#extension GL_GOOGLE_include_directive : require
// Channels-last 1-D convolution (conv1d.h), one invocation per output element (row r of
// [batch * out_len], channel o), in the cpu's order: y = bias, then for each tap in range, the
// group's input channels in order. Neighbouring invocations take neighbouring o, so they read
// one x value (a broadcast) and neighbouring weights: the weight was rearranged at upload to
// w[(tap * cin_g + c) * out + o] (kernels/conv_weight_layout.h).
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer W { float w[]; };
layout(std430, binding = 2) readonly buffer B { float bias[]; };
layout(std430, binding = 3) writeonly buffer Y { float y[]; };
layout(push_constant) uniform P {
  uint total;      // batch * out_len * out
  uint in_len, out_len, cin, cout, kernel, stride, dilation, pad_left, groups, has_bias;
} pc;

void main() {
  const uint id = flat_group() * 256u + gl_LocalInvocationID.x;
  if (id >= pc.total) return;
  const uint o = id % pc.cout;
  const uint r = id / pc.cout;
  const uint b = r / pc.out_len;
  const uint t_out = r % pc.out_len;
  const uint cin_g = pc.cin / pc.groups;
  const uint g = o / (pc.cout / pc.groups);
  float acc = pc.has_bias != 0u ? bias[o] : 0.0;
  for (uint t = 0u; t < pc.kernel; ++t) {
    const int t_in = int(t_out * pc.stride + t * pc.dilation) - int(pc.pad_left);
    if (t_in < 0 || t_in >= int(pc.in_len)) continue;
    const uint xrow = (b * pc.in_len + uint(t_in)) * pc.cin + g * cin_g;
    const uint wrow = t * cin_g * pc.cout + o;
    for (uint c = 0u; c < cin_g; ++c) acc += x[xrow + c] * w[wrow + c * pc.cout];
  }
  y[id] = acc;
}
