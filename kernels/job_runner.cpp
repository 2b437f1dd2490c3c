#include "kernels/job_runner.h"

#include <exception>
#include <new>
#include <optional>
#include <string>
#include <utility>

#include "common/log.h"
#include "kernels/accuracy.h"
#include "kernels/backend.h"
#include "kernels/cpu_backend.h"
#include "kernels/cpu_features.h"
#include "kernels/matmul.h"
#include "kernels/measure.h"
#include "kernels/models/encoder_only.h"
#include "kernels/thread_pool.h"
#include "kernels/tolerances.h"
#include "kernels/weight_format.h"

namespace am::kernels {
namespace {

constexpr const char* kStatusPass = "pass";
constexpr const char* kStatusFail = "fail";
constexpr const char* kStatusUnsupported = "unsupported";
constexpr const char* kStatusError = "error";
constexpr const char* kBackendCpu = "cpu";
constexpr const char* kArchitectureEncoderOnly = "encoder-only";

JobOutcome outcome(std::string status, std::string reason, nlohmann::json metrics) {
  JobOutcome o;
  o.status = std::move(status);
  o.reason = std::move(reason);
  o.metrics = std::move(metrics);
  return o;
}

// Unsupported means "the core cannot run this combination"; anything else is a bad job.
JobOutcome from_status(const Status& s, nlohmann::json metrics) {
  return outcome(s.code() == StatusCode::kUnsupported ? kStatusUnsupported : kStatusError,
                 s.message(), std::move(metrics));
}

JobOutcome run_encoder_job(const jobs::JobSpec& spec, WeightFormat format, nlohmann::json metrics) {
  auto log = get_logger("kernels/job");
  const bool want_accuracy = spec.mode != jobs::kModePerf;
  const bool want_perf = spec.mode != jobs::kModeAccuracy;

  Result<EncoderConfig> config = encoder_config_from_json(spec.model_config);
  if (!config.ok()) return from_status(config.status(), std::move(metrics));
  const EncoderInput input =
      make_synthetic_encoder_input(*config, spec.batch, spec.seq_len, spec.seed);
  if (Status s = validate_encoder_input(*config, input); !s.ok()) {
    return from_status(s, std::move(metrics));
  }

  Result<KernelPath> path = select_kernel_path();
  if (!path.ok()) return outcome(kStatusError, path.status().message(), std::move(metrics));
  const int threads = spec.threads > 0 ? spec.threads : default_thread_count();
  ThreadPool pool(threads);
  set_blas_threads(threads);
  const ExecContext ctx{*path, &pool};
  metrics["threads"] = threads;
  metrics["kernel_path"] = std::string(kernel_path_name(*path));
  // The job runs on its backend; the f32 reference always runs on the cpu.
  Result<std::unique_ptr<Backend>> backend = make_backend(spec.backend, ctx);
  if (!backend.ok()) return from_status(backend.status(), std::move(metrics));
  CpuBackend reference_backend(ctx);
  metrics["device"] = (*backend)->device_name();

  // The job's model. With accuracy wanted it is derived from the f32 reference (same seed, so
  // exactly the quantization of the reference weights) instead of being drawn a second time.
  std::optional<EncoderModel> reference;
  std::optional<EncoderModel> model;
  if (want_accuracy) {
    Result<EncoderModel> ref =
        EncoderModel::create_synthetic(*config, WeightFormat::kF32, spec.seed, ctx);
    if (!ref.ok()) return from_status(ref.status(), std::move(metrics));
    reference.emplace(std::move(ref).value());
    if (format != WeightFormat::kF32) model.emplace(reference->converted(format, ctx));
  } else {
    Result<EncoderModel> m = EncoderModel::create_synthetic(*config, format, spec.seed, ctx);
    if (!m.ok()) return from_status(m.status(), std::move(metrics));
    model.emplace(std::move(m).value());
  }
  const EncoderModel& job_model = model ? *model : *reference;
  for (const auto& [op, op_format] : job_model.required_ops()) {
    if (Status s = (*backend)->supports(op, op_format); !s.ok()) return from_status(s, std::move(metrics));
  }
  const int64_t rows = spec.batch * static_cast<int64_t>(spec.seq_len);

  Verdict verdict{kStatusPass, ""};
  if (want_accuracy) {
    Result<Tensor> ref_out = reference->forward(input, reference_backend);
    if (!ref_out.ok()) return from_status(ref_out.status(), std::move(metrics));
    Result<Tensor> out = job_model.forward(input, **backend);
    if (!out.ok()) return from_status(out.status(), std::move(metrics));
    const AccuracyMetrics acc = compare_outputs(out->data(), ref_out->data(), rows, config->hidden);
    metrics["accuracy"] = to_json(acc);
    const std::optional<Tolerance> tol = tolerance_for(spec.precision);
    if (!tol) {
      return outcome(kStatusError, "no accuracy tolerance defined for " + spec.precision,
                     std::move(metrics));
    }
    verdict = classify_accuracy(acc, *tol);
    log->info("{} {} {}: nmse {:.3g} cosine {:.6f} top1 {:.3f} -> {}", spec.model, spec.precision,
              kernel_path_name(*path), acc.nmse, acc.cosine, acc.top1_agreement, verdict.status);
    if (model) reference.reset();  // the reference is no longer needed; free it before timing
  }

  if (want_perf) {
    Tensor last;
    MeasureOptions options;
    options.warmup = spec.warmup;
    options.min_reps = spec.min_reps;
    options.max_reps = spec.max_reps;
    options.min_time_s = spec.min_time_s;
    Result<LatencyStats> stats = measure_latency(
        [&]() -> Status {
          Result<Tensor> out = job_model.forward(input, **backend);
          if (!out.ok()) return out.status();
          last = std::move(out).value();
          return Status::Ok();
        },
        options);
    if (!stats.ok()) return from_status(stats.status(), std::move(metrics));
    metrics["latency_ms"] = to_json(*stats);
    const double median_s = stats->median_ms / 1e3;
    if (median_s > 0.0) {
      metrics["throughput"] = {{"samples_per_s", spec.batch / median_s},
                               {"tokens_per_s", static_cast<double>(rows) / median_s}};
    }
    const int64_t nonfinite = count_nonfinite(last.data(), last.numel());
    if (nonfinite > 0) {
      verdict = {kStatusFail, std::to_string(nonfinite) + " NaN/Inf values in the output"};
    }
    log->info("{} {} {} batch {} seq {}: median {:.3f} ms over {} runs", spec.model, spec.precision,
              kernel_path_name(*path), spec.batch, spec.seq_len, stats->median_ms,
              stats->samples_ms.size());
  }

  metrics["memory"] = {{"weights_bytes", job_model.weights_bytes()},
                       {"peak_rss_bytes", peak_rss_bytes()}};
  return outcome(verdict.status, verdict.reason, std::move(metrics));
}

JobOutcome run_job_checked(const jobs::JobSpec& spec) {
  nlohmann::json metrics = {{"seed", spec.seed}};
  if (spec.architecture != kArchitectureEncoderOnly) {
    return outcome(kStatusUnsupported,
                   "architecture " + spec.architecture + " has no graph builder yet",
                   std::move(metrics));
  }
  // Format names are backend-independent; whether the job's backend runs the format is asked
  // of the backend itself (Backend::supports) once it exists.
  Result<WeightFormat> format = weight_format_for_precision(spec.precision, kBackendCpu);
  if (!format.ok()) return from_status(format.status(), std::move(metrics));
  if (spec.mode != jobs::kModeAccuracy && spec.mode != jobs::kModePerf &&
      spec.mode != jobs::kModeBoth) {
    return outcome(kStatusError, "unknown mode '" + spec.mode + "' (expected accuracy|perf|both)",
                   std::move(metrics));
  }
  if (spec.batch < 1 || spec.seq_len < 1) {
    return outcome(kStatusError, "batch and seq_len must be positive", std::move(metrics));
  }
  return run_encoder_job(spec, *format, std::move(metrics));
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
    return outcome(kStatusError, std::string("internal error: ") + e.what(), {{"seed", spec.seed}});
  } catch (...) {
    return outcome(kStatusError, "internal error: unknown exception", {{"seed", spec.seed}});
  }
}

}  // namespace am::kernels
