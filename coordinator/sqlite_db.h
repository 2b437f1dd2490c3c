// RAII ownership of one SQLite connection, and the translation of SQLite result codes into
// am::Status.
//
// Contract: SqliteDb owns its sqlite3* and closes it on destruction (sqlite3_close_v2, so a
// forgotten statement cannot leak the connection). Move-only. Not thread-safe: one SqliteDb per
// thread. Every error message names the database file and SQLite's own message.
#pragma once

#include <array>
#include <filesystem>
#include <string>
#include <string_view>

#include "common/status.h"

struct sqlite3;

namespace am::coord::sqlite {

// The first 16 bytes of every SQLite 3 database file, NUL included.
inline constexpr std::array<char, 16> kSqliteHeader = {'S', 'Q', 'L', 'i', 't', 'e', ' ', 'f',
                                                       'o', 'r', 'm', 'a', 't', ' ', '3', '\0'};

class SqliteDb {
 public:
  // Opens (creating when missing) the database file read-write. Does not read the file yet:
  // SQLite opens lazily, so a file that is not a database is only detected by the first query.
  static Result<SqliteDb> open(const std::filesystem::path& path);
  // Opens an existing database file read-write without creating it (SQLITE_OPEN_READWRITE, no
  // SQLITE_OPEN_CREATE): kIoError when the file does not exist.
  static Result<SqliteDb> open_existing(const std::filesystem::path& path);
  // Opens an existing database file read-only (SQLITE_OPEN_READONLY through a `mode=ro` URI):
  // never creates the file and never writes to it. With `immutable`, SQLite is told the file
  // cannot change (`immutable=1`): it takes no locks and needs no -wal/-shm beside the file, which
  // is what lets a WAL database in a read-only directory be read; only safe when no writer exists.
  static Result<SqliteDb> open_read_only(const std::filesystem::path& path, bool immutable);

  SqliteDb() = default;
  explicit SqliteDb(sqlite3* db) : db_(db) {}
  ~SqliteDb();
  SqliteDb(SqliteDb&& other) noexcept;
  SqliteDb& operator=(SqliteDb&& other) noexcept;
  SqliteDb(const SqliteDb&) = delete;
  SqliteDb& operator=(const SqliteDb&) = delete;

  sqlite3* get() const { return db_; }
  // Gives up ownership; the caller must close the handle.
  sqlite3* release();

 private:
  sqlite3* db_ = nullptr;
};

// Runs one or more SQL statements that return no rows the caller needs.
Status exec(sqlite3* db, std::string_view sql);

// The file name of the connection's main database ("" for an in-memory one).
std::string db_path(sqlite3* db);

// Maps an SQLite result code to a Status; `what` says which operation failed. The message
// reads "<path>: <what>: <sqlite message> (<code name>)".
Status status_from_sqlite(sqlite3* db, int rc, std::string_view what);

}  // namespace am::coord::sqlite
