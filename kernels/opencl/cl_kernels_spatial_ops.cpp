#include "kernels/opencl/cl_kernels.h"

namespace am::kernels::opencl {
namespace {

// Compiled together with opencl_kernel_source() (same program, same build options): the ops of
// the vision, speech, diffusion and state-space families and the k-quant matmuls. Each kernel
// follows the cpu reference's formula (and, where the cpu has one fixed order, its order of
// summation); see the op's header in kernels/cpu/.
constexpr std::string_view kSource = R"CLC(
// ---------------------------------------------------------------- convolutions (conv1d.h, conv2d.h)
// Channels-last, one work-item per output element (row of the output, channel o), o fastest:
// neighbouring work-items read one x value and neighbouring weights, which the host rearranged
// to w[(tap * cin_g + c) * cout + o] (kernels/conv_weight_layout.h). y = bias, then per tap in
// range the group's input channels in order (the cpu's order).
__kernel void conv1d(__global const float* x, __global const float* w, __global const float* bias,
                     int has_bias, __global float* y, int total, int in_len, int out_len, int cin,
                     int cout, int taps, int stride, int dilation, int pad_left, int groups) {
  const int id = get_global_id(0);
  if (id >= total) return;
  const int o = id % cout;
  const int r = id / cout;
  const int b = r / out_len;
  const int t_out = r % out_len;
  const int cin_g = cin / groups;
  const int g = o / (cout / groups);
  float acc = has_bias ? bias[o] : 0.0f;
  for (int t = 0; t < taps; ++t) {
    const int t_in = t_out * stride + t * dilation - pad_left;
    if (t_in < 0 || t_in >= in_len) continue;
    __global const float* xr = x + ((size_t)b * in_len + t_in) * cin + g * cin_g;
    __global const float* wr = w + (size_t)t * cin_g * cout + o;
    for (int c = 0; c < cin_g; ++c) acc += xr[c] * wr[(size_t)c * cout];
  }
  y[id] = acc;
}

// NHWC, zero padding, the cpu's direct order: acc = bias, then ky, kx, the group's channels.
__kernel void conv2d(__global const float* x, __global const float* w, __global const float* bias,
                     int has_bias, __global float* y, int total, int height, int width, int out_h,
                     int out_w, int cin, int cout, int kernel_h, int kernel_w, int stride, int padding,
                     int groups) {
  const int id = get_global_id(0);
  if (id >= total) return;
  const int o = id % cout;
  const int p = id / cout;
  const int ox = p % out_w;
  const int oy = (p / out_w) % out_h;
  const int b = p / (out_w * out_h);
  const int cin_g = cin / groups;
  const int g = o / (cout / groups);
  float acc = has_bias ? bias[o] : 0.0f;
  for (int ky = 0; ky < kernel_h; ++ky) {
    const int iy = oy * stride - padding + ky;
    if (iy < 0 || iy >= height) continue;
    for (int kx = 0; kx < kernel_w; ++kx) {
      const int ix = ox * stride - padding + kx;
      if (ix < 0 || ix >= width) continue;
      __global const float* xr = x + (((size_t)b * height + iy) * width + ix) * cin + g * cin_g;
      __global const float* wr = w + (size_t)(ky * kernel_w + kx) * cin_g * cout + o;
      for (int c = 0; c < cin_g; ++c) acc += xr[c] * wr[(size_t)c * cout];
    }
  }
  y[id] = acc;
}

// ---------------------------------------------------------------- group norm (group_norm.h)
// One work-group of ROW_WG work-items per (sample, group): mean, then squared deviations from
// it, each a work-group tree, then y = (x - mean) * inv * gamma + beta. y may be x.
__kernel __attribute__((reqd_work_group_size(ROW_WG, 1, 1)))
void group_norm(__global const float* x, __global const float* gamma, __global const float* beta,
                int has_beta, float eps, int groups, int positions, int channels,
                __global float* y) {
  const int lid = get_local_id(0);
  __local float red[ROW_WG];
  const int task = get_group_id(0);
  const int b = task / groups;
  const int g = task % groups;
  const int width = channels / groups;
  const int n = positions * width;
  const size_t base = (size_t)b * positions * channels + (size_t)g * width;
  float s = 0.0f;
  for (int i = lid; i < n; i += ROW_WG) s += x[base + (size_t)(i / width) * channels + i % width];
  const float mean = group_sum(red, s, lid, ROW_WG) / (float)n;
  float sq = 0.0f;
  for (int i = lid; i < n; i += ROW_WG) {
    const float d = x[base + (size_t)(i / width) * channels + i % width] - mean;
    sq += d * d;
  }
  const float inv = 1.0f / sqrt(group_sum(red, sq, lid, ROW_WG) / (float)n + eps);
  for (int i = lid; i < n; i += ROW_WG) {
    const int c = i % width;
    const size_t at = base + (size_t)(i / width) * channels + c;
    const int ch = g * width + c;
    y[at] = (x[at] - mean) * inv * gamma[ch] + (has_beta ? beta[ch] : 0.0f);
  }
}

// ---------------------------------------------------------------- pooling (pool2d.h)
// One work-item per output element; padded positions ignored; average = sum * (1 / count).
__kernel void pool2d(__global const float* x, __global float* y, int total, int height, int width,
                     int out_h, int out_w, int channels, int ksize, int stride, int padding,
                     int is_max) {
  const int id = get_global_id(0);
  if (id >= total) return;
  const int c = id % channels;
  const int p = id / channels;
  const int ox = p % out_w;
  const int oy = (p / out_w) % out_h;
  const int b = p / (out_w * out_h);
  float acc = is_max ? -INFINITY : 0.0f;
  int count = 0;
  for (int ky = 0; ky < ksize; ++ky) {
    const int iy = oy * stride - padding + ky;
    if (iy < 0 || iy >= height) continue;
    for (int kx = 0; kx < ksize; ++kx) {
      const int ix = ox * stride - padding + kx;
      if (ix < 0 || ix >= width) continue;
      const float v = x[(((size_t)b * height + iy) * width + ix) * channels + c];
      ++count;
      acc = is_max ? (v > acc ? v : acc) : acc + v;  // the cpu's comparison: NaN never wins
    }
  }
  y[id] = is_max ? acc : acc * (1.0f / (float)count);
}

// ---------------------------------------------------------------- selective scan (selective_scan.h)
// A work-group of ROW_WG work-items holds ROW_WG / sp channels of one sample (get_group_id(1)),
// sp work-items per channel; work-item `lane` owns states lane + i * sp (i < per <= SCAN_PER),
// kept in registers for the whole sequence. Per position: dt (+ delta_bias, softplus), h =
// exp(dt * A) * h + (dt * u) * B, y = sum_n h * C (the lane's states in order, then a tree over
// the sp lanes) + D * u. params holds D then delta_bias (channels floats each).
__kernel __attribute__((reqd_work_group_size(ROW_WG, 1, 1)))
void selective_scan(__global const float* u, __global const float* delta, __global const float* Bm,
                    __global const float* Cm, __global const float* A, __global const float* params,
                    int has_D, int has_bias, int softplus_dt, __global float* state, int has_state,
                    __global float* y, int len, int channels, int S, int sp, int per) {
  const int lid = get_local_id(0);
  const int lane = lid % sp;
  const int d = get_group_id(0) * (ROW_WG / sp) + lid / sp;
  const int b = get_group_id(1);
  __local float red[ROW_WG];
  float h[SCAN_PER];
  float a[SCAN_PER];
  for (int i = 0; i < SCAN_PER; ++i) {
    const int n = lane + i * sp;
    const int live = i < per && d < channels && n < S;
    h[i] = live && has_state ? state[((size_t)b * channels + d) * S + n] : 0.0f;
    a[i] = live ? A[(size_t)d * S + n] : 0.0f;
  }
  for (int t = 0; t < len; ++t) {
    const size_t row = (size_t)b * len + t;
    float part = 0.0f;
    float uv = 0.0f;
    if (d < channels) {
      float dt = delta[row * channels + d] + (has_bias ? params[channels + d] : 0.0f);
      if (softplus_dt) dt = dt > 20.0f ? dt : log1p(exp(dt));
      uv = u[row * channels + d];
      const float dtu = dt * uv;
      for (int i = 0; i < SCAN_PER; ++i) {
        const int n = lane + i * sp;
        if (i < per && n < S) {
          h[i] = exp(dt * a[i]) * h[i] + dtu * Bm[row * S + n];
          part += h[i] * Cm[row * S + n];
        }
      }
    }
    red[lid] = part;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = sp >> 1; s > 0; s >>= 1) {
      if (lane < s) red[lid] += red[lid + s];
      barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lane == 0 && d < channels) y[row * channels + d] = red[lid] + (has_D ? params[d] * uv : 0.0f);
    barrier(CLK_LOCAL_MEM_FENCE);  // red[] is rewritten for the next position
  }
  if (has_state) {
    for (int i = 0; i < SCAN_PER; ++i) {
      const int n = lane + i * sp;
      if (i < per && d < channels && n < S) state[((size_t)b * channels + d) * S + n] = h[i];
    }
  }
}

// ---------------------------------------------------------------- RWKV time mix (time_mix.h)
// One work-item per (sample, channel), the running-maximum state (aa, bb, pp) in registers;
// state [batch][3][channels] is read and written when has_state, else a fresh one.
__kernel void time_mix(__global const float* kk, __global const float* vv,
                       __global const float* decay, __global const float* first,
                       __global float* state, int has_state, __global float* out, int total,
                       int len, int channels) {
  const int id = get_global_id(0);
  if (id >= total) return;
  const int b = id / channels;
  const int c = id % channels;
  const size_t st = (size_t)b * 3 * channels + c;
  float aa = has_state ? state[st] : 0.0f;
  float bb = has_state ? state[st + channels] : 0.0f;
  float pp = has_state ? state[st + 2 * channels] : -1e38f;
  const float w = -exp(decay[c]);
  const float uf = first[c];
  for (int t = 0; t < len; ++t) {
    const size_t at = ((size_t)b * len + t) * channels + c;
    const float k = kk[at];
    const float v = vv[at];
    float q = fmax(pp, uf + k);
    float e1 = exp(pp - q);
    float e2 = exp(uf + k - q);
    out[at] = (e1 * aa + e2 * v) / (e1 * bb + e2);
    q = fmax(pp + w, k);
    e1 = exp(pp + w - q);
    e2 = exp(k - q);
    aa = e1 * aa + e2 * v;
    bb = e1 * bb + e2;
    pp = q;
  }
  if (has_state) {
    state[st] = aa;
    state[st + channels] = bb;
    state[st + 2 * channels] = pp;
  }
}

// ---------------------------------------------------------------- k-quant linear layers
// Activations to q8 blocks of 256 (GGUF's q8_K), one work-item per (block, row): xq [M][nb*256]
// int8, xd [M][nb] the scale amax/127, xbs [M][nb*16] the int sums of each 16 quants (the q2_k
// min term). Zero padding past K; a block with a NaN/Inf gets a NaN scale and zero quants.
__kernel void quantize_q8_k(__global const float* x, __global char* xq, __global float* xd,
                            __global int* xbs, int K, int nb) {
  const int b = get_global_id(0);
  const int m = get_global_id(1);
  if (b >= nb) return;
  __global const float* xr = x + (size_t)m * K + (size_t)b * QKK;
  __global char* q = xq + ((size_t)m * nb + b) * QKK;
  __global int* bs = xbs + ((size_t)m * nb + b) * (QKK / 16);
  const size_t at = (size_t)m * nb + b;
  const int n = min(QKK, K - b * QKK);
  float amax = 0.0f;
  int finite = 1;
  for (int j = 0; j < n; ++j) {
    finite = finite && isfinite(xr[j]);
    amax = fmax(amax, fabs(xr[j]));
  }
  if (!finite) {
    xd[at] = NAN;
    for (int j = 0; j < QKK; ++j) q[j] = 0;
    for (int g = 0; g < QKK / 16; ++g) bs[g] = 0;
    return;
  }
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  for (int g = 0; g < QKK / 16; ++g) {
    int s = 0;
    for (int j = g * 16; j < g * 16 + 16; ++j) {
      const float v = j < n ? xr[j] * id : 0.0f;
      const char qv = (char)(isnan(v) ? 0.0f : clamp(round(v), -127.0f, 127.0f));
      q[j] = qv;
      s += qv;
    }
    bs[g] = s;
  }
  xd[at] = d;
}

// q2_k / q3_k weights, transposed like the other block formats (weight_repack.h): byte j of the
// payload of super-block b of row n at (b * PAYLOAD + j) * NP + n, its float d (and q2_k dmin)
// at b * NP + n. Payload = the GGUF block without its halves: q2_k scales[16] then qs[64];
// q3_k hmask[32], qs[64], scales[12]. Element e = 128 h + 32 j + l has its two low bits at bit
// 2 j of qs byte 32 h + l (q3_k: its high bit at bit 4 h + j of hmask byte l). Per sub-block s
// of 16 an int32 sum of x_q * quant, times the sub-block scale, summed over the super-block;
// then, in float, times d * d_x (q2_k: minus dmin * d_x times the mins against the 16-sums of
// x_q): the cpu reference's order.
#define Q2K_PAYLOAD 80
#define Q3K_PAYLOAD 108

#define KQUANT_MATMUL(NAME, R, PAYLOAD, BODY, TERM)                                            \
  __kernel void NAME(__global const char* xq, __global const float* xd,                        \
                     __global const int* xbs, __global const uchar* wt,                        \
                     __global const float* wd, __global const float* wm,                       \
                     __global const float* bias, int has_bias, __global float* y, int M,       \
                     int N, int NP, int nb) {                                                  \
    MATMUL_PROLOGUE(R)                                                                         \
    size_t xrow[R];                                                                            \
    float4 acc[R];                                                                             \
    for (int r = 0; r < (R); ++r) {                                                            \
      xrow[r] = (size_t)min(m0 + r, M - 1) * nb;                                               \
      acc[r] = (float4)(0.0f);                                                                 \
    }                                                                                          \
    for (int b = 0; b < nb; ++b) {                                                             \
      __global const uchar* wb = wt + (size_t)b * (PAYLOAD) * NP + n0;                         \
      int4 isum[R];                                                                            \
      int4 msum[R];                                                                            \
      for (int r = 0; r < (R); ++r) {                                                          \
        isum[r] = (int4)(0);                                                                   \
        msum[r] = (int4)(0);                                                                   \
      }                                                                                        \
      for (int s = 0; s < 16; ++s) {                                                           \
        int4 sub[R];                                                                           \
        for (int r = 0; r < (R); ++r) sub[r] = (int4)(0);                                      \
        BODY                                                                                   \
      }                                                                                        \
      const float4 d = vload4(0, wd + (size_t)b * NP + n0);                                    \
      for (int r = 0; r < (R); ++r) {                                                          \
        const float dx = xd[xrow[r] + b];                                                      \
        acc[r] += convert_float4(isum[r]) * (dx * d) TERM;                                     \
      }                                                                                        \
    }                                                                                          \
    MATMUL_STORE(R)                                                                            \
  }

// The element's byte of the payload for the 4 columns: vload4 at payload offset `j`.
#define KQ_BYTES(j) vload4(0, wb + (size_t)(j) * NP)

#define Q2K_BODY(R)                                                                            \
  const uchar4 sc = KQ_BYTES(s);                                                               \
  for (int i = 0; i < 16; ++i) {                                                               \
    const int e = s * 16 + i;                                                                  \
    const int h = e >> 7;                                                                      \
    const int j = (e & 127) >> 5;                                                              \
    const uchar4 qb = KQ_BYTES(16 + 32 * h + (e & 31));                                        \
    const int4 q = convert_int4((qb >> (uchar4)(2 * j)) & (uchar4)(3));                        \
    for (int r = 0; r < (R); ++r) sub[r] += (int)xq[(xrow[r] + b) * QKK + e] * q;              \
  }                                                                                            \
  const int4 scale = convert_int4(sc & (uchar4)(0x0F));                                        \
  const int4 mn = convert_int4(sc >> (uchar4)(4));                                             \
  for (int r = 0; r < (R); ++r) {                                                              \
    isum[r] += scale * sub[r];                                                                 \
    msum[r] += mn * xbs[(xrow[r] + b) * (QKK / 16) + s];                                       \
  }

#define Q3K_BODY(R)                                                                            \
  const uchar4 low = s < 8 ? (KQ_BYTES(96 + s) & (uchar4)(0x0F)) : (KQ_BYTES(96 + s - 8) >> (uchar4)(4)); \
  const uchar4 high = (KQ_BYTES(96 + 8 + s % 4) >> (uchar4)(2 * (s / 4))) & (uchar4)(3);      \
  const int4 scale = convert_int4(low | (high << (uchar4)(4))) - 32;                           \
  for (int i = 0; i < 16; ++i) {                                                               \
    const int e = s * 16 + i;                                                                  \
    const int h = e >> 7;                                                                      \
    const int j = (e & 127) >> 5;                                                              \
    const uchar4 lo = (KQ_BYTES(32 + 32 * h + (e & 31)) >> (uchar4)(2 * j)) & (uchar4)(3);     \
    const uchar4 hi = (KQ_BYTES(e & 31) >> (uchar4)(e >> 5)) & (uchar4)(1);                   \
    const int4 q = convert_int4(lo | (hi << (uchar4)(2))) - 4;                                 \
    for (int r = 0; r < (R); ++r) sub[r] += (int)xq[(xrow[r] + b) * QKK + e] * q;              \
  }                                                                                            \
  for (int r = 0; r < (R); ++r) isum[r] += scale * sub[r];

#define Q2K_MIN_TERM - convert_float4(msum[r]) * (dx * vload4(0, wm + (size_t)b * NP + n0))
#define NO_K_TERM

KQUANT_MATMUL(matmul_q2_k, MM_ROWS, Q2K_PAYLOAD, Q2K_BODY(MM_ROWS), Q2K_MIN_TERM)
KQUANT_MATMUL(matmul_q2_k_r1, 1, Q2K_PAYLOAD, Q2K_BODY(1), Q2K_MIN_TERM)
KQUANT_MATMUL(matmul_q3_k, MM_ROWS, Q3K_PAYLOAD, Q3K_BODY(MM_ROWS), NO_K_TERM)
KQUANT_MATMUL(matmul_q3_k_r1, 1, Q3K_PAYLOAD, Q3K_BODY(1), NO_K_TERM)
)CLC";

}  // namespace

std::string_view opencl_spatial_kernel_source() { return kSource; }

}  // namespace am::kernels::opencl
