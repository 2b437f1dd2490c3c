#include "kernels/weights/safetensors_writer.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <set>

#include <nlohmann/json.hpp>

#include "kernels/formats/bf16.h"
#include "kernels/formats/fp16.h"

namespace am::kernels {
namespace {

constexpr std::size_t kHeaderAlignmentBytes = 8;

struct FileCloser {
  void operator()(std::FILE* f) const {
    if (f != nullptr) std::fclose(f);
  }
};

}  // namespace

Result<std::vector<uint8_t>> encode_safetensors(const std::vector<SafetensorsTensorOut>& tensors,
                                                const std::map<std::string, std::string>& metadata) {
  // ordered_json keeps the tensors in the caller's order, which is also their data order.
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::set<std::string> seen;
  uint64_t offset = 0;
  for (const SafetensorsTensorOut& t : tensors) {
    if (t.name.empty() || t.name == "__metadata__" || !seen.insert(t.name).second) {
      return invalid_argument("safetensors writer: tensor name '" + t.name + "' is empty, reserved or repeated");
    }
    if (t.dtype == SafetensorsDtype::kOther) {
      return invalid_argument("safetensors writer: tensor '" + t.name + "' must be F32, F16 or BF16");
    }
    int64_t numel = 1;
    for (int64_t d : t.shape) {
      if (d < 0) return invalid_argument("safetensors writer: tensor '" + t.name + "' has a negative dimension");
      numel *= d;
    }
    if (numel > 0 && t.data == nullptr) return invalid_argument("safetensors writer: tensor '" + t.name + "' has no data");
    const uint64_t bytes = static_cast<uint64_t>(numel) * (t.dtype == SafetensorsDtype::kF32 ? 4 : 2);
    header[t.name] = {{"dtype", safetensors_dtype_name(t.dtype)}, {"shape", t.shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  text.append((kHeaderAlignmentBytes - text.size() % kHeaderAlignmentBytes) % kHeaderAlignmentBytes, ' ');

  std::vector<uint8_t> out(kSafetensorsLengthBytes + text.size() + offset);
  const uint64_t header_len = text.size();
  std::memcpy(out.data(), &header_len, sizeof header_len);
  std::memcpy(out.data() + kSafetensorsLengthBytes, text.data(), text.size());
  uint8_t* dst = out.data() + kSafetensorsLengthBytes + text.size();
  std::vector<uint16_t> halves;
  for (const SafetensorsTensorOut& t : tensors) {
    int64_t numel = 1;
    for (int64_t d : t.shape) numel *= d;
    const std::size_t n = static_cast<std::size_t>(numel);
    if (t.dtype == SafetensorsDtype::kF32) {
      if (n > 0) std::memcpy(dst, t.data, n * sizeof(float));
      dst += n * sizeof(float);
      continue;
    }
    halves.resize(n);
    if (t.dtype == SafetensorsDtype::kF16) {
      fp32_to_fp16_row(t.data, halves.data(), numel);
    } else {
      fp32_to_bf16_row(t.data, halves.data(), numel);
    }
    if (n > 0) std::memcpy(dst, halves.data(), n * sizeof(uint16_t));
    dst += n * sizeof(uint16_t);
  }
  return out;
}

Status write_safetensors(const std::string& path, const std::vector<SafetensorsTensorOut>& tensors,
                         const std::map<std::string, std::string>& metadata) {
  AM_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, encode_safetensors(tensors, metadata));
  const std::string tmp = path + ".tmp";
  {
    std::unique_ptr<std::FILE, FileCloser> f(std::fopen(tmp.c_str(), "wb"));
    if (!f) return io_error("cannot create " + tmp + ": " + std::strerror(errno));
    if (std::fwrite(bytes.data(), 1, bytes.size(), f.get()) != bytes.size() || std::fflush(f.get()) != 0) {
      return io_error("cannot write " + tmp + ": " + std::strerror(errno));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return io_error("cannot rename " + tmp + " to " + path + ": " + std::strerror(errno));
  }
  return Status::Ok();
}

}  // namespace am::kernels
