// Reading safetensors files (https://github.com/huggingface/safetensors): an 8-byte little-endian
// header length N, N bytes of JSON header, then the data section. The header is an object
// {tensor name: {"dtype": "F32", "shape": [d0, ...], "data_offsets": [begin, end]}, ...} with an
// optional "__metadata__" object of string values; offsets are bytes relative to the data
// section.
//
// Contract:
//   - open() maps the file (MappedFile) and validates the whole header before returning; every
//     problem is an error naming the file (the label for from_bytes()), the tensor when there is
//     one, and what is wrong — never a crash, whatever the bytes. Checked: the file holds the
//     8-byte length and the header it announces (header at most kMaxSafetensorsHeaderBytes);
//     the header is JSON and an object; every entry is an object with a known dtype string, a
//     shape array of non-negative integers and data_offsets [begin, end] of integers with
//     begin <= end <= data size; end - begin == numel * dtype size; regions sorted by offset
//     tile the data section exactly (no overlap, no gap, nothing after the last). Malformed
//     files are InvalidArgument; a missing file NotFound; read failures IoError.
//   - read_f32() returns a tensor converted to f32 (F32 copied, F16 and BF16 converted exactly).
//     The tensor must exist (NotFound otherwise), have a float dtype (other safetensors dtypes
//     such as I64 are Unsupported naming the dtype and tensor) and the expected shape
//     (InvalidArgument giving both shapes).
//   - A SafetensorsFile is immutable after open(); concurrent reads are safe. Move-only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "kernels/tensor.h"
#include "kernels/weights/mapped_file.h"

namespace am::kernels {

// The reference implementation refuses headers above 100 MB; so do we, before parsing.
inline constexpr uint64_t kMaxSafetensorsHeaderBytes = 100'000'000;
inline constexpr std::size_t kSafetensorsLengthBytes = 8;

enum class SafetensorsDtype { kF32, kF16, kBF16, kOther };

struct SafetensorsEntry {
  std::string name;
  std::string dtype_name;              // as written: "F32", "BF16", "I64", ...
  SafetensorsDtype dtype = SafetensorsDtype::kOther;
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;         // byte offsets into the data section
  int64_t numel() const;
};

// Bytes per element of a safetensors dtype name ("F32" -> 4, "BOOL" -> 1, ...); nullopt when the
// name is not a safetensors dtype.
std::optional<std::size_t> safetensors_dtype_size(std::string_view dtype_name);
std::string_view safetensors_dtype_name(SafetensorsDtype dtype);  // "F32", "F16", "BF16"

class SafetensorsFile {
 public:
  SafetensorsFile() = default;
  SafetensorsFile(SafetensorsFile&&) noexcept = default;
  SafetensorsFile& operator=(SafetensorsFile&&) noexcept = default;

  static Result<SafetensorsFile> open(const std::string& path);
  // The same validation over bytes held in memory; `label` stands for the path in errors.
  static Result<SafetensorsFile> from_bytes(std::string label, std::vector<uint8_t> bytes);

  const std::string& path() const { return path_; }
  // Entries sorted by data offset.
  const std::vector<SafetensorsEntry>& entries() const { return entries_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const SafetensorsEntry* find(std::string_view name) const;
  bool contains(std::string_view name) const { return find(name) != nullptr; }

  Result<Tensor> read_f32(std::string_view name, const Shape& expected) const;

 private:
  Status parse();
  Status error(const std::string& what) const;  // InvalidArgument "safetensors <path>: <what>"

  std::string path_;
  MappedFile mapping_;
  std::vector<uint8_t> owned_;
  const uint8_t* bytes_ = nullptr;
  std::size_t size_ = 0;
  const uint8_t* data_ = nullptr;      // start of the data section
  std::size_t data_size_ = 0;
  std::vector<SafetensorsEntry> entries_;
  std::map<std::string, std::size_t, std::less<>> index_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace am::kernels
