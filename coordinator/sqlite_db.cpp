#include "coordinator/sqlite_db.h"

#include <utility>

#include <sqlite3.h>

namespace am::coord::sqlite {

Result<SqliteDb> SqliteDb::open(const std::filesystem::path& path) {
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                                 nullptr);
  // sqlite3_open_v2 hands back a handle even on failure (for its error message); owning it at
  // once means it is closed on every path.
  SqliteDb db(raw);
  if (rc != SQLITE_OK) {
    std::string message = raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc);
    return io_error(path.string() + ": cannot open database: " + message);
  }
  // Extended codes tell SQLITE_IOERR_* and SQLITE_CONSTRAINT_* apart in error messages.
  sqlite3_extended_result_codes(raw, 1);
  return db;
}

namespace {

// A path as an SQLite URI filename: absolute (so a leading "//" cannot read as an authority),
// with the characters that end or escape the path part percent-encoded.
std::string file_uri(const std::filesystem::path& path) {
  std::error_code ec;
  std::filesystem::path abs = std::filesystem::absolute(path, ec);
  if (ec) abs = path;
  std::string uri = "file:";
  for (char c : abs.string()) {
    if (c == '%' || c == '?' || c == '#') {
      static constexpr char kHex[] = "0123456789ABCDEF";
      const auto byte = static_cast<unsigned char>(c);
      uri += '%';
      uri += kHex[byte >> 4];
      uri += kHex[byte & 0xF];
    } else {
      uri += c;
    }
  }
  return uri;
}

}  // namespace

Result<SqliteDb> SqliteDb::open_existing(const std::filesystem::path& path) {
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE, nullptr);
  SqliteDb db(raw);
  if (rc != SQLITE_OK) {
    std::string message = raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc);
    return io_error(path.string() + ": cannot open database: " + message);
  }
  sqlite3_extended_result_codes(raw, 1);
  return db;
}

Result<SqliteDb> SqliteDb::open_read_only(const std::filesystem::path& path, bool immutable) {
  const std::string uri = file_uri(path) + (immutable ? "?mode=ro&immutable=1" : "?mode=ro");
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(uri.c_str(), &raw, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, nullptr);
  SqliteDb db(raw);
  if (rc != SQLITE_OK) {
    std::string message = raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc);
    return io_error(path.string() + ": cannot open database read-only: " + message);
  }
  sqlite3_extended_result_codes(raw, 1);
  return db;
}

SqliteDb::~SqliteDb() {
  if (db_) sqlite3_close_v2(db_);
}

SqliteDb::SqliteDb(SqliteDb&& other) noexcept : db_(std::exchange(other.db_, nullptr)) {}

SqliteDb& SqliteDb::operator=(SqliteDb&& other) noexcept {
  if (this != &other) {
    if (db_) sqlite3_close_v2(db_);
    db_ = std::exchange(other.db_, nullptr);
  }
  return *this;
}

sqlite3* SqliteDb::release() { return std::exchange(db_, nullptr); }

Status exec(sqlite3* db, std::string_view sql) {
  std::string text(sql);
  char* err = nullptr;
  const int rc = sqlite3_exec(db, text.c_str(), nullptr, nullptr, &err);
  if (rc == SQLITE_OK) return Status::Ok();
  std::string message = err ? err : sqlite3_errstr(rc);
  sqlite3_free(err);
  return status_from_sqlite(db, rc, "exec: " + message);
}

std::string db_path(sqlite3* db) {
  const char* name = db ? sqlite3_db_filename(db, "main") : nullptr;
  return name ? name : "";
}

Status status_from_sqlite(sqlite3* db, int rc, std::string_view what) {
  std::string message = db_path(db);
  if (message.empty()) message = ":memory:";
  if ((rc & 0xff) == SQLITE_READONLY) {
    // Not a fault of the statement (its SQL would only hide the point): the file cannot be
    // written by this process.
    return io_error(message + ": cannot write the database: " + (db ? sqlite3_errmsg(db) : sqlite3_errstr(rc)) +
                    " (this user must be able to write the file, its -wal and -shm files and their directory)");
  }
  message += ": ";
  message += what;
  message += ": ";
  message += db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  message += " (";
  message += sqlite3_errstr(rc);
  message += ")";
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return unavailable(std::move(message));
    case SQLITE_FULL:
    case SQLITE_NOMEM:
    case SQLITE_TOOBIG:
      return resource_exhausted(std::move(message));
    case SQLITE_IOERR:
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
      return io_error(std::move(message));
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT:
      return failed_precondition(std::move(message));
    case SQLITE_CONSTRAINT:
    case SQLITE_MISMATCH:
    case SQLITE_RANGE:
      return invalid_argument(std::move(message));
    default:
      return internal_error(std::move(message));
  }
}

}  // namespace am::coord::sqlite
