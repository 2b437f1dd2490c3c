#version 450
#extension GL_GOOGLE_include_directive : require
// Activations to q8 blocks, the cpu reference's arithmetic
// (kernels/formats/quantized_activations.cpp): per block d = amax / 127, q = round-half-away(
// x * (1 / d)) clamped to +-127; a block holding NaN/Inf gets d = NaN and q = 0. Rows are
// zero-padded to whole blocks. One invocation per (row, block).
// Blocks of 32 for q8_0/q4_0/q4_1; with the define SUPER_BLOCK, of 256 for the k-quants (GGUF's
// q8_K). `xs` gets, per block, the int sum of its quants (blocks of 32) or the int sums of each
// 16 quants (blocks of 256: the bsum of the q2_k min term).
// Bindings: x [M*K] f32, xq [M*blocks*block/4] (4 int8 per word), xd [M*blocks], xs.
#include "common.glsl"
#if defined(SUPER_BLOCK)
const uint kBlock = 256u;
#else
const uint kBlock = 32u;
#endif
const uint kWords = kBlock / 4u;
const uint kSumGroup = kBlock == 32u ? 32u : 16u;
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
  const uint base = m * pc.K + b * kBlock;
  const uint n = min(kBlock, pc.K - b * kBlock);
  const uint sums = kBlock / kSumGroup;
  float amax = 0.0;
  bool finite = true;
  for (uint j = 0u; j < n; ++j) {
    const float v = x[base + j];
    finite = finite && !isnan(v) && !isinf(v);
    amax = max(amax, abs(v));
  }
  if (!finite) {
    xd[id] = nan_value();
    for (uint g = 0u; g < sums; ++g) xs[id * sums + g] = 0;
    for (uint w = 0u; w < kWords; ++w) xq[id * kWords + w] = 0u;
    return;
  }
  const float d = div_rn(amax, 127.0);
  const float inv = d != 0.0 ? div_rn(1.0, d) : 0.0;
  int total = 0;
  for (uint w = 0u; w < kWords; ++w) {
    uint word = 0u;
    for (uint c = 0u; c < 4u; ++c) {
      const uint j = w * 4u + c;
      precise float v = j < n ? x[base + j] * inv : 0.0;
      const float r = isnan(v) ? 0.0 : clamp(round_half_away(v), -127.0, 127.0);
      const int q = int(r);
      total += q;
      word |= (uint(q) & 0xFFu) << (8u * c);
    }
    xq[id * kWords + w] = word;
    if ((w + 1u) * 4u % kSumGroup == 0u) {
      xs[id * sums + (w * 4u) / kSumGroup] = total;
      total = 0;
    }
  }
  xd[id] = d;
}
