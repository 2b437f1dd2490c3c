#include "coordinator/sqlite_statement.h"

#include "common/check.h"

#include <utility>

#include <sqlite3.h>

#include "coordinator/sqlite_db.h"

namespace am::coord::sqlite {
namespace {

// Statements are short; quoting the start of one in an error is enough to find it.
constexpr std::size_t kSqlQuoteChars = 80;

std::string quote_sql(std::string_view sql) {
  std::string out(sql.substr(0, kSqlQuoteChars));
  for (char& c : out) {
    if (c == '\n') c = ' ';
  }
  if (sql.size() > kSqlQuoteChars) out += "...";
  return out;
}

}  // namespace

Result<Statement> Statement::prepare(sqlite3* db, std::string_view sql) {
  sqlite3_stmt* stmt = nullptr;
  const int rc = sqlite3_prepare_v2(db, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(stmt);
    return status_from_sqlite(db, rc, "prepare '" + quote_sql(sql) + "'");
  }
  return Statement(db, stmt);
}

Statement::~Statement() {
  if (stmt_) sqlite3_finalize(stmt_);
}

Statement::Statement(Statement&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)),
      stmt_(std::exchange(other.stmt_, nullptr)),
      bind_error_(std::move(other.bind_error_)) {}

Statement& Statement::operator=(Statement&& other) noexcept {
  if (this != &other) {
    if (stmt_) sqlite3_finalize(stmt_);
    db_ = std::exchange(other.db_, nullptr);
    stmt_ = std::exchange(other.stmt_, nullptr);
    bind_error_ = std::move(other.bind_error_);
  }
  return *this;
}

void Statement::note_bind(int rc, int index) {
  if (rc != SQLITE_OK && bind_error_.ok()) {
    bind_error_ = status_from_sqlite(db_, rc, "bind parameter " + std::to_string(index));
  }
}

Statement& Statement::bind(int index, int64_t value) {
  note_bind(sqlite3_bind_int64(stmt_, index, value), index);
  return *this;
}

Statement& Statement::bind(int index, double value) {
  note_bind(sqlite3_bind_double(stmt_, index, value), index);
  return *this;
}

Statement& Statement::bind(int index, std::string_view value) {
  note_bind(sqlite3_bind_text64(stmt_, index, value.data(), value.size(), SQLITE_TRANSIENT,
                                SQLITE_UTF8),
            index);
  return *this;
}

Statement& Statement::bind_null(int index) {
  note_bind(sqlite3_bind_null(stmt_, index), index);
  return *this;
}

Result<bool> Statement::step() {
  if (!bind_error_.ok()) return bind_error_;
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return status_from_sqlite(db_, rc, "step '" + quote_sql(sqlite3_sql(stmt_)) + "'");
}

Status Statement::run() {
  while (true) {
    AM_ASSIGN_OR_RETURN(bool row, step());
    if (!row) return Status::Ok();
  }
}

void Statement::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
  bind_error_ = Status::Ok();
}

int Statement::column_index(std::string_view name) const {
  const int n = sqlite3_column_count(stmt_);
  for (int i = 0; i < n; ++i) {
    const char* col = sqlite3_column_name(stmt_, i);
    if (col != nullptr && name == col) return i;
  }
  const std::string what = "no column '" + std::string(name) + "' in " + sqlite3_sql(stmt_);
  ::am::detail::check_failed(__FILE__, __LINE__, "column_index(name) >= 0", what.c_str());
}

int64_t Statement::column_int64(int col) const { return sqlite3_column_int64(stmt_, col); }

int Statement::column_int(int col) const { return sqlite3_column_int(stmt_, col); }

double Statement::column_double(int col) const { return sqlite3_column_double(stmt_, col); }

std::string Statement::column_text(int col) const {
  const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, col));
  if (!text) return {};
  return std::string(text, static_cast<std::size_t>(sqlite3_column_bytes(stmt_, col)));
}

std::string_view Statement::column_view(int col) const {
  const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, col));
  if (!text) return {};
  return std::string_view(text, static_cast<std::size_t>(sqlite3_column_bytes(stmt_, col)));
}

bool Statement::column_is_null(int col) const {
  return sqlite3_column_type(stmt_, col) == SQLITE_NULL;
}

int Statement::changes() const { return sqlite3_changes(db_); }

int64_t Statement::last_insert_rowid() const { return sqlite3_last_insert_rowid(db_); }

}  // namespace am::coord::sqlite
