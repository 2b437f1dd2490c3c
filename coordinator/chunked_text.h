// Text appended in pieces and kept in chunks of about kChunkBytes, for reports that hold part of
// their output until it can be written: a text of hundreds of megabytes grows without the doubling
// copies (and up to twice its size in capacity) of one std::string.
//
// Contract: tail() is the chunk to append the next piece to (a fresh one once the last holds
// kChunkBytes or more; a piece is never split, so a chunk may exceed kChunkBytes by its last
// piece). write_to() hands the chunks to a sink in order and stops at its first error; clear()
// frees them. Not thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "coordinator/report_common.h"

namespace am::coord {

class ChunkedText {
 public:
  static constexpr std::size_t kChunkBytes = std::size_t{1} << 20;

  std::string& tail() {
    if (chunks_.empty() || chunks_.back().size() >= kChunkBytes) {
      chunks_.emplace_back();
      chunks_.back().reserve(kChunkBytes + kSlackBytes);
    }
    return chunks_.back();
  }

  Status write_to(const TextSink& sink) const {
    for (const std::string& chunk : chunks_) AM_RETURN_IF_ERROR(sink(chunk));
    return Status::Ok();
  }

  void clear() { chunks_ = {}; }

 private:
  // Room for the piece that crosses kChunkBytes without a reallocation, for most pieces.
  static constexpr std::size_t kSlackBytes = 4096;
  std::vector<std::string> chunks_;
};

}  // namespace am::coord
