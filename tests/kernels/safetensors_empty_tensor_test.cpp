// Zero-element tensors in safetensors files (a shape with a 0 dimension, data_offsets [n, n]):
// they read as empty tensors of their shape at every float dtype. Found by the safetensors fuzz
// target under UBSan: read_f32() passed the empty tensor's null storage to memcpy (undefined
// even for 0 bytes); the build-clang run of this test fails on the old code.
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/weights/safetensors.h"

namespace am::kernels {
namespace {

std::vector<uint8_t> file_with(const std::string& header, std::size_t data_bytes) {
  std::vector<uint8_t> out(8 + header.size() + data_bytes, 0x3c);
  const uint64_t n = header.size();
  std::memcpy(out.data(), &n, 8);
  std::memcpy(out.data() + 8, header.data(), header.size());
  return out;
}

TEST(SafetensorsEmptyTensor, ZeroElementTensorsReadAsEmptyTensorsAtEveryFloatDtype) {
  for (const char* dtype : {"F32", "F16", "BF16"}) {
    // An 8-byte I64 tensor first, so the empty one sits at the very end of the data section.
    const std::string header = std::string(R"({"ids":{"dtype":"I64","shape":[1],"data_offsets":[0,8]},)") +
                               R"("none":{"dtype":")" + dtype + R"(","shape":[0,5],"data_offsets":[8,8]}})";
    auto file = SafetensorsFile::from_bytes("empty.safetensors", file_with(header, 8));
    ASSERT_TRUE(file.ok()) << file.status().to_string();
    Result<Tensor> t = file->read_f32("none", Shape{0, 5});
    ASSERT_TRUE(t.ok()) << dtype << ": " << t.status().to_string();
    EXPECT_EQ(t->numel(), 0) << dtype;
    EXPECT_EQ(t->shape(), (Shape{0, 5})) << dtype;
    EXPECT_FALSE(file->read_f32("none", Shape{5, 0}).ok()) << dtype;
  }
}

}  // namespace
}  // namespace am::kernels
