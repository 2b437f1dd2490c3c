// Fuzz target: the safetensors loader (kernels/weights/safetensors.h).
//
// Input: the bytes of a .safetensors file, validated by SafetensorsFile::from_bytes() (the same
// checks open() runs over a mapped file).
// Properties: nothing crashes or throws; an accepted file's entries tile its data section, and
// every float tensor reads back with its own shape (F32/F16/BF16 conversion over real bytes),
// while a wrong expected shape is refused.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kernels/weights/safetensors.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

// Shape has no runtime-rank constructor; a safetensors entry of rank > kMaxDims has none at all.
std::optional<am::kernels::Shape> make_shape(const std::vector<int64_t>& d) {
  switch (d.size()) {
    case 0: return am::kernels::Shape{};
    case 1: return am::kernels::Shape{d[0]};
    case 2: return am::kernels::Shape{d[0], d[1]};
    case 3: return am::kernels::Shape{d[0], d[1], d[2]};
    case 4: return am::kernels::Shape{d[0], d[1], d[2], d[3]};
    default: return std::nullopt;
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  am::fuzz::quiet_logs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace am::kernels;
  am::Result<SafetensorsFile> file = SafetensorsFile::from_bytes("fuzz.safetensors",
                                                                 std::vector<uint8_t>(data, data + size));
  if (!file.ok()) {
    AM_FUZZ_CHECK(file.status().message().find("fuzz.safetensors") != std::string::npos,
                  "error does not name the file: " + file.status().to_string());
    return 0;
  }
  uint64_t expected_begin = 0;
  for (const SafetensorsEntry& e : file->entries()) {
    AM_FUZZ_CHECK(e.begin == expected_begin, "entries do not tile the data section at " + e.name);
    expected_begin = e.end;
    AM_FUZZ_CHECK(file->find(e.name) == &e, "find() does not return " + e.name);
    if (e.dtype == SafetensorsDtype::kOther) continue;
    // A header may describe a large tensor only if the file holds its bytes, so the work per
    // input is bounded by the input's size.
    const std::optional<Shape> shape = make_shape(e.shape);
    if (!shape) continue;
    am::Result<Tensor> t = file->read_f32(e.name, *shape);
    AM_FUZZ_CHECK(t.ok(), "float tensor " + e.name + " does not read: " + t.status().to_string());
    AM_FUZZ_CHECK(t->numel() == e.numel(), "numel of " + e.name);
    std::vector<int64_t> wrong_dims = e.shape;
    if (wrong_dims.empty()) {
      wrong_dims.push_back(2);
    } else {
      wrong_dims.back() = wrong_dims.back() > 0 ? wrong_dims.back() - 1 : 1;
    }
    if (const std::optional<Shape> wrong = make_shape(wrong_dims)) {
      AM_FUZZ_CHECK(!file->read_f32(e.name, *wrong).ok(), "a wrong shape is accepted for " + e.name);
    }
  }
  return 0;
}
