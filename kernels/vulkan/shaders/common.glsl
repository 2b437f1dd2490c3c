// Shared by the compute shaders (included with GL_GOOGLE_include_directive).
//
// Grids: a dispatch of more than maxComputeWorkGroupCount[0] groups is split over y by the host
// (vk_ops.cpp, groups_2d); flat_group() is the linear index of this work-group.
uint flat_group() { return gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x; }

float nan_value() { return uintBitsToFloat(0x7FC00000u); }

// NaN by its bits: a float isnan() may be folded away where the device assumes no NaNs.
bool is_nan_bits(float v) { return (floatBitsToUint(v) & 0x7FFFFFFFu) > 0x7F800000u; }

// bf16 -> f32 is exact (the top half of the bits); f32 -> bf16 rounds to nearest even and keeps
// NaN a quiet NaN, like kernels/formats/bf16.h.
float round_to_bf16(float f) {
  uint x = floatBitsToUint(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return uintBitsToFloat((x | 0x00400000u) & 0xFFFF0000u);
  x += 0x7FFFu + ((x >> 16) & 1u);
  return uintBitsToFloat(x & 0xFFFF0000u);
}

// ---- correctly rounded division ------------------------------------------------------------
// Vulkan lets a/b be off by 2.5 ULP, but the q8 activation scales must be the bits the cpu
// computes (amax / 127, then 1 / d), or a quant flips and the block sum differs. The device's
// quotient is corrected by comparing the exact residuals a - b*q of its neighbours (Dekker's
// exact product; `precise` forbids contraction into fma and reassociation).
void two_product(float a, float b, out precise float p, out precise float e) {
  precise float ca = 4097.0 * a;
  precise float ah = ca - (ca - a);
  precise float al = a - ah;
  precise float cb = 4097.0 * b;
  precise float bh = cb - (cb - b);
  precise float bl = b - bh;
  p = a * b;
  e = ((ah * bh - p) + ah * bl + al * bh) + al * bl;
}

float abs_residual(float a, float b, float q) {
  precise float p, e;
  two_product(b, q, p, e);
  precise float r = (a - p) - e;
  return abs(r);
}

float next_up(float q) { return uintBitsToFloat(floatBitsToUint(q) + 1u); }
float next_down(float q) { return uintBitsToFloat(floatBitsToUint(q) - 1u); }

// a / b rounded to nearest for finite positive a, b with a quotient well inside the normal range.
float div_rn(float a, float b) {
  precise float q = a / b;
  if (isinf(q) || q == 0.0 || isinf(4097.0 * q) || isinf(4097.0 * b)) return q;
  float best = q;
  float best_r = abs_residual(a, b, q);
  float c = q;
  for (int i = 0; i < 2; ++i) {
    c = next_down(c);
    float r = abs_residual(a, b, c);
    if (r < best_r) { best = c; best_r = r; }
  }
  c = q;
  for (int i = 0; i < 2; ++i) {
    c = next_up(c);
    float r = abs_residual(a, b, c);
    if (r < best_r) { best = c; best_r = r; }
  }
  return best;
}

// std::round: halves away from zero (GLSL's round() may pick either way).
float round_half_away(float v) {
  precise float t = trunc(v);
  if (abs(v - t) >= 0.5) t += sign(v);
  return t;
}
