// Reads a family's [config] table (the catalog's, with plan overrides applied) with errors that
// name the family and the key.
//
// Contract: dim() accepts integers in [1, 2^24] (larger is a typo or an overflow risk); number()
// checks [lo, hi]; a missing key takes the fallback, or is an error naming it when there is none.
// The reader holds a reference to the document: it must outlive the reader.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace am::kernels {

// Reads a family's [config] keys with errors naming the family and key.
class ConfigReader {
 public:
  ConfigReader(const nlohmann::json& doc, std::string family) : doc_(doc), family_(std::move(family)) {}
  bool has(const char* key) const { return doc_.is_object() && doc_.contains(key); }
  Result<int64_t> dim(const char* key, std::optional<int64_t> fallback = std::nullopt) const;
  Result<double> number(const char* key, double fallback, double lo, double hi) const;
  Result<std::string> text(const char* key, std::string fallback) const;
  Result<bool> flag(const char* key, bool fallback) const;
  Status error(const std::string& what) const;  // InvalidArgument "<family> config: <what>"

 private:
  const nlohmann::json& doc_;
  std::string family_;
};

}  // namespace am::kernels
