#include "coordinator/sqlite_transaction.h"

#include <string>
#include <utility>

#include <sqlite3.h>

#include "common/log.h"
#include "coordinator/sqlite_db.h"

namespace am::coord::sqlite {

namespace {
// One name serves every level: SQLite's RELEASE and ROLLBACK TO act on the innermost savepoint
// of that name.
constexpr const char* kSavepoint = "am_nested";
}  // namespace

Result<Transaction> Transaction::begin(sqlite3* db) {
  if (!sqlite3_get_autocommit(db)) {
    AM_RETURN_IF_ERROR(exec(db, std::string("SAVEPOINT ") + kSavepoint));
    return Transaction(db, true);
  }
  AM_RETURN_IF_ERROR(exec(db, "BEGIN IMMEDIATE"));
  return Transaction(db, false);
}

Transaction::~Transaction() {
  if (!db_) return;
  if (nested_) {
    if (sqlite3_get_autocommit(db_)) return;   // the outer transaction ended already
    Status undone = exec(db_, std::string("ROLLBACK TO ") + kSavepoint + "; RELEASE " + kSavepoint);
    if (!undone.ok()) get_logger("coordinator/store")->error("rollback to savepoint failed: {}", undone.to_string());
    return;
  }
  // A failed statement inside the transaction may already have ended it (SQLite rolls back on
  // some errors such as SQLITE_FULL); only roll back what is still open.
  if (sqlite3_get_autocommit(db_)) return;
  Status rolled_back = exec(db_, "ROLLBACK");
  if (!rolled_back.ok()) {
    get_logger("coordinator/store")->error("rollback failed: {}", rolled_back.to_string());
  }
}

Transaction::Transaction(Transaction&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)), nested_(other.nested_) {}

Status Transaction::commit() {
  if (!db_) return failed_precondition("transaction already finished");
  sqlite3* db = std::exchange(db_, nullptr);
  if (nested_) return exec(db, std::string("RELEASE ") + kSavepoint);
  Status committed = exec(db, "COMMIT");
  if (!committed.ok() && !sqlite3_get_autocommit(db)) {
    // COMMIT can fail with SQLITE_BUSY and leave the transaction open; do not leave it dangling.
    (void)exec(db, "ROLLBACK");
  }
  return committed;
}

}  // namespace am::coord::sqlite
