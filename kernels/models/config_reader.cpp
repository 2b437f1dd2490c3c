#include "kernels/models/config_reader.h"

namespace am::kernels {
namespace {

// Upper bound on one dimension: keeps products far from int64 overflow and rejects typos early.
constexpr int64_t kMaxDimension = int64_t{1} << 24;

}  // namespace

Status ConfigReader::error(const std::string& what) const {
  return invalid_argument(family_ + " config: " + what);
}

Result<int64_t> ConfigReader::dim(const char* key, std::optional<int64_t> fallback) const {
  if (!has(key)) {
    if (fallback) return *fallback;
    return error(std::string("missing '") + key + "'");
  }
  const nlohmann::json& v = doc_.at(key);
  if (!v.is_number_integer()) return error(std::string("'") + key + "' must be an integer");
  const int64_t n = v.get<int64_t>();
  if (n < 1 || n > kMaxDimension) {
    return error(std::string("'") + key + "' = " + std::to_string(n) + " is outside [1, " +
                 std::to_string(kMaxDimension) + "]");
  }
  return n;
}

Result<double> ConfigReader::number(const char* key, double fallback, double lo, double hi) const {
  if (!has(key)) return fallback;
  const nlohmann::json& v = doc_.at(key);
  if (!v.is_number()) return error(std::string("'") + key + "' must be a number");
  const double x = v.get<double>();
  if (!(x >= lo && x <= hi)) {
    return error(std::string("'") + key + "' = " + std::to_string(x) + " is outside [" + std::to_string(lo) +
                 ", " + std::to_string(hi) + "]");
  }
  return x;
}

Result<std::string> ConfigReader::text(const char* key, std::string fallback) const {
  if (!has(key)) return fallback;
  if (!doc_.at(key).is_string()) return error(std::string("'") + key + "' must be a string");
  return doc_.at(key).get<std::string>();
}

Result<bool> ConfigReader::flag(const char* key, bool fallback) const {
  if (!has(key)) return fallback;
  if (!doc_.at(key).is_boolean()) return error(std::string("'") + key + "' must be true or false");
  return doc_.at(key).get<bool>();
}

}  // namespace am::kernels
