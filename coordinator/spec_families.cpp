#include "coordinator/spec_families.h"

#include <nlohmann/json.hpp>

#include "coordinator/sqlite_statement.h"
#include "jobs/precision.h"

namespace am::coord {
namespace {

// The template a stored family text reads back as, or why it cannot be one.
Result<jobs::SpecTemplate> template_of_text(std::string_view text) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    return invalid_argument(std::string("not JSON: ") + e.what());
  }
  AM_ASSIGN_OR_RETURN(jobs::JobSpec spec, jobs::job_spec_from_json(doc));
  jobs::SpecTemplate t = jobs::SpecTemplate::of(spec);
  if (!t.exact()) return invalid_argument("its template does not render exactly");
  return t;
}

}  // namespace

Result<SpecFamilyWriter::Stored> SpecFamilyWriter::stored(const jobs::JobSpec& spec) {
  // Commands are free text: invalid UTF-8 is replaced, as in every stored document.
  if (spec.command) return Stored{to_json(spec).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), 0};
  bool made = false;
  const jobs::SpecTemplate& t = templates_.of(spec, &made);
  const jobs::JobScalars scalars = jobs::scalars_of(spec);
  if (made) {
    AM_ASSIGN_OR_RETURN(int64_t id, family_row(t, scalars));
    family_ids_[&t] = id;
  }
  if (const int64_t id = family_ids_.at(&t); id != 0) return Stored{std::string(), id};
  return Stored{t.canonical(scalars), 0};
}

Result<int64_t> SpecFamilyWriter::family_row(const jobs::SpecTemplate& t, const jobs::JobScalars& scalars) {
  // The family's text is its template with neutral scalars, so the same family added again
  // (another submit, jobs made as hardware registers) finds its row instead of adding one. Kept
  // as a family only if a reader rebuilds this job's text from it.
  const std::string family_text = t.canonical(jobs::scalars_of(t.family()));
  Result<jobs::SpecTemplate> back = template_of_text(family_text);
  if (!t.exact() || !back.ok() || back->canonical(scalars) != t.canonical(scalars)) return int64_t{0};
  AM_ASSIGN_OR_RETURN(auto find, sqlite::Statement::prepare(
                                     db_, "SELECT family_id FROM spec_families WHERE run_id = ?1 AND spec_json = ?2"));
  find.bind(1, run_id_).bind(2, family_text);
  AM_ASSIGN_OR_RETURN(bool found, find.step());
  if (found) return find.column_int64(0);
  AM_ASSIGN_OR_RETURN(auto insert, sqlite::Statement::prepare(
                                       db_, "INSERT INTO spec_families(run_id, spec_json) VALUES (?1, ?2)"));
  insert.bind(1, run_id_).bind(2, family_text);
  AM_RETURN_IF_ERROR(insert.run());
  return insert.last_insert_rowid();
}

Status SpecFamilies::load_run(sqlite3* db, const std::string& run_id, int schema_version) {
  if (schema_version < kSpecFamiliesSchemaVersion) return Status::Ok();
  AM_ASSIGN_OR_RETURN(auto stmt, sqlite::Statement::prepare(
                                     db, "SELECT family_id, spec_json FROM spec_families WHERE run_id = ?1"));
  stmt.bind(1, run_id);
  while (true) {
    AM_ASSIGN_OR_RETURN(bool row, stmt.step());
    if (!row) break;
    const int64_t id = stmt.column_int64(0);
    if (families_.count(id) == 0) add(id, run_id, stmt.column_view(1));
  }
  return Status::Ok();
}

Status SpecFamilies::load(sqlite3* db, int64_t family_id) {
  if (family_id == 0 || families_.count(family_id) != 0) return Status::Ok();
  AM_ASSIGN_OR_RETURN(auto stmt, sqlite::Statement::prepare(
                                     db, "SELECT run_id, spec_json FROM spec_families WHERE family_id = ?1"));
  stmt.bind(1, family_id);
  AM_ASSIGN_OR_RETURN(bool row, stmt.step());
  if (row) add(family_id, stmt.column_view(0), stmt.column_view(1));
  return Status::Ok();   // a missing family is text()'s error, named there
}

void SpecFamilies::add(int64_t family_id, std::string_view run_id, std::string_view text) {
  Family f;
  f.run_id = std::string(run_id);
  if (Result<jobs::SpecTemplate> t = template_of_text(text); t.ok()) {
    f.spec = std::make_unique<jobs::SpecTemplate>(std::move(t).value());
  } else {
    f.damage = t.status().message();
  }
  families_[family_id] = std::move(f);
}

Result<std::string_view> SpecFamilies::text(std::string_view stored, int64_t family_id, const Row& row,
                                            std::string& scratch) const {
  if (!stored.empty() || family_id == 0) return stored;
  const std::string name = "spec family " + std::to_string(family_id);
  const auto it = families_.find(family_id);
  if (it == families_.end() || it->second.run_id != row.run_id) {
    return internal_error(name + " of run '" + std::string(row.run_id) + "' is not in the store");
  }
  const Family& f = it->second;
  if (!f.spec) return internal_error(name + " is damaged: " + f.damage);
  const jobs::JobSpec& family = f.spec->family();
  if (family.model != row.model || family.backend != row.backend) {
    return internal_error(name + " is of " + family.model + " on " + family.backend + ", the job of " +
                          std::string(row.model) + " on " + std::string(row.backend));
  }
  const std::optional<jobs::Precision> p = jobs::parse_precision_label(row.precision);
  if (!p) return internal_error("unknown precision '" + std::string(row.precision) + "'");
  if (row.batch < 0 || row.batch > INT_MAX || row.seq_len < 0 || row.seq_len > INT_MAX) {
    return internal_error("batch " + std::to_string(row.batch) + " or seq_len " + std::to_string(row.seq_len) +
                          " out of range");
  }
  jobs::JobScalars scalars;
  scalars.precision = *p;
  scalars.batch = static_cast<int>(row.batch);
  scalars.seq_len = static_cast<int>(row.seq_len);
  scratch = f.spec->canonical(scalars);
  return std::string_view(scratch);
}

}  // namespace am::coord
