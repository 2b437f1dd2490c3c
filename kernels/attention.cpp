#include "kernels/attention.h"

#include <cmath>
#include <limits>
#include <vector>

#include "kernels/check.h"
#include "kernels/softmax.h"
#include "kernels/vec_f32.h"

namespace am::kernels {
namespace {

// Query rows per task: the keys and values of one (sample, head) stay in cache across them.
constexpr int64_t kQueriesPerTask = 16;

}  // namespace

void attention_core(ConstTensorView q, ConstTensorView k, ConstTensorView v, const int32_t* mask,
                    int64_t batch, int64_t seq, int64_t heads, TensorView out,
                    const ExecContext& ctx) {
  const int64_t hidden = q.cols();
  AM_KERNEL_CHECK(heads > 0 && hidden % heads == 0, "hidden must be a multiple of heads");
  AM_KERNEL_CHECK(q.rows() == batch * seq && k.rows() == q.rows() && v.rows() == q.rows() &&
                      out.rows() == q.rows(),
                  "attention tensors must be [batch*seq, hidden]");
  AM_KERNEL_CHECK(k.cols() == hidden && v.cols() == hidden && out.cols() == hidden,
                  "attention tensors must share the hidden size");
  const int64_t head_dim = hidden / heads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  constexpr float kMasked = -std::numeric_limits<float>::infinity();

  parallel_for(ctx, batch * heads * seq, kQueriesPerTask, [&](int64_t begin, int64_t end) {
    std::vector<float> scores(static_cast<std::size_t>(seq));
    for (int64_t idx = begin; idx < end; ++idx) {
      const int64_t i = idx % seq;  // query position
      const int64_t h = (idx / seq) % heads;
      const int64_t b = idx / (seq * heads);
      const int64_t base = b * seq;
      const int64_t col = h * head_dim;
      const float* qi = q.row(base + i) + col;
      dot_rows_f32(qi, k.row(base) + col, hidden, seq, head_dim, scores.data(), ctx.path);
      for (int64_t j = 0; j < seq; ++j) {
        const bool padded = mask != nullptr && mask[base + j] == 0;
        scores[j] = padded ? kMasked : scores[j] * scale;
      }
      softmax_row(scores.data(), seq);
      weighted_sum_rows_f32(scores.data(), v.row(base) + col, hidden, seq, head_dim,
                            out.row(base + i) + col, ctx.path);
    }
  });
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
