// A write transaction that rolls back unless committed.
//
// Contract: begin() starts BEGIN IMMEDIATE, taking the write lock up front so that a writer
// waits (busy timeout) at the start rather than failing half-way when another connection
// writes. The destructor rolls back a transaction that was not committed, so every early
// return leaves the database as it was. Move-only; not thread-safe; must not outlive its
// connection. Transactions do not nest.
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
  explicit Transaction(sqlite3* db) : db_(db) {}
  sqlite3* db_ = nullptr;   // null once committed, rolled back or moved from
};

}  // namespace am::coord::sqlite
