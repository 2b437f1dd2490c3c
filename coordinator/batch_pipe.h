// Rows handed from a producer thread to a consumer thread in batches, so that reading rows
// (SQLite stepping a report's query) and using them (decoding, rendering) run on two cores.
//
// Contract: a fixed set of batches circulates: the producer takes an empty one, fills
// `rows[0..size)` and puts it full; the consumer takes full ones in the order they were put and
// puts them back empty. Rows keep their buffers from use to use (strings keep their capacity).
// take_empty() waits for a batch and returns nullptr once the consumer called stop();
// take_full() waits and returns nullptr once the producer called close() and every full batch
// was taken. close(status) records why the producer ended (OK: no more rows), readable with
// status() after take_full() returned nullptr. Thread-safe for one producer and one consumer.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "common/status.h"

namespace am::coord {

template <typename Row>
class BatchPipe {
 public:
  struct Batch {
    std::vector<Row> rows;
    std::size_t size = 0;
  };

  BatchPipe(std::size_t batches, std::size_t rows_per_batch) {
    for (std::size_t i = 0; i < batches; ++i) {
      auto b = std::make_unique<Batch>();
      b->rows.resize(rows_per_batch);
      empty_.push_back(b.get());
      owned_.push_back(std::move(b));
    }
  }

  Batch* take_empty() {
    std::unique_lock lock(mu_);
    changed_.wait(lock, [&] { return stopped_ || !empty_.empty(); });
    if (stopped_) return nullptr;
    Batch* b = empty_.front();
    empty_.pop_front();
    b->size = 0;
    return b;
  }

  void put_full(Batch* b) {
    std::lock_guard lock(mu_);
    full_.push_back(b);
    changed_.notify_all();
  }

  void close(Status status) {
    std::lock_guard lock(mu_);
    closed_ = true;
    status_ = std::move(status);
    changed_.notify_all();
  }

  Batch* take_full() {
    std::unique_lock lock(mu_);
    changed_.wait(lock, [&] { return closed_ || !full_.empty(); });
    if (full_.empty()) return nullptr;
    Batch* b = full_.front();
    full_.pop_front();
    return b;
  }

  void put_empty(Batch* b) {
    std::lock_guard lock(mu_);
    empty_.push_back(b);
    changed_.notify_all();
  }

  void stop() {
    std::lock_guard lock(mu_);
    stopped_ = true;
    changed_.notify_all();
  }

  Status status() const {
    std::lock_guard lock(mu_);
    return status_;
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable changed_;
  std::vector<std::unique_ptr<Batch>> owned_;
  std::deque<Batch*> empty_;
  std::deque<Batch*> full_;
  bool closed_ = false;
  bool stopped_ = false;
  Status status_;
};

}  // namespace am::coord
