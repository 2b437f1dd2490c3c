#version 450
#extension GL_GOOGLE_include_directive : require
// Activations to q8 blocks of 32, the cpu reference's arithmetic
// (kernels/formats/quantized_activations.cpp): per block d = amax / 127, q = round-half-away(
// x * (1 / d)) clamped to +-127, and the int sum of q; a block holding NaN/Inf gets d = NaN and
// q = 0. Rows are zero-padded to whole blocks. One invocation per (row, block).
// Bindings: x [M*K] f32, xq [M*blocks*8] (4 int8 per word), xd [M*blocks], xs [M*blocks].
#include "common.glsl"
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer XQ { uint xq[]; };
layout(std430, binding = 2) writeonly buffer XD { float xd[]; };
layout(std430, binding = 3) writeonly buffer XS { int xs[]; };
layout(push_constant) uniform P { uint K; uint blocks; uint total; } pc;

void main() {
  const uint id = flat_group() * 64u + gl_LocalInvocationID.x;
  if (id >= pc.total) return;
  const uint m = id / pc.blocks;
  const uint b = id % pc.blocks;
  const uint base = m * pc.K + b * 32u;
  const uint n = min(32u, pc.K - b * 32u);
  float amax = 0.0;
  bool finite = true;
  for (uint j = 0u; j < n; ++j) {
    const float v = x[base + j];
    finite = finite && !isnan(v) && !isinf(v);
    amax = max(amax, abs(v));
  }
  if (!finite) {
    xd[id] = nan_value();
    xs[id] = 0;
    for (uint w = 0u; w < 8u; ++w) xq[id * 8u + w] = 0u;
    return;
  }
  const float d = div_rn(amax, 127.0);
  const float inv = d != 0.0 ? div_rn(1.0, d) : 0.0;
  int total = 0;
  for (uint w = 0u; w < 8u; ++w) {
    uint word = 0u;
    for (uint c = 0u; c < 4u; ++c) {
      const uint j = w * 4u + c;
      precise float v = j < n ? x[base + j] * inv : 0.0;
      const float r = isnan(v) ? 0.0 : clamp(round_half_away(v), -127.0, 127.0);
      const int q = int(r);
      total += q;
      word |= (uint(q) & 0xFFu) << (8u * c);
    }
    xq[id * 8u + w] = word;
  }
  xd[id] = d;
  xs[id] = total;
}
