// Helpers for the architecture-family graph tests: build a graph from a config through the
// registry, run it on the cpu backend, compare precisions.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "kernels/accuracy.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/models/model.h"
#include "tests/kernels/named_formats.h"
#include "kernels/thread_pool.h"
#include "test_util.h"

namespace am::kernels::testing {

inline jobs::JobSpec family_spec(const std::string& arch, nlohmann::json config, int batch, int seq_len) {
  jobs::JobSpec s;
  s.model = "test-" + arch;
  s.architecture = arch;
  s.model_config = std::move(config);
  s.batch = batch;
  s.seq_len = seq_len;
  s.seed = 1234;
  return s;
}

struct FamilyRun {
  GraphOutput out;
  std::unique_ptr<ModelGraph> graph;
};

inline FamilyRun build_and_run(const jobs::JobSpec& spec, const std::string& precision) {
  ThreadPool pool(2);
  ExecContext ctx{best_kernel_path(), &pool};
  FamilyRun r;
  Result<std::unique_ptr<ModelGraph>> g = build_graph(spec, precision_named(precision), ctx);
  EXPECT_TRUE(g.ok()) << g.status().to_string();
  if (!g.ok()) return r;
  r.graph = std::move(g).value();
  CpuBackend be(ctx);
  Result<GraphOutput> out = r.graph->run(be);
  EXPECT_TRUE(out.ok()) << out.status().to_string();
  if (out.ok()) r.out = std::move(out).value();
  return r;
}

inline double rms(ConstTensorView t) {
  double s = 0;
  for (int64_t i = 0; i < t.numel(); ++i) s += static_cast<double>(t.data[i]) * t.data[i];
  return std::sqrt(s / static_cast<double>(std::max<int64_t>(1, t.numel())));
}

// Shape, finiteness, determinism across two runs, q8_0 close to but not equal to f32.
inline void expect_family_basics(const jobs::JobSpec& spec, int64_t rows, int64_t cols, bool logits,
                                 double max_q8_nmse) {
  FamilyRun a = build_and_run(spec, "f32");
  FamilyRun b = build_and_run(spec, "f32");
  ASSERT_EQ(a.out.output.rows(), rows);
  ASSERT_EQ(a.out.output.cols(), cols);
  EXPECT_EQ(a.out.logits, logits);
  EXPECT_TRUE(all_finite(a.out.output.view()));
  const double r = rms(a.out.output.view());
  EXPECT_GT(r, 1e-3);
  EXPECT_LT(r, 1e3);
  ASSERT_EQ(a.out.output.numel(), b.out.output.numel());
  for (int64_t i = 0; i < a.out.output.numel(); ++i) ASSERT_EQ(a.out.output.data()[i], b.out.output.data()[i]);
  FamilyRun q = build_and_run(spec, "q8_0");
  ASSERT_EQ(q.out.output.numel(), a.out.output.numel());
  AccuracyMetrics m = compare_outputs(q.out.output.data(), a.out.output.data(), rows, cols);
  EXPECT_GT(m.nmse, 0.0);
  EXPECT_LT(m.nmse, max_q8_nmse);
  EXPECT_LT(q.graph->weights_bytes(), a.graph->weights_bytes());
}

class NoOpsBackend final : public Backend {
 public:
  std::string_view name() const override { return "nothing"; }
  std::string device_name() const override { return "none"; }
};

// A backend without ops answers Unsupported naming the first op the graph runs.
inline void expect_unsupported_on_empty_backend(const jobs::JobSpec& spec) {
  ThreadPool pool(1);
  ExecContext ctx{best_kernel_path(), &pool};
  Result<std::unique_ptr<ModelGraph>> g = build_graph(spec, Precision::kF32, ctx);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  NoOpsBackend be;
  Result<GraphOutput> out = (*g)->run(be);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(out.status().message().find("not implemented on backend nothing"), std::string::npos);
  EXPECT_FALSE((*g)->required_ops().empty());
}

}  // namespace am::kernels::testing
