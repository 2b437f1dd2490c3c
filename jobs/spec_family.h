// Job-spec families: within one model entry the jobs a plan expands to differ only in precision,
// batch size and sequence length (jobs::JobScalars). A family is everything else, kept once; a job
// is its family plus three scalars. This is what lets a coordinator hold a million queued jobs in
// a few hundred megabytes and place them without a JSON document per job (docs/SCALE.md).
//
// Contract:
// - family_of(s) is `s` with neutral scalars; with_scalars(family_of(s), scalars_of(s)) == s.
// - same_family(s, f) == (family_of(s) == f), for every s and f.
// - SpecTemplate::of(spec) pre-renders the canonical JSON of spec's family (to_json(...).dump(),
//   the bytes job ids hash) around the three scalars; canonical(scalars) returns the same bytes as
//   dumping to_json(with_scalars(family, scalars)) without building a document. of() checks the
//   assembled form against real dumps (exact()); where it could not, canonical() dumps for real.
// - Pure and thread-compatible.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "jobs/job_spec.h"

namespace am::jobs {

JobSpec family_of(JobSpec spec);
// family_of(spec) == family, without copying spec: the per-job check of the caches below, where
// a copy per job was a kilobyte of short-lived allocations between each job's long-lived ones
// (the coordinator's heap ended up half holes; docs/SCALE.md).
bool same_family(const JobSpec& spec, const JobSpec& family);

class SpecTemplate {
 public:
  static SpecTemplate of(const JobSpec& spec);
  bool exact() const { return exact_; }
  std::string canonical(const JobScalars& scalars) const;
  const JobSpec& family() const { return family_; }
  // job_hash_of(run_id, canonical(scalars)) in two steps, for exact templates: the FNV-1a state
  // after the bytes up to the precision (run id, "\n", pieces_[0], batch, pieces_[1] — the model
  // config among them), the same for every job of the family with that batch, then the rest.
  uint64_t hash_through_batch(std::string_view run_id, int batch) const;
  uint64_t hash_rest(uint64_t state, const JobScalars& scalars) const;

 private:
  JobSpec family_;
  // The canonical form is pieces_[0] batch pieces_[1] precision pieces_[2] seq_len pieces_[3]
  // ("batch" < "precision" < "seq_len" in the sorted key order of the dump).
  std::vector<std::string> pieces_;
  bool exact_ = false;
};

// The templates of the families met so far, found by model and backend and then compared whole,
// the last one first (jobs in plan order mostly share it). One cache for every place that makes
// canonical JSON a job at a time: plan expansion, the plan hash, the stored spec documents.
class SpecTemplates {
 public:
  // The template of spec's family (valid as long as the cache); `made` (optional) says whether it
  // was made by this call.
  const SpecTemplate& of(const JobSpec& spec, bool* made = nullptr);
  std::string canonical(const JobSpec& spec) { return of(spec).canonical(scalars_of(spec)); }
  // job_hash_of(run_id, canonical of (t, scalars)), the hash through the batch kept per (template, batch):
  // a job then hashes its last few dozen bytes instead of its whole canonical form (the model
  // config sits between batch and precision in the key order).
  // `t` is of(spec), already found.
  uint64_t id_hash(std::string_view run_id, const SpecTemplate& t, const JobScalars& scalars);

 private:
  std::unordered_map<std::string, std::deque<SpecTemplate>> by_model_;   // deque: references stay valid
  const SpecTemplate* last_ = nullptr;
  std::string hashed_run_;  // the run id the states below start from
  std::unordered_map<const SpecTemplate*, std::unordered_map<int, uint64_t>> batch_states_;
};

}  // namespace am::jobs
