// The rag family (RAG-sequence): a DPR question encoder (BERT, the encoder-only family's
// EncoderModel) pools each question into its [CLS] vector; inner-product scores against a
// seeded, L2-normalised passage index pick the top n_docs passages (Backend::top_k); a BART
// generator then reads each (passage, question) pair — the passage's token ids followed by the
// question's, as RagRetriever's postprocess_docs joins "title / text // question" — and decodes
// teacher-forced. The question's ids are reused for the generator modulo its vocabulary (a
// stand-in for re-tokenising the question with BART's tokenizer).
// weights_path: a RagSequenceForGeneration / RagTokenForGeneration checkpoint
// (rag.question_encoder.question_encoder.bert_model.* as BERT's names, rag.generator.* as
// BART's, encoder_decoder_checkpoint.h). The passage index is data, not weights (the published
// one is a 21M-passage dataset): it stays seeded, or is given (build_rag_graph_on).
//
// Config keys (InvalidArgument naming the key):
//   question_layers, question_hidden, question_heads, question_intermediate, question_vocab,
//   question_max_positions        the DPR question encoder (BERT)
//   layers, decoder_layers, hidden, heads, intermediate, vocab, max_positions
//                                 the BART generator (encoder-decoder keys, style "bart")
//   n_docs (5), passages (1000: index size), passage_len (32 tokens per passage), decode_steps (8)
// Output = generator logits [batch * n_docs * (decode_steps + 1), vocab]; prefill time covers
// question encoding, retrieval, the generator's encoder and its first decoder position.
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kernels/models/encoder_decoder.h"
#include "kernels/models/encoder_decoder_checkpoint.h"
#include "kernels/models/encoder_only.h"
#include "kernels/models/encoder_only_checkpoint.h"
#include "kernels/models/families.h"
#include "kernels/models/rag.h"
#include "kernels/rng.h"
#include "kernels/weights/checkpoint.h"
#include "kernels/weights/checkpoints.h"

namespace am::kernels {
namespace {

constexpr uint64_t kIndexStream = 0x494E4458ull;    // "INDX"
constexpr uint64_t kPassageStream = 0x50415353ull;  // "PASS"
constexpr uint64_t kForcedStream = 7;

class RagGraph final : public ModelGraph {
 public:
  std::vector<std::pair<Op, WeightFormat>> required_ops() const override {
    std::vector<std::pair<Op, WeightFormat>> ops = question.required_ops();
    add_op(ops, Op::kLinear, index.format());
    add_op(ops, Op::kTopK, WeightFormat::kF32);
    for (const auto& [op, f] : generator.required_ops()) add_op(ops, op, f);
    return ops;
  }
  std::size_t weights_bytes() const override {
    return question.weights_bytes() + index.weight_bytes() + generator.weights_bytes();
  }
  int64_t samples_per_run() const override { return input.batch; }
  int64_t tokens_per_run() const override {
    return input.batch * (input.seq + n_docs * (input.seq + passage_len + 1 + generator.config.decode_steps));
  }

  Result<GraphOutput> forward(Backend& be) const override {
    const auto started = std::chrono::steady_clock::now();
    const int64_t batch = input.batch, seq = input.seq;
    AM_ASSIGN_OR_RETURN(Tensor hidden, question.forward_resident(input, be));
    hidden.reshape(Shape{batch * seq, question.config().hidden});
    std::vector<int32_t> cls(static_cast<std::size_t>(batch));
    for (int64_t b = 0; b < batch; ++b) cls[static_cast<std::size_t>(b)] = static_cast<int32_t>(b * seq);
    Tensor query = be.tensor(Shape{batch, question.config().hidden});
    AM_RETURN_IF_ERROR(be.index_rows(hidden.view(), cls.data(), batch, query.view()));
    Tensor scores = be.tensor(Shape{batch, index.out_features()});
    AM_RETURN_IF_ERROR(be.linear(index, query.view(), scores.view()));
    std::vector<int32_t> docs(static_cast<std::size_t>(batch * n_docs));
    std::vector<float> doc_weights(static_cast<std::size_t>(batch * n_docs));
    AM_RETURN_IF_ERROR(be.top_k(scores.view(), n_docs, false, docs.data(), doc_weights.data()));
    // Generator input per (question, passage): question tokens then the passage's tokens.
    const int64_t src_len = seq + passage_len;
    std::vector<int32_t> src(static_cast<std::size_t>(batch * n_docs * src_len));
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t d = 0; d < n_docs; ++d) {
        int32_t* row = &src[static_cast<std::size_t>((b * n_docs + d) * src_len)];
        const int32_t p = docs[static_cast<std::size_t>(b * n_docs + d)];
        std::memcpy(row, &passage_tokens[static_cast<std::size_t>(p * passage_len)],
                    static_cast<std::size_t>(passage_len) * sizeof(int32_t));
        for (int64_t s = 0; s < seq; ++s) {
          row[passage_len + s] =
              input.token_ids[static_cast<std::size_t>(b * seq + s)] % static_cast<int32_t>(generator.config.vocab);
        }
      }
    GraphOutput out;
    out.logits = true;
    out.output = Tensor(Shape{batch * n_docs * (generator.config.decode_steps + 1), generator.config.vocab});
    AM_RETURN_IF_ERROR(generator.generate(be, batch * n_docs, src, src_len, nullptr, forced, started, out.output,
                                          out.phases));
    out.phases.prefill_tokens += batch * seq;
    return out;
  }

  EncoderModel question;
  EncoderInput input;
  Linear index;  // [passages, question_hidden]: scores = query · passages^T
  EncDecModel generator;
  int64_t n_docs = 5, passage_len = 32;
  std::vector<int32_t> passage_tokens, forced;
};

}  // namespace

Result<std::unique_ptr<ModelGraph>> build_rag_graph(const jobs::JobSpec& spec, Precision precision,
                                                    const ExecContext& ctx) {
  return build_rag_graph_on(spec, precision, ctx, nullptr);
}

Result<std::unique_ptr<ModelGraph>> build_rag_graph_on(const jobs::JobSpec& spec, Precision precision,
                                                       const ExecContext& ctx, const RagInputs* given) {
  const nlohmann::json& doc = spec.model_config;
  if (!doc.is_object()) return invalid_argument("rag config must be a JSON object");
  ConfigReader cfg(doc, "rag");
  nlohmann::json q = nlohmann::json::object();
  for (const char* key : {"layers", "hidden", "heads", "intermediate", "vocab", "max_positions"}) {
    const std::string name = std::string("question_") + key;
    if (!doc.contains(name)) return cfg.error("missing '" + name + "'");
    q[key] = doc.at(name);
  }
  AM_ASSIGN_OR_RETURN(EncoderConfig qc, encoder_config_from_json(q));
  nlohmann::json g = nlohmann::json::object();
  for (const auto& [key, value] : doc.items()) {
    if (key.rfind("question_", 0) != 0 && key != "n_docs" && key != "passages" && key != "passage_len") g[key] = value;
  }
  g["style"] = "bart";
  AM_ASSIGN_OR_RETURN(EncDecConfig gc, enc_dec_config_from_json(g, "rag"));
  const FormatPlan formats = format_plan_for(precision);
  if (spec.batch < 1 || spec.seq_len < 1) return invalid_argument("rag: batch and seq_len must be positive");

  auto graph = std::make_unique<RagGraph>();
  AM_ASSIGN_OR_RETURN(graph->n_docs, cfg.dim("n_docs", 5));
  AM_ASSIGN_OR_RETURN(int64_t passages, cfg.dim("passages", 1000));
  AM_ASSIGN_OR_RETURN(graph->passage_len, cfg.dim("passage_len", 32));
  if (graph->n_docs > passages) return cfg.error("'n_docs' exceeds 'passages'");
  if (spec.seq_len + graph->passage_len > gc.max_positions) {
    return cfg.error("seq_len + passage_len exceeds the generator's max_positions");
  }
  const std::size_t bytes = EncDecModel::estimate_bytes(gc, formats) +
                            static_cast<std::size_t>(passages * qc.hidden + qc.vocab * qc.hidden) * sizeof(float) +
                            static_cast<std::size_t>(qc.layers) * (4 * linear_bytes(qc.hidden, qc.hidden, formats.attention, true) +
                                                                   2 * linear_bytes(qc.hidden, qc.intermediate, formats.attention, true));
  AM_RETURN_IF_ERROR(check_weight_budget("rag", bytes));
  // model_config "weights_path" names a RAG checkpoint; without it, seeded weights.
  AM_ASSIGN_OR_RETURN(std::optional<std::string> checkpoint, checkpoint_path_from(spec.model_config, "rag"));
  if (checkpoint) {
    AM_ASSIGN_OR_RETURN(Checkpoint file, Checkpoint::open(*checkpoint));
    AM_ASSIGN_OR_RETURN(graph->question, load_bert_checkpoint(file, qc, formats.attention, ctx,
                                                              "rag.question_encoder.question_encoder.bert_model."));
    AM_ASSIGN_OR_RETURN(graph->generator, load_bart_checkpoint(file, gc, formats, ctx, "rag.generator."));
  } else {
    AM_ASSIGN_OR_RETURN(graph->question, EncoderModel::create_synthetic(qc, formats.attention, spec.seed, ctx));
    AM_ASSIGN_OR_RETURN(graph->generator, EncDecModel::create_synthetic(gc, formats, spec.seed, ctx));
  }
  graph->input = make_synthetic_encoder_input(qc, spec.batch, spec.seq_len, spec.seed);
  Tensor index(Shape{passages, qc.hidden});
  if (given) {
    // The question (one real span, one token type) and the index as given.
    const std::size_t q = static_cast<std::size_t>(spec.batch * spec.seq_len);
    if (given->question.size() != q || static_cast<int64_t>(given->index.size()) != passages * qc.hidden ||
        static_cast<int64_t>(given->passage_tokens.size()) != passages * graph->passage_len ||
        static_cast<int64_t>(given->forced.size()) != spec.batch * graph->n_docs * gc.decode_steps) {
      return invalid_argument("rag: given question must be batch*seq_len ids, index passages*question_hidden, "
                              "passage_tokens passages*passage_len, forced batch*n_docs*decode_steps");
    }
    graph->input.token_ids = given->question;
    graph->input.token_type_ids.assign(q, 0);
    graph->input.attention_mask.assign(q, 1);
    std::copy(given->index.begin(), given->index.end(), index.data());
    graph->passage_tokens = given->passage_tokens;
    graph->forced = given->forced;
  } else {
    // Passage embeddings: seeded, L2-normalised rows, kept f32 like any embedding table.
    SeededWeights src(spec.seed, kIndexStream, ctx);
    index = src.normal(Shape{passages, qc.hidden}, 0.0f, 1.0f);
    for (int64_t p = 0; p < passages; ++p) {
      double sq = 0;
      for (int64_t c = 0; c < qc.hidden; ++c) sq += static_cast<double>(index.row(p)[c]) * index.row(p)[c];
      const float inv = static_cast<float>(1.0 / std::sqrt(sq));
      for (int64_t c = 0; c < qc.hidden; ++c) index.row(p)[c] *= inv;
    }
    graph->passage_tokens = seeded_token_ids(passages * graph->passage_len, gc.vocab, spec.seed, kPassageStream);
    graph->forced = seeded_token_ids(spec.batch * graph->n_docs * gc.decode_steps, gc.vocab, spec.seed, kForcedStream);
  }
  AM_RETURN_IF_ERROR(validate_encoder_input(qc, graph->input));
  for (int32_t id : graph->passage_tokens) {
    if (id < 0 || id >= gc.vocab) {
      return invalid_argument("rag: passage token id " + std::to_string(id) + " is outside the generator's vocabulary");
    }
  }
  graph->index = Linear::create(std::move(index), Tensor(), WeightFormat::kF32, ctx);
  return std::unique_ptr<ModelGraph>(std::move(graph));
}

}  // namespace am::kernels
