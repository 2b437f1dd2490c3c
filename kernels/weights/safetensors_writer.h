// Writing safetensors files from f32 tensors (checkpoints of synthetic models, test fixtures).
//
// Contract: write_safetensors() writes the tensors in the given order, back to back in the data
// section, each stored as its `dtype` (F32 as is; F16 and BF16 rounded to nearest, ties to
// even), with `metadata` as "__metadata__" when non-empty. The header is padded with spaces to a
// multiple of 8 bytes so F32 data starts aligned, as the reference writer does. Names must be
// unique and non-empty and must not be "__metadata__"; shape must hold numel values at `data`
// (InvalidArgument otherwise). I/O failures are IoError naming the path. The file is written to
// "<path>.tmp" and renamed, so a reader never sees half a file. Thread-compatible.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "kernels/weights/safetensors.h"

namespace am::kernels {

struct SafetensorsTensorOut {
  std::string name;
  SafetensorsDtype dtype = SafetensorsDtype::kF32;
  std::vector<int64_t> shape;
  const float* data = nullptr;  // numel(shape) values, not owned
};

// The serialized file as bytes (what write_safetensors() writes).
Result<std::vector<uint8_t>> encode_safetensors(const std::vector<SafetensorsTensorOut>& tensors,
                                                const std::map<std::string, std::string>& metadata = {});
Status write_safetensors(const std::string& path, const std::vector<SafetensorsTensorOut>& tensors,
                         const std::map<std::string, std::string>& metadata = {});

}  // namespace am::kernels
