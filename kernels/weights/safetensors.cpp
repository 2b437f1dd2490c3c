#include "kernels/weights/safetensors.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <utility>

#include <nlohmann/json.hpp>

#include "kernels/formats/bf16.h"
#include "kernels/formats/fp16.h"

namespace am::kernels {
namespace {

static_assert(std::endian::native == std::endian::little,
              "safetensors stores little-endian values; this reader copies them as they are");

constexpr std::string_view kMetadataKey = "__metadata__";

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string shape_text(const Shape& shape) {
  std::vector<int64_t> dims(static_cast<std::size_t>(shape.rank()));
  for (int i = 0; i < shape.rank(); ++i) dims[static_cast<std::size_t>(i)] = shape[i];
  return shape_text(dims);
}

// Reads a JSON integer as uint64 without the silent conversions nlohmann allows (floats,
// negatives).
std::optional<uint64_t> as_unsigned(const nlohmann::json& v) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer() && v.get<int64_t>() >= 0) return static_cast<uint64_t>(v.get<int64_t>());
  return std::nullopt;
}

}  // namespace

int64_t SafetensorsEntry::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::optional<std::size_t> safetensors_dtype_size(std::string_view name) {
  static constexpr std::pair<std::string_view, std::size_t> kSizes[] = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E4M3", 1}, {"F8_E5M2", 1}, {"I16", 2}, {"U16", 2},
      {"F16", 2},  {"BF16", 2}, {"I32", 4}, {"U32", 4},     {"F32", 4},     {"F64", 8}, {"I64", 8},
      {"U64", 8}};
  for (const auto& [n, size] : kSizes) {
    if (n == name) return size;
  }
  return std::nullopt;
}

std::string_view safetensors_dtype_name(SafetensorsDtype dtype) {
  switch (dtype) {
    case SafetensorsDtype::kF32: return "F32";
    case SafetensorsDtype::kF16: return "F16";
    case SafetensorsDtype::kBF16: return "BF16";
    case SafetensorsDtype::kOther: break;
  }
  return "other";
}

Status SafetensorsFile::error(const std::string& what) const {
  return invalid_argument("safetensors " + path_ + ": " + what);
}

Result<SafetensorsFile> SafetensorsFile::open(const std::string& path) {
  SafetensorsFile f;
  f.path_ = path;
  Result<MappedFile> mapped = MappedFile::open(path);
  if (!mapped.ok()) return mapped.status().with_context("safetensors");
  f.mapping_ = std::move(mapped).value();
  f.bytes_ = f.mapping_.data();
  f.size_ = f.mapping_.size();
  AM_RETURN_IF_ERROR(f.parse());
  return f;
}

Result<SafetensorsFile> SafetensorsFile::from_bytes(std::string label, std::vector<uint8_t> bytes) {
  SafetensorsFile f;
  f.path_ = std::move(label);
  f.owned_ = std::move(bytes);
  f.bytes_ = f.owned_.data();
  f.size_ = f.owned_.size();
  AM_RETURN_IF_ERROR(f.parse());
  return f;
}

Status SafetensorsFile::parse() {
  if (size_ < kSafetensorsLengthBytes) {
    return error("file is " + std::to_string(size_) + " bytes, too short for the 8-byte header length");
  }
  uint64_t header_len = 0;
  std::memcpy(&header_len, bytes_, sizeof header_len);
  // The length itself is not quoted: it is the file's first 8 bytes, whatever file the path
  // names (a checkpoint path is the coordinator's to choose).
  if (header_len > kMaxSafetensorsHeaderBytes) {
    return error("not a safetensors file: its header length exceeds the limit of " +
                 std::to_string(kMaxSafetensorsHeaderBytes) + " bytes");
  }
  if (header_len > size_ - kSafetensorsLengthBytes) {
    return error("not a safetensors file: its header length runs past the end of the file (" +
                 std::to_string(size_) + " bytes)");
  }
  const char* header = reinterpret_cast<const char*>(bytes_ + kSafetensorsLengthBytes);
  // No exceptions: a parse failure yields a discarded value.
  const nlohmann::json doc = nlohmann::json::parse(header, header + header_len, nullptr, false);
  if (doc.is_discarded()) return error("header is not valid JSON");
  if (!doc.is_object()) return error("header is not a JSON object");
  data_ = bytes_ + kSafetensorsLengthBytes + header_len;
  data_size_ = size_ - kSafetensorsLengthBytes - header_len;

  for (const auto& [name, value] : doc.items()) {
    if (name == kMetadataKey) {
      if (!value.is_object()) return error("__metadata__ is not an object");
      for (const auto& [key, text] : value.items()) {
        if (!text.is_string()) return error("__metadata__ value of '" + key + "' is not a string");
        metadata_[key] = text.get<std::string>();
      }
      continue;
    }
    const std::string where = "tensor '" + name + "': ";
    if (!value.is_object()) return error(where + "entry is not an object");
    SafetensorsEntry e;
    e.name = name;
    if (!value.contains("dtype") || !value.at("dtype").is_string()) return error(where + "missing or non-string 'dtype'");
    e.dtype_name = value.at("dtype").get<std::string>();
    const std::optional<std::size_t> elem = safetensors_dtype_size(e.dtype_name);
    if (!elem) return error(where + "unknown dtype '" + e.dtype_name + "'");
    e.dtype = e.dtype_name == "F32"    ? SafetensorsDtype::kF32
              : e.dtype_name == "F16"  ? SafetensorsDtype::kF16
              : e.dtype_name == "BF16" ? SafetensorsDtype::kBF16
                                       : SafetensorsDtype::kOther;
    if (!value.contains("shape") || !value.at("shape").is_array()) return error(where + "missing or non-array 'shape'");
    // The element count is bounded by the data section, so a product beyond it is already wrong;
    // checking against that bound as we multiply also keeps the product from overflowing.
    uint64_t numel = 1;
    bool numel_too_big = false;
    for (const nlohmann::json& d : value.at("shape")) {
      const std::optional<uint64_t> dim = as_unsigned(d);
      if (!dim || *dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return error(where + "shape entries must be non-negative integers");
      }
      e.shape.push_back(static_cast<int64_t>(*dim));
      if (*dim != 0 && numel > data_size_ / *dim) numel_too_big = true;
      numel *= numel_too_big ? 1 : *dim;
    }
    const nlohmann::json* offsets = value.contains("data_offsets") ? &value.at("data_offsets") : nullptr;
    if (offsets == nullptr || !offsets->is_array() || offsets->size() != 2) {
      return error(where + "'data_offsets' must be an array [begin, end]");
    }
    const std::optional<uint64_t> begin = as_unsigned((*offsets)[0]), end = as_unsigned((*offsets)[1]);
    if (!begin || !end) return error(where + "data_offsets must be non-negative integers");
    e.begin = *begin;
    e.end = *end;
    const std::string range = "[" + std::to_string(e.begin) + ", " + std::to_string(e.end) + ")";
    if (e.begin > e.end) return error(where + "data_offsets " + range + " begin after they end");
    if (e.end > data_size_) {
      return error(where + "data_offsets " + range + " run past the data section of " + std::to_string(data_size_) +
                   " bytes");
    }
    const uint64_t bytes = e.end - e.begin;
    if (numel_too_big || numel > bytes / *elem || numel * *elem != bytes) {
      return error(where + "shape " + shape_text(e.shape) + " of " + e.dtype_name + " does not match its " +
                   std::to_string(bytes) + " bytes of data");
    }
    entries_.push_back(std::move(e));
  }

  std::sort(entries_.begin(), entries_.end(), [](const SafetensorsEntry& a, const SafetensorsEntry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t covered = 0;
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    const SafetensorsEntry& e = entries_[i];
    if (e.begin < covered) {
      return error("tensor '" + e.name + "' at [" + std::to_string(e.begin) + ", " + std::to_string(e.end) +
                   ") overlaps tensor '" + entries_[i - 1].name + "' ending at " + std::to_string(covered));
    }
    if (e.begin > covered) {
      return error("gap of " + std::to_string(e.begin - covered) + " bytes before tensor '" + e.name + "'");
    }
    covered = e.end;
    index_.emplace(e.name, i);
  }
  if (covered != data_size_) {
    return error(std::to_string(data_size_ - covered) + " bytes after the last tensor belong to no tensor");
  }
  return Status::Ok();
}

const SafetensorsEntry* SafetensorsFile::find(std::string_view name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : &entries_[it->second];
}

Result<Tensor> SafetensorsFile::read_f32(std::string_view name, const Shape& expected) const {
  const SafetensorsEntry* e = find(name);
  if (e == nullptr) return not_found("safetensors " + path_ + ": tensor '" + std::string(name) + "' is missing");
  // A checkpoint this reader cannot load is an error of the job's input (docs/PLANS.md), not an
  // op or format a backend lacks: `unsupported` is an accepted status, and the run exited 0.
  if (e->dtype == SafetensorsDtype::kOther) {
    return invalid_argument("safetensors " + path_ + ": tensor '" + e->name + "' has dtype " + e->dtype_name +
                            "; only F32, F16 and BF16 are read");
  }
  bool same = static_cast<int>(e->shape.size()) == expected.rank();
  for (int i = 0; same && i < expected.rank(); ++i) same = e->shape[static_cast<std::size_t>(i)] == expected[i];
  if (!same) {
    return error("tensor '" + e->name + "' has shape " + shape_text(e->shape) + ", the model expects " +
                 shape_text(expected));
  }
  Tensor t(expected);
  const int64_t n = t.numel();
  // A zero-element tensor has no storage (data() is null) and may sit at the very end of the
  // data section: memcpy with a null pointer is undefined even for 0 bytes (UBSan, found by
  // tests/fuzz/safetensors_fuzz.cpp).
  if (n == 0) return t;
  const uint8_t* src = data_ + e->begin;
  if (e->dtype == SafetensorsDtype::kF32) {
    std::memcpy(t.data(), src, static_cast<std::size_t>(n) * sizeof(float));
    return t;
  }
  // Halves may sit at any byte offset; copy them to aligned storage before converting.
  std::vector<uint16_t> halves(static_cast<std::size_t>(n));
  std::memcpy(halves.data(), src, halves.size() * sizeof(uint16_t));
  if (e->dtype == SafetensorsDtype::kF16) {
    fp16_to_fp32_row(halves.data(), t.data(), n);
  } else {
    bf16_to_fp32_row(halves.data(), t.data(), n);
  }
  return t;
}

}  // namespace am::kernels
