// A write transaction that rolls back unless committed.
//
// Contract: begin() starts BEGIN IMMEDIATE, taking the write lock up front so that a writer
// waits (busy timeout) at the start rather than failing half-way when another connection
// writes. The destructor rolls back a transaction that was not committed, so every early
// return leaves the database as it was. Move-only; not thread-safe; must not outlive its
// connection. Begun while the connection is already in a transaction (Store::atomically), it is
// a SAVEPOINT inside it instead: commit() releases it into the outer transaction, which alone
// makes it durable, and an uncommitted one rolls back to where it began.
#pragma once

#include "common/status.h"

struct sqlite3;

namespace am::coord::sqlite {

class Transaction {
 public:
  [[nodiscard]] static Result<Transaction> begin(sqlite3* db);

  ~Transaction();
  Transaction(Transaction&& other) noexcept;
  Transaction& operator=(Transaction&&) = delete;
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;

  Status commit();

 private:
  Transaction(sqlite3* db, bool nested) : db_(db), nested_(nested) {}
  sqlite3* db_ = nullptr;   // null once committed, rolled back or moved from
  bool nested_ = false;     // a savepoint in an outer transaction
};

}  // namespace am::coord::sqlite
