// The store's schema and its migrations.
//
// Contract: kMigrations is the ordered list of (version, SQL and/or a function); version N turns a version N-1
// database into a version N one. migrate() checks that the file is an accelmatrix database
// (or empty) and not newer than this build, then applies each missing migration in its own
// transaction, recording it in `schema_version`. A refused database is left untouched: the
// checks only read. Running migrate() on an up-to-date database changes nothing, and two
// processes migrating the same file at once are safe (the version is re-read under the write
// lock). Not thread-safe per connection.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "common/status.h"

struct sqlite3;

namespace am::coord {

// PRAGMA application_id of accelmatrix databases: "AMX1" in ASCII. A database carrying another
// application's id is refused.
inline constexpr int32_t kApplicationId = 0x414D5831;

struct Migration {
  int version;
  const char* sql;                      // run first, when not null
  Status (*apply)(sqlite3* db) = nullptr;   // then this, when not null (inside the same transaction)
};

std::span<const Migration> migrations();

// The schema version recorded in the database; 0 for an empty database. Fails when the file is
// not an SQLite database, or has tables but is not an accelmatrix one.
Result<int> read_schema_version(sqlite3* db);

// The refusal of a database whose schema is newer than this build supports.
Status newer_schema_error(const std::string& path, int found_version, int supported_version);

// Brings the database to `target_version` (normally kSchemaVersion). Refuses, without writing,
// a database whose version is above target_version.
Status migrate(sqlite3* db, int target_version);

}  // namespace am::coord
