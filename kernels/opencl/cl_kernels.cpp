#include "kernels/opencl/cl_kernels.h"

#include <algorithm>

namespace am::kernels::opencl {
namespace {

// Build-time constants the source expects: COLUMN_MATMUL (0/1: which float matmul variant),
// MM_ROWS (rows per matmul work-item), ROW_WG (row
// reductions), ATT_WG (attention work-group), ATT_CHUNK (keys per attention pass), QK (quant
// block size), QKK (k-quant super-block), SCAN_PER (states per selective_scan work-item).
//
// Numerics follow the cpu scalar reference op by op (same formulas, same q8 activation
// quantization, same per-block int32 sums scaled by d_x * d_w), so the backends
// differ only by float summation order and the device's libm (erf/exp/tanh within the OpenCL
// ULP limits).
constexpr std::string_view kSource = R"CLC(
// ---------------------------------------------------------------- reductions over a work-group
// Every work-item of the group must call these (they contain barriers). `red` holds n floats,
// n a power of two equal to the group size.
float group_sum(__local float* red, float v, int lid, int n) {
  red[lid] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = n >> 1; s > 0; s >>= 1) {
    if (lid < s) red[lid] += red[lid + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const float r = red[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  return r;
}

float group_max(__local float* red, float v, int lid, int n) {
  red[lid] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = n >> 1; s > 0; s >>= 1) {
    if (lid < s) red[lid] = fmax(red[lid], red[lid + s]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const float r = red[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  return r;
}

// ---------------------------------------------------------------- linear layers
// Weights live on the device transposed ("k-major") with the output dimension padded to NP, a
// multiple of 4: element (n, k) of a float weight at [k * NP + n]; byte j of block b of row n of
// a block format at [(b * BYTES + j) * NP + n], its scale (and q4_1 min) at [b * NP + n].
// Work-item i computes output columns 4i..4i+3 with 4-wide vector loads, so neighbouring
// work-items read neighbouring addresses (coalesced on a GPU, plain vector code on PoCL), with
// no local memory and no barriers. Each work-item computes R rows of x (R = 1 for a decode step,
// MM_ROWS otherwise) to reuse every weight it loads. Float weights on CPU devices use the column
// variant (FLOAT_MATMUL_COLUMN below, one column per work-item; the host sizes the launch by
// KernelConfig::column_matmul).

// bf16 -> f32 is exact (the top half of the bits); f32 -> bf16 rounds to nearest even, NaN
// stays a quiet NaN (as kernels/formats/bf16.h).
float round_to_bf16(float f) {
  uint x = as_uint(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return as_float((x | 0x00400000u) & 0xFFFF0000u);
  x += 0x7FFFu + ((x >> 16) & 1u);
  return as_float(x & 0xFFFF0000u);
}

// In place on the device copy of the activations of a bf16 matmul: the cpu multiplies bf16 x
// bf16 products, so x is rounded once here instead of in every work-item of the matmul.
__kernel void round_bf16(__global float* x, int n) {
  const int i = get_global_id(0);
  if (i >= n) return;
  x[i] = round_to_bf16(x[i]);
}

#define LOAD4_F32(w, i) vload4(0, (w) + (i))
#define LOAD4_F16(w, i) vload_half4(0, (w) + (i))
#define LOAD4_BF16(w, i) as_float4(convert_uint4(vload4(0, (w) + (i))) << 16)

// The column block and row range of this work-item; columns past NP-4 clamp (their results are
// not stored) so every load stays inside the buffers.
#define MATMUL_PROLOGUE(R)                                           \
  const int n_out = get_global_id(0) * 4;                            \
  const int n0 = min(n_out, NP - 4);                                 \
  const int m0 = get_global_id(1) * (R);

// y[m, n0..n0+3] = acc[r] + bias for the rows and columns that exist.
#define MATMUL_STORE(R)                                                          \
  if (n_out < NP) {                                                              \
    for (int r = 0; r < (R) && m0 + r < M; ++r) {                                \
      float out[4];                                                              \
      vstore4(acc[r], 0, out);                                                   \
      for (int c = 0; c < 4 && n0 + c < N; ++c) {                                \
        y[(size_t)(m0 + r) * N + n0 + c] = out[c] + (has_bias ? bias[n0 + c] : 0.0f); \
      }                                                                          \
    }                                                                            \
  }

// Float weights: y = x . W^T + bias, k summed in order like the cpu's row dot products.
#define FLOAT_MATMUL(NAME, R, WTYPE, LOAD4)                                              \
  __kernel void NAME(__global const float* x, __global const WTYPE* wt,                  \
                     __global const float* bias, int has_bias, __global float* y, int M, \
                     int N, int NP, int K) {                                             \
    MATMUL_PROLOGUE(R)                                                                   \
    __global const float* xr[R];                                                         \
    float4 acc[R];                                                                       \
    for (int r = 0; r < (R); ++r) {                                                      \
      xr[r] = x + (size_t)min(m0 + r, M - 1) * K;                                        \
      acc[r] = (float4)(0.0f);                                                           \
    }                                                                                    \
    for (int k = 0; k < K; ++k) {                                                        \
      const float4 w = LOAD4(wt, (size_t)k * NP + n0);                                   \
      for (int r = 0; r < (R); ++r) acc[r] += xr[r][k] * w;                              \
    }                                                                                    \
    MATMUL_STORE(R)                                                                      \
  }

// The CPU-shaped variant (COLUMN_MATMUL: PoCL and other CPU devices): one output column per
// work-item in scalar code. A CPU device runs a work-item's k loop as one chain of dependent
// FMAs either way; with scalar work-items it keeps fewer values live and loads one weight per
// step (bert-tiny f32 on PoCL: 7.7 -> 5.0 ms). k is summed in the same order as above.
#define LOAD1_F32(w, i) (w)[i]
#define LOAD1_F16(w, i) vload_half(0, (w) + (i))
#define LOAD1_BF16(w, i) as_float((uint)(w)[i] << 16)
#define FLOAT_MATMUL_COLUMN(NAME, R, WTYPE, LOAD1)                                       \
  __kernel void NAME(__global const float* x, __global const WTYPE* wt,                  \
                     __global const float* bias, int has_bias, __global float* y, int M, \
                     int N, int NP, int K) {                                             \
    const int n = get_global_id(0);                                                      \
    const int nc = min(n, NP - 1);                                                       \
    const int m0 = get_global_id(1) * (R);                                               \
    __global const float* xr[R];                                                         \
    float acc[R];                                                                        \
    for (int r = 0; r < (R); ++r) {                                                      \
      xr[r] = x + (size_t)min(m0 + r, M - 1) * K;                                        \
      acc[r] = 0.0f;                                                                     \
    }                                                                                    \
    for (int k = 0; k < K; ++k) {                                                        \
      const float w = LOAD1(wt, (size_t)k * NP + nc);                                    \
      for (int r = 0; r < (R); ++r) acc[r] += xr[r][k] * w;                              \
    }                                                                                    \
    if (n < N) {                                                                         \
      for (int r = 0; r < (R) && m0 + r < M; ++r) {                                      \
        y[(size_t)(m0 + r) * N + n] = acc[r] + (has_bias ? bias[n] : 0.0f);              \
      }                                                                                  \
    }                                                                                    \
  }

#if COLUMN_MATMUL
FLOAT_MATMUL_COLUMN(matmul_f32, MM_ROWS, float, LOAD1_F32)
FLOAT_MATMUL_COLUMN(matmul_f32_r1, 1, float, LOAD1_F32)
FLOAT_MATMUL_COLUMN(matmul_f16, MM_ROWS, half, LOAD1_F16)
FLOAT_MATMUL_COLUMN(matmul_f16_r1, 1, half, LOAD1_F16)
#else
FLOAT_MATMUL(matmul_f32, MM_ROWS, float, LOAD4_F32)
FLOAT_MATMUL(matmul_f32_r1, 1, float, LOAD4_F32)
FLOAT_MATMUL(matmul_f16, MM_ROWS, half, LOAD4_F16)
FLOAT_MATMUL(matmul_f16_r1, 1, half, LOAD4_F16)
#endif
#if COLUMN_MATMUL
FLOAT_MATMUL_COLUMN(matmul_bf16, MM_ROWS, ushort, LOAD1_BF16)
FLOAT_MATMUL_COLUMN(matmul_bf16_r1, 1, ushort, LOAD1_BF16)
#else
FLOAT_MATMUL(matmul_bf16, MM_ROWS, ushort, LOAD4_BF16)
FLOAT_MATMUL(matmul_bf16_r1, 1, ushort, LOAD4_BF16)
#endif

// Activations to q8 blocks of QK, one work-item per (block, row): xq [M][nb*QK] int8, xd [M][nb]
// float scale amax/127, xsum [M][nb] the int sum of the block's quants (the q4_1 min term).
// Zero padding past K. A block with a NaN/Inf gets a NaN scale and zero quants (as the cpu).
__kernel void quantize_q8(__global const float* x, __global char* xq, __global float* xd,
                          __global int* xsum, int K, int nb) {
  const int b = get_global_id(0);
  const int m = get_global_id(1);
  if (b >= nb) return;
  __global const float* xr = x + (size_t)m * K + (size_t)b * QK;
  __global char* q = xq + ((size_t)m * nb + b) * QK;
  const size_t at = (size_t)m * nb + b;
  const int n = min(QK, K - b * QK);
  float amax = 0.0f;
  int finite = 1;
  for (int j = 0; j < n; ++j) {
    finite = finite && isfinite(xr[j]);
    amax = fmax(amax, fabs(xr[j]));
  }
  if (!finite) {
    xd[at] = NAN;
    xsum[at] = 0;
    for (int j = 0; j < QK; ++j) q[j] = 0;
    return;
  }
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  int total = 0;
  for (int j = 0; j < QK; ++j) {
    const float v = j < n ? xr[j] * id : 0.0f;
    const char qv = (char)(isnan(v) ? 0.0f : clamp(round(v), -127.0f, 127.0f));
    q[j] = qv;
    total += qv;
  }
  xd[at] = d;
  xsum[at] = total;
}

// Block-quantized weights times activations from quantize_q8. Per block: the int32 sum of
// products, times xd * wd, plus (q4_1) the min term wm * (xd * xsum); summed over blocks in
// float, in the cpu reference's order. BODY accumulates isum[r] for block b.
#define QUANT_MATMUL(NAME, R, WTYPE, BODY, MIN_TERM)                                           \
  __kernel void NAME(__global const char* xq, __global const float* xd,                        \
                     __global const int* xsum, __global const WTYPE* wt,                       \
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
      int4 isum[R];                                                                            \
      for (int r = 0; r < (R); ++r) isum[r] = (int4)(0);                                       \
      BODY                                                                                     \
      const float4 d = vload4(0, wd + (size_t)b * NP + n0);                                    \
      for (int r = 0; r < (R); ++r) {                                                          \
        const float dx = xd[xrow[r] + b];                                                      \
        acc[r] += convert_float4(isum[r]) * (dx * d) MIN_TERM;                                 \
      }                                                                                        \
    }                                                                                          \
    MATMUL_STORE(R)                                                                            \
  }

#define Q8_0_BODY(R)                                                          \
  for (int j = 0; j < QK; ++j) {                                              \
    const int4 w = convert_int4(vload4(0, wt + ((size_t)b * QK + j) * NP + n0)); \
    for (int r = 0; r < (R); ++r) isum[r] += (int)xq[(xrow[r] + b) * QK + j] * w; \
  }

// q4_0 / q4_1: byte j of a block holds element j (low nibble) and j + QK/2 (high nibble).
#define Q4_BODY(R, OFFSET)                                                                  \
  for (int j = 0; j < QK / 2; ++j) {                                                        \
    const uchar4 by = vload4(0, wt + ((size_t)b * (QK / 2) + j) * NP + n0);                 \
    const int4 lo = convert_int4(by & (uchar4)(0x0F)) - (OFFSET);                           \
    const int4 hi = convert_int4(by >> (uchar4)(4)) - (OFFSET);                             \
    for (int r = 0; r < (R); ++r) {                                                         \
      __global const char* xb = xq + (xrow[r] + b) * QK;                                    \
      isum[r] += (int)xb[j] * lo + (int)xb[j + QK / 2] * hi;                                \
    }                                                                                       \
  }

#define NO_MIN_TERM
#define Q4_1_MIN_TERM + vload4(0, wm + (size_t)b * NP + n0) * (dx * (float)xsum[xrow[r] + b])

QUANT_MATMUL(matmul_q8_0, MM_ROWS, char, Q8_0_BODY(MM_ROWS), NO_MIN_TERM)
QUANT_MATMUL(matmul_q8_0_r1, 1, char, Q8_0_BODY(1), NO_MIN_TERM)
QUANT_MATMUL(matmul_q4_0, MM_ROWS, uchar, Q4_BODY(MM_ROWS, 8), NO_MIN_TERM)
QUANT_MATMUL(matmul_q4_0_r1, 1, uchar, Q4_BODY(1, 8), NO_MIN_TERM)
QUANT_MATMUL(matmul_q4_1, MM_ROWS, uchar, Q4_BODY(MM_ROWS, 0), Q4_1_MIN_TERM)
QUANT_MATMUL(matmul_q4_1_r1, 1, uchar, Q4_BODY(1, 0), Q4_1_MIN_TERM)

// ---------------------------------------------------------------- embeddings
// y[i] (+)= table[ids[i]], one work-item per (column, row); ids were range-checked on the host.
// Like every element-wise kernel here, dimension 0 is rounded up to whole work-groups by the
// host and the extra work-items return at once.
__kernel void gather_rows(__global const float* table, __global const int* ids, __global float* y,
                          int cols, int accumulate) {
  const int c = get_global_id(0);
  const int i = get_global_id(1);
  if (c >= cols) return;
  const float v = table[(size_t)ids[i] * cols + c];
  __global float* dst = y + (size_t)i * cols + c;
  *dst = accumulate ? *dst + v : v;
}

// ---------------------------------------------------------------- row-wise ops
// One work-group of ROW_WG work-items per row. Two passes (mean, then squared deviations) like
// the cpu reference, reduced as a tree so long rows keep their accuracy in float.
__kernel __attribute__((reqd_work_group_size(ROW_WG, 1, 1)))
void layer_norm(__global const float* x, __global const float* gamma, __global const float* beta,
                int has_beta, float eps, int cols, __global float* y) {
  const int lid = get_local_id(0);
  __local float red[ROW_WG];
  __global const float* xr = x + (size_t)get_group_id(0) * cols;
  __global float* yr = y + (size_t)get_group_id(0) * cols;
  float s = 0.0f;
  for (int c = lid; c < cols; c += ROW_WG) s += xr[c];
  const float mean = group_sum(red, s, lid, ROW_WG) / (float)cols;
  float sq = 0.0f;
  for (int c = lid; c < cols; c += ROW_WG) {
    const float d = xr[c] - mean;
    sq += d * d;
  }
  const float var = group_sum(red, sq, lid, ROW_WG) / (float)cols;
  const float inv_std = 1.0f / sqrt(var + eps);
  for (int c = lid; c < cols; c += ROW_WG) {
    yr[c] = (xr[c] - mean) * inv_std * gamma[c] + (has_beta ? beta[c] : 0.0f);
  }
}

__kernel __attribute__((reqd_work_group_size(ROW_WG, 1, 1)))
void rms_norm(__global const float* x, __global const float* gamma, float eps, int cols,
              __global float* y) {
  const int lid = get_local_id(0);
  __local float red[ROW_WG];
  __global const float* xr = x + (size_t)get_group_id(0) * cols;
  __global float* yr = y + (size_t)get_group_id(0) * cols;
  float sq = 0.0f;
  for (int c = lid; c < cols; c += ROW_WG) sq += xr[c] * xr[c];
  const float inv = 1.0f / sqrt(group_sum(red, sq, lid, ROW_WG) / (float)cols + eps);
  for (int c = lid; c < cols; c += ROW_WG) yr[c] = xr[c] * inv * gamma[c];
}

// In place. -inf entries get probability 0, an all -inf row becomes zeros, a NaN anywhere makes
// the whole row NaN (the cpu's rules). Every work-item runs the same sequence of barriers
// whatever the row holds (no early return), which PoCL's work-group compiler requires.
__kernel __attribute__((reqd_work_group_size(ROW_WG, 1, 1)))
void softmax_rows(__global float* x, int cols) {
  const int lid = get_local_id(0);
  __local float red[ROW_WG];
  __local int saw_nan;
  __global float* xr = x + (size_t)get_group_id(0) * cols;
  if (lid == 0) saw_nan = 0;
  barrier(CLK_LOCAL_MEM_FENCE);
  float mx = -INFINITY;
  for (int c = lid; c < cols; c += ROW_WG) {
    const float v = xr[c];
    if (isnan(v)) saw_nan = 1;
    mx = v > mx ? v : mx;
  }
  mx = group_max(red, mx, lid, ROW_WG);  // its barriers also publish saw_nan
  const int nan_row = saw_nan;
  const int empty_row = mx == -INFINITY;
  float s = 0.0f;
  if (!nan_row && !empty_row) {
    for (int c = lid; c < cols; c += ROW_WG) {
      const float e = exp(xr[c] - mx);
      xr[c] = e;
      s += e;
    }
  }
  s = group_sum(red, s, lid, ROW_WG);
  const float inv = 1.0f / s;
  for (int c = lid; c < cols; c += ROW_WG) {
    xr[c] = nan_row ? NAN : (empty_row ? 0.0f : xr[c] * inv);
  }
}

// ---------------------------------------------------------------- element-wise ops
// kind: 0 gelu (erf), 1 gelu (tanh approximation), 2 relu (NaN passes through), 3 silu,
// 4 sigmoid, 5 quick_gelu (x * sigmoid(1.702 x), CLIP).
__kernel void activation(__global float* x, int kind, int n) {
  const int i = get_global_id(0);
  if (i >= n) return;
  const float v = x[i];
  float r;
  if (kind == 0) {
    r = 0.5f * v * (1.0f + erf(v * 0.70710678118654752440f));
  } else if (kind == 1) {
    r = 0.5f * v * (1.0f + tanh(0.79788456080286535588f * (v + 0.044715f * v * v * v)));
  } else if (kind == 2) {
    r = v < 0.0f ? 0.0f : v;
  } else if (kind == 3) {
    r = v / (1.0f + exp(-v));
  } else if (kind == 4) {
    r = 1.0f / (1.0f + exp(-v));
  } else {
    r = v * (1.0f / (1.0f + exp(-1.702f * v)));
  }
  x[i] = r;
}

__kernel void add(__global float* y, __global const float* a, int n) {
  const int i = get_global_id(0);
  if (i >= n) return;
  y[i] = y[i] + a[i];
}

__kernel void mul(__global float* y, __global const float* a, int n) {
  const int i = get_global_id(0);
  if (i >= n) return;
  y[i] = y[i] * a[i];
}

// ---------------------------------------------------------------- attention
// One work-group of ATT_WG work-items per (sample, head, query), groups numbered
// ((b * heads) + h) * q_len + i. Keys are visited in chunks of ATT_CHUNK with an online softmax:
// each chunk's scores go to local memory, the running max rescales the partial sums, and the
// output row (owned by this group alone) accumulates in place in global memory, so head_dim has
// no upper bound. Causal queries see keys j <= q_offset + i; masked keys (mask 0) get weight 0;
// a query with no visible key gets a zero row; a NaN score makes the row NaN. With has_bias,
// bias[(i * kv_len + j) * heads + h] is added to each visible score (attention_bias.h).
__kernel __attribute__((reqd_work_group_size(ATT_WG, 1, 1)))
void attention(__global const float* q, __global const float* k, __global const float* v,
               __global float* out, __global const int* mask, int has_mask,
               __global const float* bias, int has_bias, int q_len, int kv_len, int heads,
               int kv_heads, int head_dim, float scale, int causal, int q_offset) {
  const int g = get_group_id(0);
  const int lid = get_local_id(0);
  const int i = g % q_len;
  const int h = (g / q_len) % heads;
  const int b = g / (q_len * heads);
  const int q_cols = heads * head_dim;
  const int kv_cols = kv_heads * head_dim;
  const int kv_col = (h / (heads / kv_heads)) * head_dim;
  const size_t kv_base = (size_t)b * kv_len;
  __global const float* qr = q + (size_t)(b * q_len + i) * q_cols + h * head_dim;
  __global float* o = out + (size_t)(b * q_len + i) * q_cols + h * head_dim;
  __local float s[ATT_CHUNK];
  __local float red[ATT_WG];
  __local int saw_nan;

  if (lid == 0) saw_nan = 0;
  for (int d = lid; d < head_dim; d += ATT_WG) o[d] = 0.0f;
  const int visible = causal ? min(kv_len, q_offset + i + 1) : kv_len;
  float m = -INFINITY;  // running max of the scores seen so far
  float l = 0.0f;       // running sum of exp(score - m)
  barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
  for (int c0 = 0; c0 < visible; c0 += ATT_CHUNK) {
    const int cn = min(ATT_CHUNK, visible - c0);
    float cmax = -INFINITY;
    for (int j = lid; j < cn; j += ATT_WG) {
      const size_t key = kv_base + c0 + j;
      float sc = -INFINITY;
      if (!has_mask || mask[key] != 0) {
        __global const float* kr = k + key * kv_cols + kv_col;
        float dot = 0.0f;
        for (int d = 0; d < head_dim; ++d) dot += qr[d] * kr[d];
        sc = dot * scale;
        if (has_bias) sc += bias[((size_t)i * kv_len + c0 + j) * heads + h];
        if (isnan(sc)) saw_nan = 1;
      }
      s[j] = sc;
      cmax = fmax(cmax, sc);
    }
    const float m_new = fmax(m, group_max(red, cmax, lid, ATT_WG));
    // While every key so far is masked (m_new = -inf) subtract 0 instead, so that every p and
    // the correction are exp(-inf) = 0 rather than NaN; no work-item skips the barriers below.
    const float m_sub = m_new == -INFINITY ? 0.0f : m_new;
    const float correction = exp(m - m_sub);  // 0 while m is still -inf
    float psum = 0.0f;
    for (int j = lid; j < cn; j += ATT_WG) {
      const float p = exp(s[j] - m_sub);
      s[j] = p;
      psum += p;
    }
    l = l * correction + group_sum(red, psum, lid, ATT_WG);  // its barriers publish s[]
    for (int d = lid; d < head_dim; d += ATT_WG) {
      float acc = o[d] * correction;
      __global const float* vc = v + (kv_base + c0) * kv_cols + kv_col + d;
      for (int j = 0; j < cn; ++j) acc += s[j] * vc[(size_t)j * kv_cols];
      o[d] = acc;
    }
    m = m_new;
    barrier(CLK_LOCAL_MEM_FENCE);  // s[] is rewritten by the next chunk
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  const int nan_row = saw_nan;
  for (int d = lid; d < head_dim; d += ATT_WG) {
    o[d] = nan_row ? NAN : (l == 0.0f ? 0.0f : o[d] / l);
  }
}
)CLC";

int largest_power_of_two_at_most(std::size_t n, int cap) {
  int p = 1;
  while (p * 2 <= cap && static_cast<std::size_t>(p * 2) <= n) p *= 2;
  return p;
}

}  // namespace

std::string_view opencl_kernel_source() { return kSource; }

KernelConfig kernel_config_for(std::size_t max_work_group_size, bool correctly_rounded_divide, bool column_matmul) {
  constexpr int kPreferredGroup = 64;  // two warps / one wavefront; a PoCL vector loop
  KernelConfig c;
  c.matmul_group = largest_power_of_two_at_most(max_work_group_size, kPreferredGroup);
  c.row_group = c.matmul_group;
  c.attention_group = c.matmul_group;
  c.correctly_rounded_divide = correctly_rounded_divide;
  c.column_matmul = column_matmul;
  return c;
}

std::string kernel_build_options(const KernelConfig& c) {
  std::string o = "-cl-std=CL1.2 -DMM_ROWS=" + std::to_string(kMatmulRows) +
                  " -DROW_WG=" + std::to_string(c.row_group) +
                  " -DATT_WG=" + std::to_string(c.attention_group) +
                  " -DATT_CHUNK=" + std::to_string(kAttentionChunk) +
                  " -DQK=" + std::to_string(kQuantBlock) + " -DQKK=" + std::to_string(kKQuantBlock) +
                  " -DSCAN_PER=" + std::to_string(kScanStatesPerItem) +
                  " -DCOLUMN_MATMUL=" + (c.column_matmul ? "1" : "0");
  // Division and sqrt as the cpu computes them where the device can (the q8_0 scale and its
  // reciprocal must match the cpu's to keep activations quantizing identically).
  if (c.correctly_rounded_divide) o += " -cl-fp32-correctly-rounded-divide-sqrt";
  return o;
}

}  // namespace am::kernels::opencl
