#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
// Y = X · W^T + bias for M > 1 with float weights (define F32, F16 or BF16), tiled through
// shared memory: a work-group of 256 invocations computes a BM x BN = 128 x 128 tile of Y, each
// invocation an 8 x 8 block of it, walking K in steps of BK = 16. Per step every invocation loads
// 8 elements of the X tile and 8 of the W tile (8 consecutive k of one row: one or two 16-byte
// loads of W, since W rows are padded to KP), stores them k-major in shared memory, and per k
// does 64 FMAs from four 16-byte shared loads (two of X, broadcast within half-warps, and two of
// W): shared-memory traffic stays well below the FMA rate. Edges (M, N, K not multiples of the
// tile) load zeros.
// Grid: (ceil(N / BN), ceil(M / BM)).
#include "common.glsl"
layout(local_size_x = 256) in;
const uint BM = 128u;
const uint BN = 128u;
const uint BK = 16u;
const uint TM = 8u;
const uint TN = 8u;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer W { uvec4 w[]; };
layout(std430, binding = 2) readonly buffer B { float bias[]; };
layout(std430, binding = 3) writeonly buffer Y { float y[]; };
layout(push_constant) uniform P { uint M; uint N; uint K; uint KP; uint has_bias; } pc;
// 2 x 8 KiB: within the 16 KiB every Vulkan device offers. Element m of k-row k lives in
// component m % 4 of xs[k][m / 4].
shared vec4 xs[BK][BM / 4u];
shared vec4 ws[BK][BN / 4u];

float load_x(uint m, uint k) {
  if (m >= pc.M || k >= pc.K) return 0.0;
#if defined(BF16)
  return round_to_bf16(x[m * pc.K + k]);
#else
  return x[m * pc.K + k];
#endif
}

void main() {
  const uint t = gl_LocalInvocationID.x;
  const uint m0 = gl_WorkGroupID.y * BM;
  const uint n0 = gl_WorkGroupID.x * BN;
  // Loading: invocation t fills row t/2 of each tile, k half (t%2)*8 .. +8.
  const uint lrow = t / 2u;
  const uint lk = (t % 2u) * 8u;
  // Computing: invocation t owns rows 4 ty + i and 64 + 4 ty + i (i < 4) and columns 4 tx + j
  // and 64 + 4 tx + j: two vec4 of each tile per k.
  const uint tx = t % 16u;
  const uint ty = t / 16u;
  float acc[TM][TN];
  [[unroll]] for (uint i = 0u; i < TM; ++i)
    [[unroll]] for (uint j = 0u; j < TN; ++j) acc[i][j] = 0.0;

  for (uint k0 = 0u; k0 < pc.K; k0 += BK) {
    [[unroll]] for (uint i = 0u; i < 8u; ++i) xs[lk + i][lrow / 4u][lrow % 4u] = load_x(m0 + lrow, k0 + lk + i);
    const uint n = n0 + lrow;
    const uint kk = k0 + lk;
    float wv[8];
    if (n < pc.N && kk < pc.KP) {
#if defined(F32)
      const uint at = (n * pc.KP + kk) / 4u;
      const vec4 a = uintBitsToFloat(w[at]);
      // KP is a multiple of 4: the second chunk may be past the row only when kk + 4 >= KP.
      const vec4 b = kk + 4u < pc.KP ? uintBitsToFloat(w[at + 1u]) : vec4(0.0);
      wv = float[8](a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w);
#else
      const uvec4 v = w[(n * pc.KP + kk) / 8u];
      [[unroll]] for (uint i = 0u; i < 4u; ++i) {
#if defined(F16)
        const vec2 h = unpackHalf2x16(v[i]);
#else
        const vec2 h = vec2(uintBitsToFloat(v[i] << 16), uintBitsToFloat(v[i] & 0xFFFF0000u));
#endif
        wv[2u * i] = h.x;
        wv[2u * i + 1u] = h.y;
      }
#endif
    } else {
      [[unroll]] for (uint i = 0u; i < 8u; ++i) wv[i] = 0.0;
    }
    [[unroll]] for (uint i = 0u; i < 8u; ++i) ws[lk + i][lrow / 4u][lrow % 4u] = kk + i < pc.K ? wv[i] : 0.0;
    barrier();
    [[unroll]] for (uint k = 0u; k < BK; ++k) {
      const vec4 a0 = xs[k][ty];
      const vec4 a1 = xs[k][16u + ty];
      const vec4 b0 = ws[k][tx];
      const vec4 b1 = ws[k][16u + tx];
      const float a[TM] = float[TM](a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w);
      const float b[TN] = float[TN](b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w);
      [[unroll]] for (uint i = 0u; i < TM; ++i)
        [[unroll]] for (uint j = 0u; j < TN; ++j) acc[i][j] += a[i] * b[j];
    }
    barrier();
  }
  [[unroll]] for (uint i = 0u; i < TM; ++i) {
    const uint m = m0 + (i < 4u ? 4u * ty + i : 64u + 4u * ty + (i - 4u));
    if (m >= pc.M) continue;
    [[unroll]] for (uint j = 0u; j < TN; ++j) {
      const uint n = n0 + (j < 4u ? 4u * tx + j : 64u + 4u * tx + (j - 4u));
      if (n < pc.N) y[m * pc.N + n] = acc[i][j] + (pc.has_bias != 0u ? bias[n] : 0.0);
    }
  }
}
