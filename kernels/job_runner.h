// Runs one job on this process's hardware with the project's own inference core, and measures it.
//
// Contract: run_job() builds the model graph for spec.architecture with seeded synthetic
// weights (seed = spec.seed), runs it at spec.precision on spec.backend, and — per spec.mode —
// measures latency and/or accuracy against the f32 reference computed on the same seeded inputs.
// It throws nothing but std::bad_alloc: an allocation failure propagates so that the job-mode
// process (worker::run_job_mode) can exit with worker::kExitOutOfMemory and the job is stored as
// "oom"; every other exception is caught and returned as status "error". A combination the core
// cannot run returns a JobOutcome with status "unsupported" and a reason naming the missing
// op/format/architecture; internal errors return status "error". The returned metrics document has
// this shape (fields absent when not measured):
//   {
//     "latency_ms": {"median", "p90", "min", "max", "mean", "stddev", "count", "samples": [...]},
//     "throughput": {"samples_per_s", "tokens_per_s"},
//     "accuracy":   {"nmse", "cosine", "max_abs_err", "top1_agreement", "nonfinite"},
//     "memory":     {"weights_bytes", "peak_rss_bytes"},
//     "threads": N, "seed": S,
//     "kernel_path": "scalar" | "avx2" | "avx512"   (the SIMD path the job ran on)
//   }
// spec.threads = 0 means default_thread_count() (physical cores); the count is applied to the
// core's thread pool and to OpenBLAS (process-wide).
// Statuses: pass | degraded | fail | unsupported | error (see common/protocol.h).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "common/result_status.h"
#include "jobs/job_spec.h"

namespace am::kernels {

struct JobOutcome {
  ResultStatus status = ResultStatus::kError;
  std::string reason;
  nlohmann::json metrics = nlohmann::json::object();
};

JobOutcome run_job(const jobs::JobSpec& spec);

}  // namespace am::kernels
