// A job: one (model, backend, precision, batch, shape, mode, seed) with everything a worker
// needs to run it inlined — workers never read the catalog.
//
// Contract: to_json()/job_spec_from_json() round-trip exactly; job_spec_from_json() validates
// every field and names the offending one. compute_job_id() is a pure function of the run id and
// the spec's canonical JSON (sorted keys), so expanding the same plan twice yields the same ids.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include <optional>

#include "common/status.h"
#include "jobs/command_spec.h"
#include "jobs/placement.h"
#include "jobs/precision.h"

namespace am::jobs {

// Names used across the system. Validation lives in names.cpp.
inline constexpr const char* kModeAccuracy = "accuracy";
inline constexpr const char* kModePerf = "perf";
inline constexpr const char* kModeBoth = "both";
// The model_config key naming a checkpoint (a .safetensors file or a Hugging Face checkpoint
// directory) whose weights replace the seeded ones; a plan may set it for any model
// (docs/PLANS.md).
inline constexpr const char* kWeightsPathKey = "weights_path";

bool is_known_backend(std::string_view b);     // cpu, opencl, vulkan, cuda, rocm, openvino, qnn
bool is_known_architecture(std::string_view a);  // the eleven families, e.g. "encoder-only"

struct JobSpec {
  std::string model;              // catalog name, e.g. "bert-tiny"
  std::string architecture;       // family, e.g. "encoder-only"
  // The catalog's [config] table with the plan's overrides applied. Keys depend on the
  // architecture; for encoder-only: layers, hidden, heads, intermediate, vocab, max_positions,
  // type_vocab, norm_eps, activation.
  nlohmann::json model_config = nlohmann::json::object();
  bool scaled = false;            // overrides made the model smaller than published
  std::string backend = "cpu";
  Precision precision = Precision::kF32;
  int batch = 1;
  int seq_len = 32;               // tokens per sample (text models)
  std::string mode = kModeBoth;   // accuracy | perf | both
  uint64_t seed = 0;
  // Performance method: warm-up runs, then repeat until both min_reps and min_time_s are met
  // (and stop at max_reps).
  int warmup = 2;
  int min_reps = 5;
  int max_reps = 1000;
  double min_time_s = 0.5;
  double timeout_s = 120.0;       // wall-clock limit for the job process
  int64_t memory_limit_mb = 0;    // 0 = no limit
  int threads = 0;                // 0 = all cores of the device
  // Worker tags a device must carry to run the job (plan key `tags`, workers' --tag KEY=VALUE).
  // Part of the job's identity only when non-empty, so jobs without tags keep their ids.
  std::map<std::string, std::string> required_tags;
  // Set for an external command job ([[commands]]): the worker runs this program instead of a
  // model of ours. `model` is then the plan's free-text label (or the command's name),
  // `architecture` is "external", and `precision` is one of ours or Precision::kExternal.
  // Part of the job's identity (name, argv, reader), so a changed command is a new job.
  std::optional<CommandSpec> command;
  // Where the job runs (jobs/placement.h). Part of the identity only when not `any`, so jobs of
  // plans from before placements keep their ids; a plan's default is each-class.
  Placement placement = Placement::kAny;
  // Every field, so a field added later is compared too (the coordinator shares one copy of the
  // fields its jobs have in common: coordinator/server.cpp, SpecFamilies).
  bool operator==(const JobSpec&) const = default;
};

// What a plan varies within one model entry: the rest of a JobSpec is its family.
struct JobScalars {
  Precision precision = Precision::kF32;
  int batch = 1;
  int seq_len = 32;
  bool operator==(const JobScalars&) const = default;
};
JobScalars scalars_of(const JobSpec& spec);
// `family` with these scalars: with_scalars(s, scalars_of(s)) == s.
JobSpec with_scalars(JobSpec family, const JobScalars& scalars);

nlohmann::json to_json(const JobSpec& spec);
Result<JobSpec> job_spec_from_json(const nlohmann::json& doc);

// 16 lowercase hex chars; stable across processes and builds. `target` is the placement target
// the job is made for (jobs/placement.h: class_target, device_target); "" for the plan's job
// itself and for an `any` job, whose id is then what it was before placements existed.
std::string compute_job_id(std::string_view run_id, const JobSpec& spec, std::string_view target = {});
// The same from the spec's canonical form (to_json(spec).dump()), for callers that make many
// jobs of one spec (a placement per hardware class) and keep that string.
std::string job_id_of(std::string_view run_id, std::string_view canonical_spec, std::string_view target = {});
// The 64-bit value job_id_of() writes as hex: equal ids <=> equal values.
uint64_t job_hash_of(std::string_view run_id, std::string_view canonical_spec, std::string_view target = {});
// job_hash_of(run_id, canonical_spec, target) from job_hash_of(run_id, canonical_spec): the target's
// part of the hash (none for an empty target), for callers that hashed the spec in pieces
// (SpecTemplates::id_hash).
uint64_t job_hash_with_target(uint64_t spec_hash, std::string_view target);

}  // namespace am::jobs
