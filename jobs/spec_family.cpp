#include "jobs/spec_family.h"

#include "common/hash.h"

#include <array>
#include <charconv>

namespace am::jobs {
namespace {

// Values no real job has, so that their rendering can be found in a dump.
constexpr int kBatchMarker = 987654321;
constexpr int kSeqLenMarker = 987654323;

std::string int_text(int v) {
  std::array<char, 16> buf{};
  auto [end, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), v);
  return std::string(buf.data(), end);
}

}  // namespace

JobSpec family_of(JobSpec spec) { return with_scalars(std::move(spec), JobScalars{}); }

bool same_family(const JobSpec& s, const JobSpec& f) {
  // Every field but the scalars, compared as JobSpec's defaulted == would; a field added to
  // JobSpec changes its size and stops the build here (where the size is known: libstdc++ on
  // x86-64) until it is compared too. SpecFamily.SameFamilyAgreesWithComparingCopies checks it.
#if defined(__GLIBCXX__) && defined(__x86_64__)
  static_assert(sizeof(JobSpec) == 408, "JobSpec changed: compare the new field in same_family()");
#endif
  return scalars_of(f) == JobScalars{} && s.model == f.model && s.architecture == f.architecture &&
         s.scaled == f.scaled && s.backend == f.backend && s.mode == f.mode && s.seed == f.seed &&
         s.warmup == f.warmup && s.min_reps == f.min_reps && s.max_reps == f.max_reps &&
         s.min_time_s == f.min_time_s && s.timeout_s == f.timeout_s && s.memory_limit_mb == f.memory_limit_mb &&
         s.threads == f.threads && s.placement == f.placement && s.required_tags == f.required_tags &&
         s.command == f.command && s.model_config == f.model_config;
}

SpecTemplate SpecTemplate::of(const JobSpec& spec) {
  SpecTemplate t;
  t.family_ = family_of(spec);
  // Render once with markers in the two integer fields and a known precision, then cut the dump
  // around them. The precision's text sits between "precision":" and the closing quote.
  const JobSpec marked = with_scalars(spec, JobScalars{Precision::kF32, kBatchMarker, kSeqLenMarker});
  const std::string dump = to_json(marked).dump();
  const std::string batch_key = "\"batch\":" + int_text(kBatchMarker);
  const std::string precision_key = "\"precision\":\"" + std::string(to_string(Precision::kF32)) + "\"";
  const std::string seq_key = "\"seq_len\":" + int_text(kSeqLenMarker);
  const auto b = dump.find(batch_key);
  const auto p = dump.find(precision_key);
  const auto s = dump.find(seq_key);
  if (b != std::string::npos && p != std::string::npos && s != std::string::npos && b < p && p < s &&
      dump.find(batch_key, b + 1) == std::string::npos && dump.find(precision_key, p + 1) == std::string::npos &&
      dump.find(seq_key, s + 1) == std::string::npos) {
    const auto b_end = b + batch_key.size();
    const auto p_value = p + std::string("\"precision\":\"").size();
    const auto p_end = p + precision_key.size() - 1;   // the closing quote stays in the next piece
    const auto s_end = s + seq_key.size();
    t.pieces_ = {dump.substr(0, b) + "\"batch\":", dump.substr(b_end, p_value - b_end),
                 dump.substr(p_end, s + std::string("\"seq_len\":").size() - p_end), dump.substr(s_end)};
    // Checked against real dumps: of the spec itself, and with every scalar changed (a marker
    // found in the wrong place would pass the first check alone).
    const JobScalars other{spec.precision == Precision::kQ4_1 ? Precision::kQ8_0 : Precision::kQ4_1,
                           spec.batch == 3 ? 5 : 3, spec.seq_len == 7 ? 11 : 7};
    t.exact_ = t.canonical(scalars_of(spec)) == to_json(spec).dump() &&
               t.canonical(other) == to_json(with_scalars(spec, other)).dump();
  }
  if (!t.exact_) t.pieces_.clear();
  return t;
}

std::string SpecTemplate::canonical(const JobScalars& scalars) const {
  if (pieces_.empty()) return to_json(with_scalars(family_, scalars)).dump();
  std::string out;
  out.reserve(pieces_[0].size() + pieces_[1].size() + pieces_[2].size() + pieces_[3].size() + 32);
  out += pieces_[0];
  out += int_text(scalars.batch);
  out += pieces_[1];
  out += to_string(scalars.precision);
  out += pieces_[2];
  out += int_text(scalars.seq_len);
  out += pieces_[3];
  return out;
}

uint64_t SpecTemplate::hash_through_batch(std::string_view run_id, int batch) const {
  uint64_t h = fnv1a64(run_id);
  h = fnv1a64("\n", h);
  h = fnv1a64(pieces_[0], h);
  h = fnv1a64(int_text(batch), h);
  return fnv1a64(pieces_[1], h);
}

uint64_t SpecTemplate::hash_rest(uint64_t state, const JobScalars& scalars) const {
  uint64_t h = fnv1a64(to_string(scalars.precision), state);
  h = fnv1a64(pieces_[2], h);
  h = fnv1a64(int_text(scalars.seq_len), h);
  return fnv1a64(pieces_[3], h);
}

uint64_t SpecTemplates::id_hash(std::string_view run_id, const SpecTemplate& t, const JobScalars& scalars) {
  if (!t.exact()) return job_hash_of(run_id, t.canonical(scalars));
  if (run_id != hashed_run_) {
    batch_states_.clear();
    hashed_run_ = std::string(run_id);
  }
  auto& states = batch_states_[&t];
  auto it = states.find(scalars.batch);
  if (it == states.end()) it = states.emplace(scalars.batch, t.hash_through_batch(run_id, scalars.batch)).first;
  return t.hash_rest(it->second, scalars);
}

const SpecTemplate& SpecTemplates::of(const JobSpec& spec, bool* made) {
  if (made) *made = false;
  if (last_ != nullptr && same_family(spec, last_->family())) return *last_;
  auto& list = by_model_[spec.model + '\x1f' + spec.backend];
  for (const SpecTemplate& t : list) {
    if (same_family(spec, t.family())) return *(last_ = &t);
  }
  if (made) *made = true;
  list.push_back(SpecTemplate::of(spec));
  return *(last_ = &list.back());
}

}  // namespace am::jobs
