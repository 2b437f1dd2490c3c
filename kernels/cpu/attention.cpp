#include "kernels/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "common/check.h"
#include "kernels/cpu/softmax.h"
#include "kernels/cpu/vec_f32.h"

namespace am::kernels {
namespace {

// Query rows per task: the keys and values of one (sample, head) stay in cache across them.
constexpr int64_t kQueriesPerTask = 16;

}  // namespace

Status validate_attention_args(const AttentionArgs& a) {
  auto bad = [](const std::string& what) { return invalid_argument("attention: " + what); };
  if (a.batch < 1 || a.q_len < 1 || a.kv_len < 1 || a.heads < 1 || a.kv_heads < 1 || a.head_dim < 1) {
    return bad("batch, q_len, kv_len, heads, kv_heads and head_dim must be positive");
  }
  if (a.heads % a.kv_heads != 0) {
    return bad("kv_heads " + std::to_string(a.kv_heads) + " does not divide heads " + std::to_string(a.heads));
  }
  if (a.q_offset < 0) return bad("q_offset must be >= 0");
  const int64_t q_cols = a.heads * a.head_dim;
  const int64_t kv_cols = a.kv_heads * a.head_dim;
  if (a.q.rows() != a.batch * a.q_len || a.q.cols() != q_cols || a.out.rows() != a.q.rows() ||
      a.out.cols() != q_cols) {
    return bad("q and out must be [batch*q_len, heads*head_dim] = [" + std::to_string(a.batch * a.q_len) +
               ", " + std::to_string(q_cols) + "]");
  }
  if (a.k.rows() != a.batch * a.kv_len || a.v.rows() != a.k.rows() || a.k.cols() != kv_cols ||
      a.v.cols() != kv_cols) {
    return bad("k and v must be [batch*kv_len, kv_heads*head_dim] = [" +
               std::to_string(a.batch * a.kv_len) + ", " + std::to_string(kv_cols) + "]");
  }
  return Status::Ok();
}

void attention(const AttentionArgs& a, const ExecContext& ctx) {
  AM_CHECK(a.batch > 0 && a.q_len > 0 && a.kv_len > 0 && a.heads > 0 && a.kv_heads > 0 &&
                      a.head_dim > 0,
                  "attention sizes must be positive");
  AM_CHECK(a.heads % a.kv_heads == 0, "kv_heads must divide heads");
  const int64_t q_cols = a.heads * a.head_dim;
  const int64_t kv_cols = a.kv_heads * a.head_dim;
  AM_CHECK(a.q.rows() == a.batch * a.q_len && a.q.cols() == q_cols &&
                      a.out.rows() == a.q.rows() && a.out.cols() == q_cols,
                  "attention q/out must be [batch*q_len, heads*head_dim]");
  AM_CHECK(a.k.rows() == a.batch * a.kv_len && a.v.rows() == a.k.rows() &&
                      a.k.cols() == kv_cols && a.v.cols() == kv_cols,
                  "attention k/v must be [batch*kv_len, kv_heads*head_dim]");
  AM_CHECK(a.q_offset >= 0, "attention q_offset must be >= 0");
  const float scale = a.scale != 0.0f ? a.scale : 1.0f / std::sqrt(static_cast<float>(a.head_dim));
  const int64_t group = a.heads / a.kv_heads;
  constexpr float kMasked = -std::numeric_limits<float>::infinity();
  parallel_for(ctx, a.batch * a.heads * a.q_len, kQueriesPerTask, [&](int64_t begin, int64_t end) {
    std::vector<float> scores(static_cast<std::size_t>(a.kv_len));
    for (int64_t idx = begin; idx < end; ++idx) {
      const int64_t i = idx % a.q_len;
      const int64_t h = (idx / a.q_len) % a.heads;
      const int64_t b = idx / (a.q_len * a.heads);
      const int64_t kv_base = b * a.kv_len;
      const int64_t q_col = h * a.head_dim;
      const int64_t kv_col = (h / group) * a.head_dim;
      float* out = a.out.row(b * a.q_len + i) + q_col;
      // Causal: keys past the query's own position are never visible, so skip computing them.
      const int64_t visible =
          a.causal ? std::min<int64_t>(a.kv_len, a.q_offset + i + 1) : a.kv_len;
      bool any = false;
      if (visible > 0) {
        dot_rows_f32(a.q.row(b * a.q_len + i) + q_col, a.k.row(kv_base) + kv_col, kv_cols, visible,
                     a.head_dim, scores.data(), ctx.path);
        for (int64_t j = 0; j < visible; ++j) {
          const bool padded = a.key_mask != nullptr && a.key_mask[kv_base + j] == 0;
          scores[static_cast<std::size_t>(j)] = padded ? kMasked : scores[static_cast<std::size_t>(j)] * scale;
          any = any || !padded;
        }
      }
      if (!any) {
        for (int64_t d = 0; d < a.head_dim; ++d) out[d] = 0.0f;
        continue;
      }
      softmax_row(scores.data(), visible);
      weighted_sum_rows_f32(scores.data(), a.v.row(kv_base) + kv_col, kv_cols, visible, a.head_dim,
                            out, ctx.path);
    }
  });
}

void attention_core(ConstTensorView q, ConstTensorView k, ConstTensorView v, const int32_t* mask,
                    int64_t batch, int64_t seq, int64_t heads, TensorView out,
                    const ExecContext& ctx) {
  const int64_t hidden = q.cols();
  AM_CHECK(heads > 0 && hidden % heads == 0, "hidden must be a multiple of heads");
  AttentionArgs a;
  a.q = q;
  a.k = k;
  a.v = v;
  a.out = out;
  a.batch = batch;
  a.q_len = seq;
  a.kv_len = seq;
  a.heads = heads;
  a.kv_heads = heads;
  a.head_dim = hidden / heads;
  a.key_mask = mask;
  attention(a, ctx);
}

void self_attention(ConstTensorView x, const int32_t* mask, int64_t batch, int64_t seq,
                    int64_t heads, const AttentionWeights& w, TensorView out,
                    const ExecContext& ctx) {
  const Shape shape{x.rows(), w.query.out_features()};
  Tensor q(shape), k(shape), v(shape), context(shape);
  w.query.forward(x, q.view(), ctx);
  w.key.forward(x, k.view(), ctx);
  w.value.forward(x, v.view(), ctx);
  attention_core(q.view(), k.view(), v.view(), mask, batch, seq, heads, context.view(), ctx);
  w.output.forward(context.view(), out, ctx);
}

}  // namespace am::kernels
