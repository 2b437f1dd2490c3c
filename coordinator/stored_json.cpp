#include "coordinator/stored_json.h"

#include <simdjson.h>

namespace am::coord {
namespace {

using nlohmann::json;

// simdjson bounds the nesting (DEFAULT_MAX_DEPTH, 1024), so this recursion is bounded too.
// Integers keep nlohmann's own types: unsigned when not negative, as its parser makes them.
// `too_long` takes the size of the first array above kMaxStoredArrayElements (then left empty).
json to_nlohmann(simdjson::dom::element e, std::size_t& too_long) {
  switch (e.type()) {
    case simdjson::dom::element_type::OBJECT: {
      json out = json::object();
      for (simdjson::dom::key_value_pair field : simdjson::dom::object(e)) {
        out[std::string(field.key)] = to_nlohmann(field.value, too_long);   // a repeated key: the last wins
      }
      return out;
    }
    case simdjson::dom::element_type::ARRAY: {
      json out = json::array();
      const simdjson::dom::array array(e);
      if (array.size() > kMaxStoredArrayElements) {
        if (too_long == 0) too_long = array.size();
        return out;
      }
      out.get_ref<json::array_t&>().reserve(array.size());
      for (simdjson::dom::element v : array) out.push_back(to_nlohmann(v, too_long));
      return out;
    }
    case simdjson::dom::element_type::INT64: {
      const int64_t v(e);
      return v >= 0 ? json(static_cast<uint64_t>(v)) : json(v);
    }
    case simdjson::dom::element_type::UINT64:
      return json(uint64_t(e));
    case simdjson::dom::element_type::DOUBLE:
      return json(double(e));
    case simdjson::dom::element_type::STRING:
      return json(std::string(std::string_view(e)));
    case simdjson::dom::element_type::BOOL:
      return json(bool(e));
    case simdjson::dom::element_type::NULL_VALUE:
      return json(nullptr);
  }
  return json(nullptr);
}

enum class Wanted { kNo, kWhole, kSomeMembers };

// "key" asks for a member whole, "key.member" for that member of it only.
Wanted wanted(const std::vector<std::string_view>& only, std::string_view key) {
  Wanted w = Wanted::kNo;
  for (std::string_view k : only) {
    if (k == key) return Wanted::kWhole;
    if (k.size() > key.size() && k[key.size()] == '.' && k.substr(0, key.size()) == key) w = Wanted::kSomeMembers;
  }
  return w;
}

bool wanted_member(const std::vector<std::string_view>& only, std::string_view key, std::string_view member) {
  for (std::string_view k : only) {
    if (k.size() == key.size() + 1 + member.size() && k[key.size()] == '.' && k.substr(0, key.size()) == key &&
        k.substr(key.size() + 1) == member) {
      return true;
    }
  }
  return false;
}

}  // namespace

struct StoredJsonReader::Impl {
  simdjson::dom::parser parser{simdjson::SIMDJSON_MAXSIZE_BYTES};
  // The text with SIMDJSON_PADDING bytes after it, reused: SQLite's text is not padded for
  // simdjson's wide loads, and letting parse() copy it allocates a buffer per document.
  std::string padded;
};

StoredJsonReader::StoredJsonReader() : impl_(std::make_unique<Impl>()) {}

StoredJsonReader::~StoredJsonReader() = default;

Result<json> StoredJsonReader::decode(std::string_view text, const std::vector<std::string_view>* only) {
  if (text.empty()) return json::object();
  simdjson::dom::element doc;
  std::string& padded = impl_->padded;
  padded.assign(text);
  padded.resize(text.size() + simdjson::SIMDJSON_PADDING, '\0');
  if (auto error = impl_->parser.parse(padded.data(), text.size(), false).get(doc); error) {
    return internal_error(simdjson::error_message(error));
  }
  std::size_t too_long = 0;
  const auto checked = [&too_long](json value) -> Result<json> {
    if (too_long != 0) {
      return internal_error("an array of " + std::to_string(too_long) + " elements (stored documents hold at most " +
                            std::to_string(kMaxStoredArrayElements) + ")");
    }
    return value;
  };
  if (only == nullptr || doc.type() != simdjson::dom::element_type::OBJECT) return checked(to_nlohmann(doc, too_long));
  json out = json::object();
  for (simdjson::dom::key_value_pair field : simdjson::dom::object(doc)) {
    switch (wanted(*only, field.key)) {
      case Wanted::kNo:
        break;
      case Wanted::kWhole:
        out[std::string(field.key)] = to_nlohmann(field.value, too_long);
        break;
      case Wanted::kSomeMembers: {
        if (field.value.type() != simdjson::dom::element_type::OBJECT) {
          out[std::string(field.key)] = to_nlohmann(field.value, too_long);
          break;
        }
        json& part = out[std::string(field.key)] = json::object();
        for (simdjson::dom::key_value_pair member : simdjson::dom::object(field.value)) {
          if (wanted_member(*only, field.key, member.key)) {
            part[std::string(member.key)] = to_nlohmann(member.value, too_long);
          }
        }
        break;
      }
    }
  }
  return checked(std::move(out));
}

}  // namespace am::coord
