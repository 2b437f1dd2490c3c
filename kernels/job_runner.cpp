#include "kernels/job_runner.h"

#include <exception>
#include <new>
#include <optional>
#include <string>
#include <utility>

#include "common/log.h"
#include "kernels/accuracy.h"
#include "kernels/backend.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/matmul.h"
#include "kernels/measure.h"
#include "kernels/models/model.h"
#include "kernels/thread_pool.h"
#include "kernels/tolerances.h"
#include "kernels/formats/weight_format.h"

namespace am::kernels {
namespace {

constexpr const char* kBackendCpu = "cpu";

JobOutcome outcome(ResultStatus status, std::string reason, nlohmann::json metrics) {
  JobOutcome o;
  o.status = status;
  o.reason = std::move(reason);
  o.metrics = std::move(metrics);
  return o;
}

// Unsupported means "the core cannot run this combination"; anything else is a bad job.
JobOutcome from_status(const Status& s, nlohmann::json metrics) {
  return outcome(s.code() == StatusCode::kUnsupported ? ResultStatus::kUnsupported : ResultStatus::kError,
                 s.message(), std::move(metrics));
}

// Every perf measurement but the baseline's own carries a paired cpu f32 measurement.
bool paired_baseline_applies(const jobs::JobSpec& spec) {
  return !(spec.backend == kBackendCpu && spec.precision == Precision::kF32);
}

JobOutcome run_graph_job(const jobs::JobSpec& spec, nlohmann::json metrics) {
  auto log = get_logger("kernels/job");
  const bool want_accuracy = spec.mode != jobs::kModePerf;
  const bool want_perf = spec.mode != jobs::kModeAccuracy;

  Result<KernelPath> path = select_kernel_path();
  if (!path.ok()) return outcome(ResultStatus::kError, path.status().message(), std::move(metrics));
  const int threads = spec.threads > 0 ? spec.threads : default_thread_count();
  // The pool owns the cores; f32 products past the OpenBLAS crossover run single-threaded
  // sgemm slices on it (kernels/cpu/matmul.h), so OpenBLAS starts no threads of its own.
  ThreadPool pool(threads);
  ExecContext ctx{*path, &pool};
  // Block weights are built once, in the layout of the backend that runs them: the cpu
  // execution layout for cpu jobs, GGUF rows for a device backend to upload (exec_context.h).
  // The f32 reference graph is f32, which has one layout.
  ctx.cpu_weights = spec.backend == kBackendCpu;
  metrics["threads"] = threads;
  metrics["kernel_path"] = std::string(kernel_path_name(*path));
  // The job runs on its backend; the f32 reference always runs on the cpu.
  Result<std::unique_ptr<Backend>> backend = make_backend(spec.backend, ctx);
  // Only the "no device" of a driver that did not load: a backend missing from the build, or an
  // ICD loader missing from the host, is what it says.
  const bool no_device = !backend.ok() && (backend.status().message().rfind("no OpenCL device found", 0) == 0 ||
                                           backend.status().message().rfind("no Vulkan device found", 0) == 0);
  if (no_device && spec.memory_limit_mb > 0) {
    // Under the job's memory limit (an address-space limit) a device driver that reserves more
    // address space than that fails to load, and says "no device": not a backend that lacks
    // something (unsupported, an accepted status) but a limit to raise.
    return outcome(ResultStatus::kError,
                   backend.status().message() + " (under the job's memory limit of " +
                       std::to_string(spec.memory_limit_mb) +
                       " MiB: a device driver may need more address space than that; raise memory_limit_mb)",
                   std::move(metrics));
  }
  if (!backend.ok()) return from_status(backend.status(), std::move(metrics));
  metrics["device"] = (*backend)->device_name();

  Result<std::unique_ptr<ModelGraph>> graph = build_graph(spec, spec.precision, ctx);
  if (!graph.ok()) return from_status(graph.status(), std::move(metrics));
  for (const auto& [op, op_format] : (*graph)->required_ops()) {
    if (Status s = (*backend)->supports(op, op_format); !s.ok()) return from_status(s, std::move(metrics));
  }
  metrics["memory"] = {{"weights_bytes", (*graph)->weights_bytes()}};

  Verdict verdict{ResultStatus::kPass, ""};
  std::optional<int64_t> candidate_peak_rss;   // set when a paired baseline is built
  if (want_accuracy) {
    // The reference is built and run first and freed before timing starts.
    AccuracyMetrics acc;
    std::optional<double> kl;
    {
      Result<std::unique_ptr<ModelGraph>> reference = build_graph(spec, Precision::kF32, ctx);
      if (!reference.ok()) return from_status(reference.status(), std::move(metrics));
      CpuBackend reference_backend(ctx);
      Result<GraphOutput> ref_out = (*reference)->run(reference_backend);
      if (!ref_out.ok()) return from_status(ref_out.status(), std::move(metrics));
      Result<GraphOutput> out = (*graph)->run(**backend);
      if (!out.ok()) return from_status(out.status(), std::move(metrics));
      const Tensor& y = out->output;
      const Tensor& r = ref_out->output;
      if (y.rows() != r.rows() || y.cols() != r.cols()) {
        return outcome(ResultStatus::kError, "output shape differs from the reference's", std::move(metrics));
      }
      acc = compare_outputs(y.data(), r.data(), y.rows(), y.cols());
      if (out->logits) kl = mean_kl_divergence(y.data(), r.data(), y.rows(), y.cols());
    }
    metrics["accuracy"] = to_json(acc);
    if (kl) metrics["accuracy"]["kl_divergence"] = *kl;
    verdict = classify_accuracy(acc, tolerance_for(spec.precision));
    log->info("{} {} {}: nmse {:.3g} cosine {:.6f} top1 {:.3f} -> {}", spec.model,
              jobs::to_string(spec.precision), spec.backend, acc.nmse, acc.cosine,
              acc.top1_agreement, to_string(verdict.status));
  }

  if (want_perf) {
    Tensor last;
    std::vector<double> prefill_ms, decode_ms, first_token_ms;
    PhaseTimes phases;
    MeasureOptions options;
    options.warmup = spec.warmup;
    options.min_reps = spec.min_reps;
    options.max_reps = spec.max_reps;
    options.min_time_s = spec.min_time_s;
    // Warm-up runs call this too; their phase times are dropped below (the first `warmup`).
    auto run_candidate = [&]() -> Status {
      Result<GraphOutput> out = (*graph)->run(**backend);
      if (!out.ok()) return out.status();
      phases = out->phases;
      prefill_ms.push_back(phases.prefill_ms);
      decode_ms.push_back(phases.decode_ms);
      first_token_ms.push_back(phases.first_token_ms);
      last = std::move(out->output);
      return Status::Ok();
    };
    Result<LatencyStats> stats = LatencyStats{};
    if (paired_baseline_applies(spec)) {
      // The cpu f32 run of the same model and shape, timed in blocks alternating with this
      // job's own (measure_paired_latency): ratings divide the two, and both sides see the same
      // host state. The f32 graph is built after the candidate's warm-up, so the job's peak RSS
      // is recorded before it exists and stays the candidate's own.
      std::unique_ptr<ModelGraph> baseline_graph;
      std::optional<CpuBackend> baseline_backend;
      // A baseline that cannot be built or run (an f32 graph past the job's memory limit) is
      // no fault of the job: it is then measured alone, as an unpaired job (matrix.h).
      std::optional<std::string> baseline_failed;
      auto build_baseline = [&]() -> Status {
        candidate_peak_rss = peak_rss_bytes();
        try {
          Result<std::unique_ptr<ModelGraph>> built = build_graph(spec, Precision::kF32, ctx);
          if (!built.ok()) {
            baseline_failed = built.status().message();
            return built.status();
          }
          baseline_graph = std::move(*built);
        } catch (const std::bad_alloc&) {
          baseline_failed = "out of memory building the f32 graph";
          return resource_exhausted(*baseline_failed);
        }
        baseline_backend.emplace(ctx);
        return Status::Ok();
      };
      auto run_baseline = [&]() -> Status {
        try {
          Status s = baseline_graph->run(*baseline_backend).status();
          if (!s.ok()) baseline_failed = s.message();
          return s;
        } catch (const std::bad_alloc&) {
          baseline_failed = "out of memory running the f32 graph";
          return resource_exhausted(*baseline_failed);
        }
      };
      Result<PairedLatency> paired = measure_paired_latency(run_candidate, build_baseline, run_baseline, options);
      if (!paired.ok() && baseline_failed) {
        log->warn("{}: no paired f32 baseline ({}); measuring the job alone", spec.model, *baseline_failed);
        baseline_graph.reset();
        baseline_backend.reset();
        prefill_ms.clear();
        decode_ms.clear();
        first_token_ms.clear();
        metrics["paired_baseline"] = {{"skipped", *baseline_failed}};
        stats = measure_latency(run_candidate, options);
      } else {
        if (!paired.ok()) return from_status(paired.status(), std::move(metrics));
        metrics["paired_baseline"] = {{"backend", kBackendCpu},
                                      {"precision", std::string(jobs::to_string(Precision::kF32))},
                                      {"blocks", paired->blocks},
                                      {"latency_ms", to_json(paired->baseline)}};
        stats = std::move(paired->candidate);
      }
    } else {
      stats = measure_latency(run_candidate, options);
    }
    if (!stats.ok()) return from_status(stats.status(), std::move(metrics));
    metrics["latency_ms"] = to_json(*stats);
    const double median_s = stats->median_ms / 1e3;
    if (median_s > 0.0) {
      metrics["throughput"] = {{"samples_per_s", static_cast<double>((*graph)->samples_per_run()) / median_s}};
      if ((*graph)->tokens_per_run() > 0) {
        metrics["throughput"]["tokens_per_s"] = static_cast<double>((*graph)->tokens_per_run()) / median_s;
      }
    }
    if (phases.decode_tokens > 0 || phases.prefill_tokens > 0) {
      const std::size_t skip = std::min(prefill_ms.size(), static_cast<std::size_t>(std::max(0, spec.warmup)));
      auto measured = [&](const std::vector<double>& v) {
        return summarize_latency(std::vector<double>(v.begin() + static_cast<std::ptrdiff_t>(skip), v.end()));
      };
      const LatencyStats prefill = measured(prefill_ms);
      const LatencyStats decode = measured(decode_ms);
      const LatencyStats ttft = measured(first_token_ms);
      nlohmann::json gen = {{"prefill_ms_median", prefill.median_ms},
                            {"decode_ms_median", decode.median_ms},
                            {"time_to_first_token_ms_median", ttft.median_ms},
                            {"prefill_tokens", phases.prefill_tokens},
                            {"decode_tokens", phases.decode_tokens}};
      if (prefill.median_ms > 0) gen["prefill_tokens_per_s"] = phases.prefill_tokens / (prefill.median_ms / 1e3);
      if (decode.median_ms > 0) gen["decode_tokens_per_s"] = phases.decode_tokens / (decode.median_ms / 1e3);
      metrics["generation"] = gen;
    }
    const int64_t nonfinite = count_nonfinite(last.data(), last.numel());
    if (nonfinite > 0) {
      verdict = {ResultStatus::kFail, std::to_string(nonfinite) + " NaN/Inf values in the output"};
    }
    log->info("{} {} {} batch {} seq {}: median {:.3f} ms over {} runs", spec.model, jobs::to_string(spec.precision),
              spec.backend, spec.batch, spec.seq_len, stats->median_ms, stats->samples_ms.size());
  }

  metrics["memory"]["peak_rss_bytes"] = candidate_peak_rss.value_or(peak_rss_bytes());
  return outcome(verdict.status, verdict.reason, std::move(metrics));
}

JobOutcome run_job_checked(const jobs::JobSpec& spec) {
  nlohmann::json metrics = {{"seed", spec.seed}};
  if (spec.mode != jobs::kModeAccuracy && spec.mode != jobs::kModePerf &&
      spec.mode != jobs::kModeBoth) {
    return outcome(ResultStatus::kError, "unknown mode '" + spec.mode + "' (expected accuracy|perf|both)",
                   std::move(metrics));
  }
  if (spec.batch < 1 || spec.seq_len < 1) {
    return outcome(ResultStatus::kError, "batch and seq_len must be positive", std::move(metrics));
  }
  return run_graph_job(spec, std::move(metrics));
}

}  // namespace

JobOutcome run_job(const jobs::JobSpec& spec) {
  try {
    return run_job_checked(spec);
  } catch (const std::bad_alloc&) {
    // Out of memory is a test outcome ("oom"), decided by the job-mode process that owns the
    // exit code; see the header.
    throw;
  } catch (const std::exception& e) {
    return outcome(ResultStatus::kError, std::string("internal error: ") + e.what(), {{"seed", spec.seed}});
  } catch (...) {
    return outcome(ResultStatus::kError, "internal error: unknown exception", {{"seed", spec.seed}});
  }
}

}  // namespace am::kernels
