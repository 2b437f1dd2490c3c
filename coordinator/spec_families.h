// Job specs stored once per family (schema 6, docs/SCALE.md "Specs stored once per family").
//
// Within a run, the jobs of one model entry differ only in precision, batch and sequence length
// (jobs/spec_family.h); their spec documents are one text with three numbers changed. From schema
// 6 the store keeps that text once, in `spec_families`, and a job row keeps an empty spec_json
// and its family's id: at a million jobs the documents were 430 MB of the jobs table and a
// quarter of a start.
//
// Contract:
// - SpecFamilyWriter (the store's add_jobs, inside its transaction): stored(spec) is what a job
//   row keeps: {"", family id} when the family's template renders exactly and its stored form
//   reads back to the same bytes (checked once per family, by the reader's own code path), else
//   {the whole canonical text, 0}: command jobs, families without an exact template. A family's
//   row holds its template rendered with neutral scalars (jobs::family_of), one row per family
//   and run however many submits add its jobs.
// - SpecFamilies (readers): a cache of family templates by id (ids are unique across runs, and
//   family rows never change). text() is a row's spec text: its stored spec_json when not
//   empty (rows from before schema 6, command jobs, and whatever a damaged row holds), else its
//   family's template with the row's precision, batch and seq_len, byte for byte what add_jobs
//   would have stored whole. A family that is missing, unreadable, of another run or of another
//   model or backend than the row is an error naming it.
//   load_run() and load() read through the connection; text() only reads the cache (const: the
//   report's consumer calls it while another thread steps the connection).
#pragma once

#include <climits>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "common/status.h"
#include "jobs/job_spec.h"
#include "jobs/spec_family.h"

struct sqlite3;

namespace am::coord {

// The first schema with spec families.
inline constexpr int kSpecFamiliesSchemaVersion = 6;

class SpecFamilyWriter {
 public:
  struct Stored {
    std::string spec_json;   // "" when the family holds it
    int64_t family_id = 0;   // 0: spec_json is the whole document
  };
  SpecFamilyWriter(sqlite3* db, std::string run_id) : db_(db), run_id_(std::move(run_id)) {}
  Result<Stored> stored(const jobs::JobSpec& spec);

 private:
  // The id of t's family row (found or added), or 0 when a reader could not rebuild
  // t.canonical(scalars) from it.
  Result<int64_t> family_row(const jobs::SpecTemplate& t, const jobs::JobScalars& scalars);
  sqlite3* db_;
  std::string run_id_;
  jobs::SpecTemplates templates_;
  std::unordered_map<const jobs::SpecTemplate*, int64_t> family_ids_;   // 0: stored whole
};

class SpecFamilies {
 public:
  // Every family of `run_id` (a report's or a walk's rows are rendered from them); nothing
  // below schema 6.
  Status load_run(sqlite3* db, const std::string& run_id, int schema_version);
  // One family, when not cached yet.
  Status load(sqlite3* db, int64_t family_id);
  // The columns of a job row a family's text is rendered with, and checked against.
  struct Row {
    std::string_view run_id, model, backend, precision;
    int64_t batch = 0, seq_len = 0;
  };
  // The row's spec text (see the contract); `scratch` holds a rendered one. A family of another
  // run, or one whose model or backend is not the row's (an edited file), is an error, as are
  // scalars out of range: never another job's document.
  Result<std::string_view> text(std::string_view stored, int64_t family_id, const Row& row,
                                std::string& scratch) const;

 private:
  struct Family {
    std::string run_id;
    std::unique_ptr<jobs::SpecTemplate> spec;   // null when damaged
    std::string damage;
  };
  void add(int64_t family_id, std::string_view run_id, std::string_view text);
  std::unordered_map<int64_t, Family> families_;
};

}  // namespace am::coord
