#include "common/msgpack_json.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <limits>
#include <new>
#include <set>
#include <utility>
#include <vector>

#include "common/json_text.h"

namespace am::proto {

namespace {

// The bounds every converted document is held to (DocLimits), with errors naming the path.
class DocChecks {
 public:
  explicit DocChecks(const DocLimits& limits) : limits_(limits) {}

  Status container(std::size_t entries, int depth, const std::string& path) const {
    if (depth > limits_.max_depth) {
      return invalid_argument(path + ": nested deeper than " + std::to_string(limits_.max_depth) +
                              " levels");
    }
    if (entries > limits_.max_entries) {
      return resource_exhausted(path + ": " + std::to_string(entries) + " entries exceed the limit of " +
                                std::to_string(limits_.max_entries));
    }
    return Status::Ok();
  }

  Status string(std::string_view s, const std::string& path) const {
    if (s.size() > limits_.max_string_bytes) {
      return resource_exhausted(path + ": string of " + std::to_string(s.size()) +
                                " bytes exceeds the limit of " +
                                std::to_string(limits_.max_string_bytes));
    }
    return Status::Ok();
  }

  // A map member's key: a string within the bounds; its raw bytes (repaired by the caller).
  Result<std::string_view> key(const msgpack::object& k, const std::string& path) const {
    if (k.type != msgpack::type::STR) {
      return invalid_argument(path + ": map keys must be strings, got " + std::string(msgpack_type_name(k)));
    }
    const std::string_view raw(k.via.str.ptr, k.via.str.size);
    AM_RETURN_IF_ERROR(string(raw, path));
    return raw;
  }

  // The error for a value no document holds (bin, ext, or a type msgpack-cxx does not know).
  static Status unsupported(const msgpack::object& o, const std::string& path) {
    if (o.type == msgpack::type::BIN || o.type == msgpack::type::EXT) {
      return invalid_argument(path + ": " + std::string(msgpack_type_name(o)) + " values are not supported in documents");
    }
    return invalid_argument(path + ": unknown msgpack type");
  }

 private:
  const DocLimits& limits_;
};

// Runs one conversion, turning what it throws into the documents' errors (never throws).
template <typename Fn>
Status converting(std::string_view path, Fn&& fn) {
  try {
    return fn();
  } catch (const std::bad_alloc&) {
    return resource_exhausted(std::string(path) + ": out of memory converting document");
  } catch (const std::exception& e) {
    // nlohmann containers can only throw on allocation here; keep the promise of no exceptions.
    return internal_error(std::string(path) + ": " + e.what());
  }
}

class DocConverter {
 public:
  explicit DocConverter(const DocLimits& limits) : checks_(limits) {}

  // `path` is extended in place while descending and restored on the way back, so the error
  // message can name the offending element without building strings on the happy path.
  Status convert(const msgpack::object& o, int depth, std::string& path, nlohmann::json& out) {
    switch (o.type) {
      case msgpack::type::NIL: out = nullptr; return Status::Ok();
      case msgpack::type::BOOLEAN: out = o.via.boolean; return Status::Ok();
      case msgpack::type::POSITIVE_INTEGER: out = o.via.u64; return Status::Ok();
      case msgpack::type::NEGATIVE_INTEGER: out = o.via.i64; return Status::Ok();
      case msgpack::type::FLOAT32:
      case msgpack::type::FLOAT64: out = o.via.f64; return Status::Ok();
      case msgpack::type::STR: {
        std::string_view s(o.via.str.ptr, o.via.str.size);
        AM_RETURN_IF_ERROR(checks_.string(s, path));
        out = repair_utf8(s);
        return Status::Ok();
      }
      case msgpack::type::ARRAY: {
        AM_RETURN_IF_ERROR(checks_.container(o.via.array.size, depth + 1, path));
        out = nlohmann::json::array();
        auto& arr = out.get_ref<nlohmann::json::array_t&>();
        arr.reserve(o.via.array.size);
        for (uint32_t i = 0; i < o.via.array.size; ++i) {
          const std::size_t mark = path.size();
          path += '[';
          path += std::to_string(i);
          path += ']';
          nlohmann::json elem;
          AM_RETURN_IF_ERROR(convert(o.via.array.ptr[i], depth + 1, path, elem));
          path.resize(mark);
          arr.push_back(std::move(elem));
        }
        return Status::Ok();
      }
      case msgpack::type::MAP: {
        AM_RETURN_IF_ERROR(checks_.container(o.via.map.size, depth + 1, path));
        out = nlohmann::json::object();
        auto& obj = out.get_ref<nlohmann::json::object_t&>();
        for (uint32_t i = 0; i < o.via.map.size; ++i) {
          const msgpack::object_kv& kv = o.via.map.ptr[i];
          AM_ASSIGN_OR_RETURN(const std::string_view key_raw, checks_.key(kv.key, path));
          std::string key = repair_utf8(key_raw);
          const std::size_t mark = path.size();
          path += '.';
          path += key;
          if (obj.count(key) != 0) return invalid_argument(path + ": duplicate key");
          nlohmann::json value;
          AM_RETURN_IF_ERROR(convert(kv.val, depth + 1, path, value));
          path.resize(mark);
          obj.emplace(std::move(key), std::move(value));
        }
        return Status::Ok();
      }
      case msgpack::type::BIN:
      case msgpack::type::EXT: break;
    }
    return DocChecks::unsupported(o, path);
  }

 private:
  DocChecks checks_;
};

// Writes JSON text straight from the msgpack value: the bytes to_json_text() writes for the tree
// DocConverter builds of it, under the same checks, and no tree in between. Two passes:
// check() walks the value in the sender's order with DocConverter's checks, so the first error
// is the one the tree's conversion reports; write() then cannot fail and writes each map's
// members sorted by key as nlohmann's std::map holds them (std::string's order: bytes as
// unsigned char) straight into `out`. One pass with a scratch text per map copied every byte
// once per enclosing map (6x the CPU of the tree for a hostile 16-deep document), and hashing
// keys let a peer pick colliding ones: repeated keys are found by a scan or an ordered set.
class TextConverter {
 public:
  explicit TextConverter(const DocLimits& limits) : checks_(limits) {}

  Status convert(const msgpack::object& o, std::string& path, std::string& out) {
    AM_RETURN_IF_ERROR(check(o, 0, path));
    write(o, out);
    return Status::Ok();
  }

 private:
  // Up to this many members a map finds repeated keys by a scan; above, by an ordered set
  // (O(n log n) whatever keys a peer picks, as the tree's own std::map).
  static constexpr uint32_t kLinearKeyScanMax = 16;

  // A map's keys as the tree holds them: views of the sender's bytes when they are valid UTF-8,
  // else of their repaired copies (kept in `repaired`, reserved for the whole map at the first
  // one, before any view points into it, so the views stay valid).
  struct Keys {
    std::vector<std::string_view> views;
    std::vector<std::string> repaired;
    uint32_t members;
    explicit Keys(uint32_t n) : members(n) { views.reserve(n); }
    std::string_view add(std::string_view raw) {
      if (is_valid_utf8(raw)) return views.emplace_back(raw);
      if (repaired.empty()) repaired.reserve(members);
      return views.emplace_back(repaired.emplace_back(repair_utf8(raw)));
    }
  };

  Status check(const msgpack::object& o, int depth, std::string& path) {
    if (is_scalar(o)) return Status::Ok();
    switch (o.type) {
      case msgpack::type::STR: return checks_.string(std::string_view(o.via.str.ptr, o.via.str.size), path);
      case msgpack::type::ARRAY: {
        AM_RETURN_IF_ERROR(checks_.container(o.via.array.size, depth + 1, path));
        for (uint32_t i = 0; i < o.via.array.size; ++i) {
          // A number, bool or nil cannot fail: no path is made for it (a result's 1,024
          // latency samples spent a quarter of their conversion on it).
          if (is_scalar(o.via.array.ptr[i])) continue;
          const std::size_t mark = path.size();
          path += '[';
          path += std::to_string(i);
          path += ']';
          AM_RETURN_IF_ERROR(check(o.via.array.ptr[i], depth + 1, path));
          path.resize(mark);
        }
        return Status::Ok();
      }
      case msgpack::type::MAP: {
        const uint32_t n = o.via.map.size;
        AM_RETURN_IF_ERROR(checks_.container(n, depth + 1, path));
        Keys keys(n);
        std::set<std::string_view> seen;
        for (uint32_t i = 0; i < n; ++i) {
          const msgpack::object_kv& kv = o.via.map.ptr[i];
          AM_ASSIGN_OR_RETURN(const std::string_view key_raw, checks_.key(kv.key, path));
          const std::string_view key = keys.add(key_raw);
          bool repeated = false;
          if (n <= kLinearKeyScanMax) {
            for (std::size_t k = 0; k + 1 < keys.views.size() && !repeated; ++k) repeated = keys.views[k] == key;
          } else {
            repeated = !seen.insert(key).second;
          }
          if (repeated) return invalid_argument(path + "." + std::string(key) + ": duplicate key");
          if (is_scalar(kv.val)) continue;
          const std::size_t mark = path.size();
          path += '.';
          path += key;
          AM_RETURN_IF_ERROR(check(kv.val, depth + 1, path));
          path.resize(mark);
        }
        return Status::Ok();
      }
      default: break;   // BIN, EXT
    }
    return DocChecks::unsupported(o, path);
  }

  // A value check() passed.
  void write(const msgpack::object& o, std::string& out) {
    switch (o.type) {
      case msgpack::type::STR: {
        const std::string_view s(o.via.str.ptr, o.via.str.size);
        if (is_valid_utf8(s)) {
          append_json_string(out, s);
        } else {
          append_json_string(out, repair_utf8(s));
        }
        return;
      }
      case msgpack::type::ARRAY:
        out += '[';
        for (uint32_t i = 0; i < o.via.array.size; ++i) {
          if (i > 0) out += ',';
          write(o.via.array.ptr[i], out);
        }
        out += ']';
        return;
      case msgpack::type::MAP: {
        const uint32_t n = o.via.map.size;
        Keys keys(n);
        std::vector<std::pair<std::string_view, const msgpack::object*>> members;
        members.reserve(n);
        bool sorted = true;
        for (uint32_t i = 0; i < n; ++i) {
          const msgpack::object_kv& kv = o.via.map.ptr[i];
          const std::string_view key = keys.add(std::string_view(kv.key.via.str.ptr, kv.key.via.str.size));
          if (!members.empty() && !(members.back().first < key)) sorted = false;
          members.emplace_back(key, &kv.val);
        }
        if (!sorted) std::sort(members.begin(), members.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
        out += '{';
        for (std::size_t i = 0; i < members.size(); ++i) {
          if (i > 0) out += ',';
          append_json_string(out, members[i].first);
          out += ':';
          write(*members[i].second, out);
        }
        out += '}';
        return;
      }
      default: append_scalar(o, out); return;
    }
  }

  static bool is_scalar(const msgpack::object& o) {
    switch (o.type) {
      case msgpack::type::NIL:
      case msgpack::type::BOOLEAN:
      case msgpack::type::POSITIVE_INTEGER:
      case msgpack::type::NEGATIVE_INTEGER:
      case msgpack::type::FLOAT32:
      case msgpack::type::FLOAT64: return true;
      default: return false;
    }
  }

  static void append_scalar(const msgpack::object& o, std::string& out) {
    switch (o.type) {
      case msgpack::type::NIL: out += "null"; return;
      case msgpack::type::BOOLEAN: out += o.via.boolean ? "true" : "false"; return;
      case msgpack::type::POSITIVE_INTEGER: append_number(out, o.via.u64); return;
      case msgpack::type::NEGATIVE_INTEGER: append_number(out, o.via.i64); return;
      default: append_json_double(out, o.via.f64); return;
    }
  }

  template <typename Int>
  static void append_number(std::string& out, Int v) {
    char buf[24];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, r.ptr);
  }

  DocChecks checks_;
};

bool reference_input(msgpack::type::object_type, std::size_t, void*) { return true; }

}  // namespace

std::string_view msgpack_type_name(const msgpack::object& o) {
  switch (o.type) {
    case msgpack::type::NIL: return "nil";
    case msgpack::type::BOOLEAN: return "bool";
    case msgpack::type::POSITIVE_INTEGER:
    case msgpack::type::NEGATIVE_INTEGER: return "integer";
    case msgpack::type::FLOAT32:
    case msgpack::type::FLOAT64: return "float";
    case msgpack::type::STR: return "string";
    case msgpack::type::BIN: return "binary";
    case msgpack::type::ARRAY: return "array";
    case msgpack::type::MAP: return "map";
    case msgpack::type::EXT: return "ext";
  }
  return "unknown";
}

void pack_utf8_string(msgpack::sbuffer& out, std::string_view s) {
  Packer pk(out);
  if (is_valid_utf8(s)) {
    pk.pack_str(static_cast<uint32_t>(s.size()));
    pk.pack_str_body(s.data(), static_cast<uint32_t>(s.size()));
    return;
  }
  const std::string fixed = repair_utf8(s);
  pk.pack_str(static_cast<uint32_t>(fixed.size()));
  pk.pack_str_body(fixed.data(), static_cast<uint32_t>(fixed.size()));
}

void pack_float64(msgpack::sbuffer& out, double v) {
  constexpr unsigned char kFloat64Marker = 0xcb;
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof bits);
  char bytes[9];
  bytes[0] = static_cast<char>(kFloat64Marker);
  for (int i = 0; i < 8; ++i) bytes[1 + i] = static_cast<char>((bits >> (56 - 8 * i)) & 0xFF);
  out.write(bytes, sizeof bytes);
}

void pack_json(msgpack::sbuffer& out, const nlohmann::json& doc) {
  using V = nlohmann::json::value_t;
  Packer pk(out);  // stateless: writes straight through to `out`
  switch (doc.type()) {
    case V::null:
    case V::discarded: pk.pack_nil(); return;
    case V::boolean:
      if (doc.get<bool>()) pk.pack_true(); else pk.pack_false();
      return;
    case V::number_integer: pk.pack_int64(doc.get<int64_t>()); return;
    case V::number_unsigned: pk.pack_uint64(doc.get<uint64_t>()); return;
    case V::number_float: pack_float64(out, doc.get<double>()); return;
    case V::string: pack_utf8_string(out, doc.get_ref<const std::string&>()); return;
    case V::binary: {
      const auto& bin = doc.get_binary();
      pk.pack_bin(static_cast<uint32_t>(bin.size()));
      pk.pack_bin_body(reinterpret_cast<const char*>(bin.data()), static_cast<uint32_t>(bin.size()));
      return;
    }
    case V::array:
      pk.pack_array(static_cast<uint32_t>(doc.size()));
      for (const auto& elem : doc) pack_json(out, elem);
      return;
    case V::object:
      pk.pack_map(static_cast<uint32_t>(doc.size()));
      for (const auto& [key, value] : doc.items()) {
        pack_utf8_string(out, key);
        pack_json(out, value);
      }
      return;
  }
  pk.pack_nil();
}

Status msgpack_object_to_json(const msgpack::object& obj, std::string_view path,
                              nlohmann::json& out, const DocLimits& limits) {
  return converting(path, [&] {
    std::string p(path);
    return DocConverter(limits).convert(obj, 0, p, out);
  });
}

Status msgpack_object_to_json_text(const msgpack::object& obj, std::string_view path, std::string& out,
                                   const DocLimits& limits) {
  return converting(path, [&] {
    std::string p(path);
    return TextConverter(limits).convert(obj, p, out);
  });
}

std::string json_to_msgpack(const nlohmann::json& doc) {
  msgpack::sbuffer buf;
  pack_json(buf, doc);
  return std::string(buf.data(), buf.size());
}

msgpack::unpack_limit unpack_limits_for(const DocLimits& limits, int extra_depth,
                                        std::size_t max_string_bytes) {
  const auto depth = static_cast<std::size_t>(limits.max_depth + extra_depth);
  return msgpack::unpack_limit(limits.max_entries, limits.max_entries, max_string_bytes,
                               /*bin=*/max_string_bytes, /*ext=*/max_string_bytes, depth);
}

Result<msgpack::object_handle> unpack_bounded(std::string_view bytes,
                                              const msgpack::unpack_limit& limit,
                                              std::string_view what) {
  const std::string prefix(what);
  try {
    std::size_t offset = 0;
    msgpack::object_handle handle =
        msgpack::unpack(bytes.data(), bytes.size(), offset, &reference_input, nullptr, limit);
    if (offset != bytes.size()) {
      return invalid_argument(prefix + ": " + std::to_string(bytes.size() - offset) +
                              " trailing bytes after the msgpack value");
    }
    return handle;
  } catch (const msgpack::insufficient_bytes&) {
    return invalid_argument(prefix + ": truncated msgpack");
  } catch (const msgpack::depth_size_overflow&) {
    return invalid_argument(prefix + ": nested deeper than " + std::to_string(limit.depth()) +
                            " levels");
  } catch (const msgpack::str_size_overflow&) {
    return resource_exhausted(prefix + ": a string exceeds " + std::to_string(limit.str()) +
                              " bytes");
  } catch (const msgpack::size_overflow& e) {
    return resource_exhausted(prefix + ": size limit exceeded (" + e.what() + ")");
  } catch (const msgpack::parse_error&) {
    return invalid_argument(prefix + ": malformed msgpack");
  } catch (const std::bad_alloc&) {
    return resource_exhausted(prefix + ": out of memory while unpacking");
  } catch (const std::exception& e) {
    return invalid_argument(prefix + ": undecodable msgpack (" + e.what() + ")");
  }
}

Result<nlohmann::json> msgpack_to_json(std::string_view bytes, const DocLimits& limits) {
  AM_ASSIGN_OR_RETURN(msgpack::object_handle handle,
                      unpack_bounded(bytes, unpack_limits_for(limits, 0, limits.max_string_bytes),
                                     "document"));
  nlohmann::json out;
  AM_RETURN_IF_ERROR(msgpack_object_to_json(handle.get(), "document", out, limits));
  return out;
}

}  // namespace am::proto
