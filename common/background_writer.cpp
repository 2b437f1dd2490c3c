#include "common/background_writer.h"

#include <exception>
#include <utility>

namespace am {

BackgroundWriter::BackgroundWriter(std::function<Status(std::string_view)> sink, std::size_t max_queued_bytes)
    : sink_(std::move(sink)), max_queued_bytes_(max_queued_bytes), thread_([this] { run(); }) {}

BackgroundWriter::~BackgroundWriter() { (void)finish(); }

Status BackgroundWriter::write(std::string_view piece) {
  std::unique_lock lock(mu_);
  if (closing_) return error_.ok() ? failed_precondition("write after finish") : error_;
  // A piece larger than the bound waits for an empty queue, then goes alone.
  changed_.wait(lock, [&] {
    return !error_.ok() || queued_bytes_ == 0 || queued_bytes_ + piece.size() <= max_queued_bytes_;
  });
  if (!error_.ok()) return error_;
  queue_.emplace_back(piece);
  queued_bytes_ += piece.size();
  changed_.notify_all();
  return Status::Ok();
}

Status BackgroundWriter::finish() {
  {
    std::lock_guard lock(mu_);
    closing_ = true;
    changed_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
  std::lock_guard lock(mu_);
  return error_;
}

void BackgroundWriter::run() {
  std::unique_lock lock(mu_);
  while (true) {
    changed_.wait(lock, [&] { return !queue_.empty() || closing_; });
    if (queue_.empty()) return;   // closing, and everything written
    std::string piece = std::move(queue_.front());
    queue_.pop_front();
    if (error_.ok()) {
      lock.unlock();
      Status st;
      try {
        st = sink_(piece);
      } catch (const std::exception& e) {   // an exception here would end the process
        st = internal_error(std::string("writing: ") + e.what());
      }
      lock.lock();
      if (!st.ok() && error_.ok()) error_ = std::move(st);
    }
    queued_bytes_ -= piece.size();
    changed_.notify_all();
  }
}

}  // namespace am
