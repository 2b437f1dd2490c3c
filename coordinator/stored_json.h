// Reading the JSON documents the store keeps (job specs, result metrics) back, fast.
//
// Why not nlohmann::json::parse: a result's metrics are ~1.6 KiB of mostly doubles, and its
// lexer spends ~47 µs per document on them (strtod per number, a byte at a time) — 47 s of a
// million-result report before anything is rendered (docs/SCALE.md). simdjson validates the
// whole document (syntax and UTF-8) in ~4 µs (20,000 stored metrics documents, parse alone);
// the tree the reports read is then built from its DOM, whole or only the members asked for.
//
// Contract: StoredJsonReader::decode() returns the document as nlohmann::json, or kInternal
// with simdjson's reason (the caller names the document) for text that is not one valid JSON
// document (bad syntax, ill-formed UTF-8, a number out of range, nesting deeper than
// simdjson's 1024). An empty text is an empty object (columns default to ''). With `only`,
// a top-level object keeps just those members: "name" keeps a member whole, "name.inner" keeps
// only that member of an object member (a member that is not an object is kept whole). Any
// other top-level value is returned whole. A document with an array of more than
// kMaxStoredArrayElements elements anywhere in what is decoded is kInternal too, naming the
// size: no document the coordinator stores has one (raw latency samples are at most 1024 a job),
// and decoding one took about 70 bytes an element (a hand-edited row of 10 million samples:
// 1.5 GB for one report).
// A reader reuses its buffers across calls; one per thread.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace am::coord {

inline constexpr std::size_t kMaxStoredArrayElements = 65536;

class StoredJsonReader {
 public:
  StoredJsonReader();
  ~StoredJsonReader();
  StoredJsonReader(const StoredJsonReader&) = delete;
  StoredJsonReader& operator=(const StoredJsonReader&) = delete;

  Result<nlohmann::json> decode(std::string_view text, const std::vector<std::string_view>* only = nullptr);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace am::coord
