// The safetensors reader and writer: exact round trips at F32/F16/BF16, every malformed-header
// case with its error, and fuzzing with truncated and mutated files (never a crash).
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <fstream>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/formats/bf16.h"
#include "kernels/exec_context.h"
#include "kernels/formats/fp16.h"
#include "kernels/rng.h"
#include "kernels/weights/mapped_file.h"
#include "kernels/weights/safetensors.h"
#include "kernels/weights/safetensors_writer.h"

namespace am::kernels {
namespace {

std::vector<float> seeded(int64_t n, uint64_t seed) {
  std::vector<float> v(static_cast<std::size_t>(n));
  fill_normal(v.data(), n, 0.0f, 1.0f, seed, ExecContext{});
  return v;
}

// A file from a raw header and `data_bytes` bytes of data (value i & 0xFF at byte i).
std::vector<uint8_t> raw_file(const std::string& header, std::size_t data_bytes) {
  std::vector<uint8_t> out(8 + header.size() + data_bytes);
  const uint64_t n = header.size();
  std::memcpy(out.data(), &n, 8);
  std::memcpy(out.data() + 8, header.data(), header.size());
  for (std::size_t i = 0; i < data_bytes; ++i) out[8 + header.size() + i] = static_cast<uint8_t>(i & 0xFF);
  return out;
}

Status parse_status(const std::vector<uint8_t>& bytes) {
  return SafetensorsFile::from_bytes("test.safetensors", bytes).status();
}

void expect_error(const std::vector<uint8_t>& bytes, StatusCode code, const std::string& needle) {
  const Status s = parse_status(bytes);
  EXPECT_EQ(s.code(), code) << s.to_string();
  EXPECT_NE(s.message().find(needle), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("test.safetensors"), std::string::npos) << s.message();
}

TEST(Safetensors, RoundTripsF32TensorsAndMetadataExactly) {
  const std::vector<float> a = seeded(6 * 5, 1), b = seeded(7, 2);
  auto bytes = encode_safetensors({{"a", SafetensorsDtype::kF32, {6, 5}, a.data()},
                                   {"b.bias", SafetensorsDtype::kF32, {7}, b.data()}},
                                  {{"format", "pt"}});
  ASSERT_TRUE(bytes.ok()) << bytes.status().to_string();
  uint64_t header_len = 0;
  std::memcpy(&header_len, bytes->data(), 8);
  EXPECT_EQ(header_len % 8, 0u);  // data section aligned for f32
  auto f = SafetensorsFile::from_bytes("mem", *bytes);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->metadata().at("format"), "pt");
  ASSERT_EQ(f->entries().size(), 2u);
  EXPECT_EQ(f->entries()[0].name, "a");
  EXPECT_EQ(f->entries()[1].begin, 6u * 5u * 4u);
  auto ta = f->read_f32("a", Shape{6, 5});
  auto tb = f->read_f32("b.bias", Shape{7});
  ASSERT_TRUE(ta.ok() && tb.ok());
  EXPECT_EQ(std::memcmp(ta->data(), a.data(), a.size() * 4), 0);
  EXPECT_EQ(std::memcmp(tb->data(), b.data(), b.size() * 4), 0);
}

TEST(Safetensors, ConvertsKnownF16AndBf16BitPatterns) {
  // f16: 1.0, -2.0, 65504 (max), 2^-24 (smallest subnormal); bf16: 1.0, 3.140625, -0.5, 2^-133.
  const uint16_t f16[] = {0x3C00, 0xC000, 0x7BFF, 0x0001};
  const uint16_t bf16[] = {0x3F80, 0x4049, 0xBF00, 0x0001};
  std::string header = R"({"h":{"dtype":"F16","shape":[2,2],"data_offsets":[0,8]},)"
                       R"("b":{"dtype":"BF16","shape":[4],"data_offsets":[8,16]}})";
  std::vector<uint8_t> file = raw_file(header, 16);
  std::memcpy(file.data() + 8 + header.size(), f16, 8);
  std::memcpy(file.data() + 8 + header.size() + 8, bf16, 8);
  auto f = SafetensorsFile::from_bytes("mem", file);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  auto h = f->read_f32("h", Shape{2, 2});
  auto b = f->read_f32("b", Shape{4});
  ASSERT_TRUE(h.ok() && b.ok());
  EXPECT_EQ(h->data()[0], 1.0f);
  EXPECT_EQ(h->data()[1], -2.0f);
  EXPECT_EQ(h->data()[2], 65504.0f);
  EXPECT_EQ(h->data()[3], 0x1p-24f);
  EXPECT_EQ(b->data()[0], 1.0f);
  EXPECT_EQ(b->data()[1], 3.140625f);
  EXPECT_EQ(b->data()[2], -0.5f);
  EXPECT_EQ(b->data()[3], 0x1p-133f);
}

TEST(Safetensors, HalfPrecisionRoundTripRoundsEachValueToNearest) {
  const std::vector<float> x = seeded(513, 3);
  auto bytes = encode_safetensors({{"h", SafetensorsDtype::kF16, {513}, x.data()},
                                   {"b", SafetensorsDtype::kBF16, {513}, x.data()}});
  ASSERT_TRUE(bytes.ok());
  auto f = SafetensorsFile::from_bytes("mem", *bytes);
  ASSERT_TRUE(f.ok());
  auto h = f->read_f32("h", Shape{513});
  auto b = f->read_f32("b", Shape{513});
  ASSERT_TRUE(h.ok() && b.ok());
  for (std::size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(h->data()[i], fp16_to_fp32(fp32_to_fp16(x[i]))) << i;
    ASSERT_EQ(b->data()[i], bf16_to_fp32(fp32_to_bf16(x[i]))) << i;
    ASSERT_NE(h->data()[i], 0.0f);
  }
}

TEST(Safetensors, OpensAMappedFileFromDisk) {
  const std::string path = ::testing::TempDir() + "safetensors_disk_test.safetensors";
  const std::vector<float> a = seeded(64, 4);
  ASSERT_TRUE(write_safetensors(path, {{"w", SafetensorsDtype::kF32, {8, 8}, a.data()}}).ok());
  auto f = SafetensorsFile::open(path);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  auto w = f->read_f32("w", Shape{8, 8});
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(std::memcmp(w->data(), a.data(), 64 * 4), 0);
  std::remove(path.c_str());
  const Status missing = SafetensorsFile::open(path).status();
  EXPECT_EQ(missing.code(), StatusCode::kNotFound);
  EXPECT_NE(missing.message().find(path), std::string::npos);
}

// A weights file truncated while a job read it ended the job with a bare SIGBUS ("crash", no
// log). With the job process's handler the fault names the file and exits with the given code.
TEST(MappedFileDeathTest, AFileTruncatedUnderItsMappingIsNamedWhenReadPastItsNewEnd) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  // Named after the test process: the threadsafe death test runs the body again in a child.
  const pid_t owner = ::testing::internal::InDeathTestChild() ? ::getppid() : ::getpid();
  const std::string path = ::testing::TempDir() + "mapped_truncated_" + std::to_string(owner);
  {
    std::ofstream out(path, std::ios::binary);
    const std::vector<float> values = seeded(1 << 16, 9);
    out.write(reinterpret_cast<const char*>(values.data()), static_cast<std::streamsize>(values.size() * 4));
  }
  EXPECT_EXIT(
      {
        install_mapped_file_fault_handler(76);
        auto f = MappedFile::open(path);
        if (!f.ok() || ::truncate(path.c_str(), 0) != 0) ::_exit(1);
        volatile uint8_t last = f->data()[f->size() - 1];
        (void)last;
        ::_exit(0);
      },
      ::testing::ExitedWithCode(76), path + " was truncated or replaced while the job read it \\(SIGBUS\\)");
  std::remove(path.c_str());
}

// A FIFO as the weights file blocked in open() until the job's time limit (no writer ever came).
TEST(Safetensors, AFifoIsRefusedAtOnceAsNotARegularFile) {
  const std::string path = ::testing::TempDir() + "safetensors_fifo_" + std::to_string(::getpid());
  std::remove(path.c_str());
  ASSERT_EQ(::mkfifo(path.c_str(), 0644), 0);
  auto opened = std::async(std::launch::async, [&] { return SafetensorsFile::open(path).status(); });
  if (opened.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    // Unblock the open with a writer so the test can end, then fail.
    const int w = ::open(path.c_str(), O_WRONLY);
    ADD_FAILURE() << "open() of a FIFO blocked";
    opened.wait();
    ::close(w);
  } else {
    const Status st = opened.get();
    EXPECT_FALSE(st.ok());
    EXPECT_NE(st.message().find("is not a regular file"), std::string::npos) << st.to_string();
  }
  std::remove(path.c_str());
}

TEST(Safetensors, ReadingReportsMissingTensorsWrongShapesAndUnsupportedDtypes) {
  std::string header = R"({"ids":{"dtype":"I64","shape":[2],"data_offsets":[0,16]},)"
                       R"("w":{"dtype":"F32","shape":[2,3],"data_offsets":[16,40]}})";
  auto f = SafetensorsFile::from_bytes("ckpt.safetensors", raw_file(header, 40));
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  Status s = f->read_f32("ids", Shape{2}).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);   // the job's input, not a backend's lack (PLANS.md)
  EXPECT_NE(s.message().find("I64"), std::string::npos);
  EXPECT_NE(s.message().find("'ids'"), std::string::npos);
  s = f->read_f32("w", Shape{3, 2}).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("[2, 3]"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("[3, 2]"), std::string::npos) << s.message();
  s = f->read_f32("nope", Shape{1}).status();
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find("'nope'"), std::string::npos);
  EXPECT_NE(s.message().find("ckpt.safetensors"), std::string::npos);
}

TEST(Safetensors, EveryMalformedHeaderGivesItsError) {
  const StatusCode bad = StatusCode::kInvalidArgument;
  expect_error({1, 2, 3}, bad, "too short");
  std::vector<uint8_t> long_len = raw_file("{}", 0);
  const uint64_t beyond = 1000;
  std::memcpy(long_len.data(), &beyond, 8);
  expect_error(long_len, bad, "past the end of the file");
  const uint64_t huge = ~uint64_t{0};
  std::memcpy(long_len.data(), &huge, 8);
  expect_error(long_len, bad, "exceeds the limit");
  expect_error(raw_file("{\"a\": ", 0), bad, "not valid JSON");
  expect_error(raw_file("[1, 2]", 0), bad, "not a JSON object");
  expect_error(raw_file(R"({"__metadata__": [1]})", 0), bad, "__metadata__ is not an object");
  expect_error(raw_file(R"({"__metadata__": {"k": 1}})", 0), bad, "value of 'k' is not a string");
  expect_error(raw_file(R"({"t": 5})", 0), bad, "tensor 't': entry is not an object");
  expect_error(raw_file(R"({"t": {"shape": [1], "data_offsets": [0, 4]}})", 4), bad, "'dtype'");
  expect_error(raw_file(R"({"t": {"dtype": 4, "shape": [1], "data_offsets": [0, 4]}})", 4), bad, "'dtype'");
  expect_error(raw_file(R"({"t": {"dtype": "F31", "shape": [1], "data_offsets": [0, 4]}})", 4), bad,
               "unknown dtype 'F31'");
  expect_error(raw_file(R"({"t": {"dtype": "F32", "data_offsets": [0, 4]}})", 4), bad, "'shape'");
  expect_error(raw_file(R"({"t": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}})", 4), bad,
               "non-negative integers");
  expect_error(raw_file(R"({"t": {"dtype": "F32", "shape": [1.5], "data_offsets": [0, 4]}})", 4), bad,
               "non-negative integers");
  expect_error(raw_file(R"({"t": {"dtype": "F32", "shape": [1]}})", 4), bad, "'data_offsets'");
  expect_error(raw_file(R"({"t": {"dtype": "F32", "shape": [1], "data_offsets": [0]}})", 4), bad, "'data_offsets'");
  expect_error(raw_file(R"({"t": {"dtype": "F32", "shape": [1], "data_offsets": ["0", 4]}})", 4), bad,
               "non-negative integers");
  expect_error(raw_file(R"({"t": {"dtype": "F32", "shape": [1], "data_offsets": [4, 0]}})", 4), bad,
               "begin after they end");
  expect_error(raw_file(R"({"t": {"dtype": "F32", "shape": [1], "data_offsets": [0, 8]}})", 4), bad,
               "run past the data section");
  expect_error(raw_file(R"({"t": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}})", 4), bad,
               "does not match its 4 bytes");
  expect_error(raw_file(R"({"t": {"dtype": "F32", "shape": [4294967296, 4294967296], "data_offsets": [0, 4]}})", 4),
               bad, "does not match");
  expect_error(raw_file(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},)"
                        R"( "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})",
                        12),
               bad, "overlaps tensor 'a'");
  expect_error(raw_file(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})", 8), bad,
               "gap of 4 bytes before tensor 'a'");
  expect_error(raw_file(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})", 12), bad,
               "8 bytes after the last tensor");
}

// A checkpoint path is the coordinator's to choose: the error for a file that is no safetensors
// file must not quote its first 8 bytes (the header length) back into the job's reason.
TEST(Safetensors, AnotherKindOfFileIsRefusedWithoutQuotingItsBytes) {
  const std::string text = "root:*:20000:0:99999:7:::\nsecret line\n";
  std::vector<uint8_t> bytes(text.begin(), text.end());
  uint64_t as_length = 0;
  std::memcpy(&as_length, bytes.data(), sizeof as_length);
  const Status s = parse_status(bytes);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("not a safetensors file"), std::string::npos) << s.message();
  EXPECT_EQ(s.message().find(std::to_string(as_length)), std::string::npos) << s.message();
}

TEST(Safetensors, AcceptsAnEmptyHeaderAndZeroSizedTensors) {
  EXPECT_TRUE(parse_status(raw_file("{}", 0)).ok());
  auto f = SafetensorsFile::from_bytes("mem", raw_file(R"({"e": {"dtype": "F32", "shape": [0, 3], "data_offsets": [0, 0]}})", 0));
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_TRUE(f->read_f32("e", Shape{0, 3}).ok());
}

// Every prefix of a valid file, and many seeded single- and multi-byte mutations of it, must
// parse into an error or a file whose every tensor reads back — never crash.
TEST(Safetensors, TruncatedAndMutatedFilesNeverCrash) {
  const std::vector<float> a = seeded(12, 5), b = seeded(6, 6);
  auto bytes = encode_safetensors({{"layer.0.weight", SafetensorsDtype::kF32, {3, 4}, a.data()},
                                   {"layer.0.bias", SafetensorsDtype::kBF16, {6}, b.data()}},
                                  {{"format", "pt"}});
  ASSERT_TRUE(bytes.ok());
  const std::vector<uint8_t>& good = *bytes;
  for (std::size_t len = 0; len < good.size(); ++len) {
    std::vector<uint8_t> cut(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(len));
    EXPECT_FALSE(parse_status(cut).ok()) << "prefix of " << len << " bytes parsed";
  }
  uint64_t header_len = 0;
  std::memcpy(&header_len, good.data(), 8);
  Xoshiro256 rng(derive_seed(99, 1));
  int parsed = 0;
  const char kJsonBytes[] = "{}[]\":,0123456789-.eE FBI";
  for (int trial = 0; trial < 4000; ++trial) {
    std::vector<uint8_t> m = good;
    const int edits = 1 + static_cast<int>(rng.below(3));
    for (int e = 0; e < edits; ++e) {
      // Mostly the header (where structure lives), sometimes the length field.
      const std::size_t pos = rng.below(8) == 0 ? rng.below(8) : 8 + rng.below(static_cast<uint32_t>(header_len));
      m[pos] = rng.below(2) == 0 ? static_cast<uint8_t>(rng.below(256))
                                 : static_cast<uint8_t>(kJsonBytes[rng.below(sizeof kJsonBytes - 1)]);
    }
    auto f = SafetensorsFile::from_bytes("fuzz", m);
    if (!f.ok()) {
      EXPECT_FALSE(f.status().message().empty());
      continue;
    }
    ++parsed;
    for (const SafetensorsEntry& e : f->entries()) {
      if (e.shape.size() > 4) continue;
      Shape s;
      switch (e.shape.size()) {
        case 0: s = Shape{}; break;
        case 1: s = Shape{e.shape[0]}; break;
        case 2: s = Shape{e.shape[0], e.shape[1]}; break;
        case 3: s = Shape{e.shape[0], e.shape[1], e.shape[2]}; break;
        default: s = Shape{e.shape[0], e.shape[1], e.shape[2], e.shape[3]}; break;
      }
      auto t = f->read_f32(e.name, s);
      if (e.dtype != SafetensorsDtype::kOther) {
        EXPECT_TRUE(t.ok()) << t.status().to_string();
      }
    }
  }
  EXPECT_GT(parsed, 0);  // some mutations (e.g. in names or whitespace) leave a valid file
}

TEST(SafetensorsWriter, RefusesRepeatedReservedOrEmptyNames) {
  const float x = 1.0f;
  EXPECT_EQ(encode_safetensors({{"a", SafetensorsDtype::kF32, {1}, &x}, {"a", SafetensorsDtype::kF32, {1}, &x}})
                .status()
                .code(),
            StatusCode::kInvalidArgument);
  EXPECT_FALSE(encode_safetensors({{"__metadata__", SafetensorsDtype::kF32, {1}, &x}}).ok());
  EXPECT_FALSE(encode_safetensors({{"", SafetensorsDtype::kF32, {1}, &x}}).ok());
}

}  // namespace
}  // namespace am::kernels
