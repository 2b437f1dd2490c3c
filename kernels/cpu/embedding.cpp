#include "kernels/cpu/embedding.h"

#include "common/check.h"

namespace am::kernels {

void embed_tokens(const int32_t* token_ids, const int32_t* type_ids, int64_t batch, int64_t seq,
                  ConstTensorView word, ConstTensorView position, ConstTensorView token_type,
                  TensorView out, const ExecContext& ctx) {
  const int64_t hidden = out.cols();
  AM_CHECK(word.cols() == hidden && position.cols() == hidden && token_type.cols() == hidden,
                  "embedding tables must share the hidden size");
  AM_CHECK(out.rows() == batch * seq, "embedding output must be [batch*seq, hidden]");
  AM_CHECK(seq <= position.rows(), "sequence longer than the position table");
  parallel_for(ctx, batch * seq, 32, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int32_t id = token_ids[t];
      const int32_t type = type_ids != nullptr ? type_ids[t] : 0;
      AM_CHECK(id >= 0 && id < word.rows(), "token id outside the vocabulary");
      AM_CHECK(type >= 0 && type < token_type.rows(), "token type outside its table");
      const float* w = word.row(id);
      const float* p = position.row(t % seq);
      const float* ty = token_type.row(type);
      float* o = out.row(t);
      for (int64_t i = 0; i < hidden; ++i) o[i] = w[i] + p[i] + ty[i];
    }
  });
}

}  // namespace am::kernels
