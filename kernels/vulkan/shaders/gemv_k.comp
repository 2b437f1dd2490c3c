#version 450
#extension GL_GOOGLE_include_directive : require
// y[m, n] = x[m] · W[n] + bias[n] for the 2- and 3-bit k-quants (define Q2_K or Q3_K), the cpu
// reference's arithmetic (kernels/formats/dot_scalar.cpp) on activations from quantize_q8.comp
// with QBLOCK 256: per sub-block of 16 an int32 sum of x_q * quant, times the sub-block's integer
// scale; q2_k subtracts min * (sum of the sub-block's x_q); then times d * d_x (dmin * d_x).
//
// Layout (vk_weights.h): row n holds its super-blocks' payloads contiguously as words, the GGUF
// bytes without the halves: q2_k 20 words (qs[64], scales[16]), q3_k 27 words (hmask[32],
// qs[64], scales[12]); the half d (and q2_k dmin) of block b of row n at n * blocks + b in `wd`
// (`wm`), two per uint. GGUF's element order: element e = 128 h + 32 j + l (l < 32) has its two
// low bits at bit 2 j of qs byte 32 h + l (and q3_k its high bit at bit 4 h + j of hmask byte l),
// in sub-block e / 16.
// Work split: a unit is one (super-block, h, j) run of 32 elements (two sub-blocks): 8 words of
// activations against 8 words of qs (and of hmask). As gemv_q.comp: WG / LANES rows per
// work-group, the LANES invocations of a row take every LANES-th unit, then a shared-memory
// tree sums the row. Grid: (ceil(N / (WG/LANES)) split over x/y, M) in z.
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 128;
layout(constant_id = 1) const uint LANES = 32;
#if defined(Q2_K)
const uint kWords = 20u;
const uint kQs = 0u;
const uint kScales = 16u;
#else
const uint kWords = 27u;
const uint kHmask = 0u;
const uint kQs = 8u;
const uint kScales = 24u;
#endif
layout(std430, binding = 0) readonly buffer XQ { uint xq[]; };
layout(std430, binding = 1) readonly buffer XD { float xd[]; };
layout(std430, binding = 2) readonly buffer XS { int xs[]; };  // sums of each 16 x_q
layout(std430, binding = 3) readonly buffer WQ { uint wq[]; };
layout(std430, binding = 4) readonly buffer WD { uint wd[]; };
layout(std430, binding = 5) readonly buffer WM { uint wm[]; };
layout(std430, binding = 6) readonly buffer B { float bias[]; };
layout(std430, binding = 7) writeonly buffer Y { float y[]; };
layout(push_constant) uniform P { uint N; uint blocks; uint has_bias; } pc;
shared float partial[WG];

float half_at(uint i, bool second) {
  const vec2 h = unpackHalf2x16(second ? wm[i >> 1] : wd[i >> 1]);
  return (i & 1u) == 0u ? h.x : h.y;
}

uint byte_at(uint word_base, uint k) { return (wq[word_base + k / 4u] >> (8u * (k % 4u))) & 0xFFu; }

void main() {
  const uint lane = gl_LocalInvocationID.x % LANES;
  const uint n = flat_group() * (WG / LANES) + gl_LocalInvocationID.x / LANES;
  const uint m = gl_WorkGroupID.z;
  float acc = 0.0;
  if (n < pc.N) {
    for (uint unit = lane; unit < pc.blocks * 8u; unit += LANES) {
      const uint sb = unit / 8u;
      const uint h = (unit % 8u) / 4u;
      const uint j = unit % 4u;
      const uint xb = m * pc.blocks + sb;
      const uint xw = xb * 64u + 32u * h + 8u * j;
      const uint wb = (n * pc.blocks + sb) * kWords;
      int sub[2] = int[2](0, 0);
      for (uint i = 0u; i < 8u; ++i) {
        const uint xv = xq[xw + i];
        const uint qw = wq[wb + kQs + 8u * h + i];
#if defined(Q3_K)
        const uint hw = wq[wb + kHmask + i];
#endif
        int s = 0;
        for (uint c = 0u; c < 4u; ++c) {
          int q = int((qw >> (8u * c + 2u * j)) & 3u);
#if defined(Q3_K)
          q += int((hw >> (8u * c + 4u * h + j)) & 1u) * 4 - 4;
#endif
          s += bitfieldExtract(int(xv), int(8u * c), 8) * q;
        }
        sub[i / 4u] += s;
      }
      const uint s0 = 8u * h + 2u * j;
      const float dx = xd[xb];
#if defined(Q2_K)
      const uint sc0 = byte_at(wb + kScales, s0);
      const uint sc1 = byte_at(wb + kScales, s0 + 1u);
      const int isum = int(sc0 & 0xFu) * sub[0] + int(sc1 & 0xFu) * sub[1];
      const int msum = int(sc0 >> 4) * xs[xb * 16u + s0] + int(sc1 >> 4) * xs[xb * 16u + s0 + 1u];
      const uint wi = n * pc.blocks + sb;
      acc += float(isum) * (half_at(wi, false) * dx) - float(msum) * (half_at(wi, true) * dx);
#else
      int isum = 0;
      for (uint k = 0u; k < 2u; ++k) {
        const uint s = s0 + k;
        const uint low = s < 8u ? (byte_at(wb + kScales, s) & 0xFu) : (byte_at(wb + kScales, s - 8u) >> 4);
        const uint high = (byte_at(wb + kScales, 8u + s % 4u) >> (2u * (s / 4u))) & 3u;
        isum += (int(low | (high << 4)) - 32) * sub[k];
      }
      acc += float(isum) * (half_at(n * pc.blocks + sb, false) * dx);
#endif
    }
  }
  const uint t = gl_LocalInvocationID.x;
  partial[t] = acc;
  barrier();
  for (uint s = LANES / 2u; s > 0u; s >>= 1) {
    if (lane < s) partial[t] += partial[t + s];
    barrier();
  }
  if (lane == 0u && n < pc.N) y[m * pc.N + n] = partial[t] + (pc.has_bias != 0u ? bias[n] : 0.0);
}
