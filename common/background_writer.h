// Output written by a thread of its own, so that making it (a report's rows) and the write
// system calls (copying gigabytes into the page cache) run on two cores at once: a million-
// result JSON report spent a seventh of its time in write() (docs/SCALE.md).
//
// Contract: write() copies the piece into a queue and returns at once, unless `max_queued_bytes`
// are already waiting; then it waits for the writer (memory stays bounded). Pieces reach the
// sink in the order given, from the writer thread only. The sink's first error (an exception
// becomes kInternal) is returned by every later write() and by finish(); pieces after it are
// dropped. finish() waits until every piece is written (or dropped) and stops the thread;
// write() after it fails. The destructor finishes. One producer thread.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "common/status.h"

namespace am {

class BackgroundWriter {
 public:
  static constexpr std::size_t kDefaultMaxQueuedBytes = 8u << 20;

  explicit BackgroundWriter(std::function<Status(std::string_view)> sink,
                            std::size_t max_queued_bytes = kDefaultMaxQueuedBytes);
  ~BackgroundWriter();
  BackgroundWriter(const BackgroundWriter&) = delete;
  BackgroundWriter& operator=(const BackgroundWriter&) = delete;

  Status write(std::string_view piece);
  Status finish();

 private:
  void run();

  std::function<Status(std::string_view)> sink_;
  const std::size_t max_queued_bytes_;
  std::mutex mu_;
  std::condition_variable changed_;
  std::deque<std::string> queue_;
  std::size_t queued_bytes_ = 0;
  bool closing_ = false;
  Status error_;
  std::thread thread_;   // last: started once everything above exists
};

}  // namespace am
