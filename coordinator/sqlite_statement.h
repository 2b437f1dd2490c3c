// RAII prepared statement with typed bind and column helpers.
//
// Contract: a Statement owns its sqlite3_stmt and finalizes it on destruction. Bind indexes are
// 1-based (SQLite's convention), column indexes 0-based. A failed bind is remembered and
// reported by the next step()/run(), so call sites can chain binds without checking each one.
// Text columns that are NULL read as "", integer/real NULL columns as 0. Columns are read by
// name (the result column's name or its AS alias), so a query can change without renumbering its
// readers; a name the statement does not return is a programming error (AM_CHECK). Move-only; the
// statement must not outlive the connection it was prepared on. Not thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

struct sqlite3;
struct sqlite3_stmt;

namespace am::coord::sqlite {

class Statement {
 public:
  static Result<Statement> prepare(sqlite3* db, std::string_view sql);

  Statement() = default;
  ~Statement();
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& bind(int index, int64_t value);
  Statement& bind(int index, int value) { return bind(index, static_cast<int64_t>(value)); }
  Statement& bind(int index, double value);
  Statement& bind(int index, std::string_view value);   // copied by SQLite
  Statement& bind(int index, const char* value) { return bind(index, std::string_view(value)); }
  Statement& bind(int index, const std::string& value) { return bind(index, std::string_view(value)); }
  Statement& bind_null(int index);

  // Advances one row: true when a row is available, false when the statement is done.
  Result<bool> step();
  // Steps a statement that yields no rows of interest to completion.
  Status run();
  // Makes the statement ready to run again and clears its bindings.
  void reset();

  int64_t column_int64(int col) const;
  int column_int(int col) const;
  double column_double(int col) const;
  std::string column_text(int col) const;
  // The text without a copy: valid until the next step(), reset() or read of the same column.
  std::string_view column_view(int col) const;
  bool column_is_null(int col) const;

  int64_t column_int64(std::string_view name) const { return column_int64(column_index(name)); }
  int column_int(std::string_view name) const { return column_int(column_index(name)); }
  double column_double(std::string_view name) const { return column_double(column_index(name)); }
  std::string column_text(std::string_view name) const { return column_text(column_index(name)); }
  bool column_is_null(std::string_view name) const { return column_is_null(column_index(name)); }
  int column_index(std::string_view name) const;

  // Rows changed by the last completed INSERT/UPDATE/DELETE on this connection.
  int changes() const;
  // The rowid of the connection's last successful INSERT (sqlite3_last_insert_rowid).
  int64_t last_insert_rowid() const;

 private:
  Statement(sqlite3* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  void note_bind(int rc, int index);

  sqlite3* db_ = nullptr;
  sqlite3_stmt* stmt_ = nullptr;
  Status bind_error_;
};

}  // namespace am::coord::sqlite
