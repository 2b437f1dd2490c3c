// Model graphs: one architecture family's computation, built from the Backend ops, on seeded
// synthetic weights and seeded inputs, measured by kernels/job_runner.
//
// Contract:
// - build_graph() builds the graph of spec.architecture from spec.model_config at `precision`
//   (when model_config's weights_path names a Hugging Face checkpoint directory with config.json,
//   that file's architecture settings replace the catalog's first: hf_config.h)
//   (the job's precision, or "f32" for the reference). Weights and inputs depend only on
//   (model_config, batch, seq_len, seed): a graph at a quantized precision holds exactly the
//   quantization of the f32 graph's weights, and both see the same inputs, so their outputs are
//   comparable element by element. Unknown families and configs a family cannot build are
//   Unsupported / InvalidArgument with a message naming the key.
// - required_ops() lists every (op, weight format) run() calls; the runner asks the backend
//   about each before running, so a missing op is reported as `unsupported` with its name.
// - run() executes the whole workload once on `be` (forward(), which keeps activations on a
//   device backend's device) and returns, on the host, the output compared for
//   accuracy: a [rows, cols] tensor whose rows are the units top-1 agreement (and, for logits,
//   KL divergence) are taken over — tokens for text models, samples or patches otherwise.
//   Generative graphs run a prefill and then decode steps token by token, teacher-forced on
//   seeded tokens so the reference and the quantized graph see the same sequence, and fill
//   `phases` with their timings.
// - A graph is immutable after build; run() may be called any number of times and gives
//   bit-identical output on the cpu backend for a given thread count.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"
#include "jobs/job_spec.h"
#include "kernels/backend.h"
#include "kernels/exec_context.h"
#include "kernels/tensor.h"
#include "kernels/formats/weight_format.h"

namespace am::kernels {

// Timings of a generative run (all zero for single-pass graphs).
struct PhaseTimes {
  double prefill_ms = 0.0;        // the prompt, all positions at once
  int64_t prefill_tokens = 0;     // per run, over the batch
  double decode_ms = 0.0;         // all decode steps together
  int64_t decode_tokens = 0;      // per run, over the batch
  double first_token_ms = 0.0;    // prefill + the first decode step: time to first token
};

struct GraphOutput {
  Tensor output;                  // [rows, cols]
  bool logits = false;            // cols are class/vocabulary logits (enables KL divergence)
  PhaseTimes phases;
};

class ModelGraph {
 public:
  virtual ~ModelGraph() = default;
  virtual std::vector<std::pair<Op, WeightFormat>> required_ops() const = 0;
  // Bytes of every weight at its stored format.
  virtual std::size_t weights_bytes() const = 0;
  // Samples and tokens one run processes (tokens 0 for non-text inputs).
  virtual int64_t samples_per_run() const = 0;
  virtual int64_t tokens_per_run() const = 0;
  // Runs forward() and brings its output to the host (Backend::to_host).
  Result<GraphOutput> run(Backend& be) const;

 protected:
  // The graph itself. Activations come from be.tensor(), inputs the host fills included (then
  // be.from_host()), and the host touches one only after be.to_host() (backend.h, Residency).
  virtual Result<GraphOutput> forward(Backend& be) const = 0;
};

Result<std::unique_ptr<ModelGraph>> build_graph(const jobs::JobSpec& spec, Precision precision,
                                                const ExecContext& ctx);

// Graph builders, one per family (kernels/models/<family>.cpp), dispatched by build_graph().
using GraphBuilder = Result<std::unique_ptr<ModelGraph>> (*)(const jobs::JobSpec& spec,
                                                             Precision precision,
                                                             const ExecContext& ctx);
// The builder of an architecture family, or nullptr when the core has none.
GraphBuilder graph_builder_for(std::string_view architecture);

}  // namespace am::kernels
