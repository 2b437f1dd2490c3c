// Files written whole or not at all (common/atomic_file.h), including the piecewise writer the
// streaming reports write through.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <thread>

#include "common/atomic_file.h"

namespace am {
namespace {

namespace fs = std::filesystem;

class AtomicFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::random_device rd;
    dir_ = fs::temp_directory_path() / ("accelmatrix-atomic-" + std::to_string(rd()) + std::to_string(rd()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::permissions(dir_, fs::perms::owner_all, ec);
    fs::remove_all(dir_, ec);
  }
  static std::string read(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
  fs::path dir_;
};

TEST_F(AtomicFileTest, PiecesAppendedAppearOnlyAfterCommitAndReplaceTheOldFile) {
  const fs::path path = dir_ / "report.json";
  ASSERT_TRUE(write_file_atomically(path, "old").ok());
  auto writer = AtomicFileWriter::create(path);
  ASSERT_TRUE(writer.ok()) << writer.status().to_string();
  std::string expected;
  std::mt19937 rng(7);
  for (int i = 0; i < 50; ++i) {
    std::string piece(rng() % 5000, static_cast<char>('a' + rng() % 26));
    ASSERT_TRUE(writer->append(piece).ok());
    expected += piece;
  }
  EXPECT_EQ(read(path), "old");   // nothing of the new content is visible yet
  EXPECT_TRUE(fs::exists(dir_ / "report.json.tmp"));
  ASSERT_TRUE(writer->commit().ok());
  EXPECT_EQ(read(path), expected);
  EXPECT_FALSE(fs::exists(dir_ / "report.json.tmp"));
  EXPECT_FALSE(writer->append("more").ok());   // committed: nothing more goes in
}

TEST_F(AtomicFileTest, AWriterDroppedWithoutCommitLeavesTheOldFileAndNoTemporary) {
  const fs::path path = dir_ / "report.json";
  ASSERT_TRUE(write_file_atomically(path, "old").ok());
  {
    auto writer = AtomicFileWriter::create(path);
    ASSERT_TRUE(writer.ok());
    ASSERT_TRUE(writer->append("half of a new rep").ok());
  }   // an error on the way: the writer goes out of scope uncommitted
  EXPECT_EQ(read(path), "old");
  EXPECT_FALSE(fs::exists(dir_ / "report.json.tmp"));
}

TEST_F(AtomicFileTest, TheModeIsSetWhateverTheUmask) {
  // A umask that would narrow 0644 to 0600 (open() alone applies it; the writer's fchmod not).
  const fs::path path = dir_ / "public";
  const mode_t old = ::umask(077);
  auto writer = AtomicFileWriter::create(path, kPublicFileMode);
  ::umask(old);
  ASSERT_TRUE(writer.ok());
  ASSERT_TRUE(writer->append("p").ok());
  ASSERT_TRUE(writer->commit().ok());
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, kPublicFileMode);
}

TEST_F(AtomicFileTest, APlaceThatCannotTakeTheFileIsAnErrorNamingTheTemporary) {
  auto writer = AtomicFileWriter::create(dir_ / "no-such-dir" / "out.json");
  ASSERT_FALSE(writer.ok());
  EXPECT_NE(writer.status().message().find("out.json.tmp"), std::string::npos) << writer.status().message();
  EXPECT_FALSE(fs::exists(dir_ / "no-such-dir"));
}

}  // namespace
}  // namespace am

namespace am {
namespace {

// `report -o /dev/stdout` (or a FIFO, /dev/fd/N): nothing is made beside the target and nothing
// renamed over it; the content goes straight through.
TEST(AtomicFileSpecialTargets, AFifoIsWrittenThroughAndStaysAFifo) {
  std::mt19937_64 rng(std::random_device{}());
  const auto dir = std::filesystem::temp_directory_path() / ("am-atomic-fifo-" + std::to_string(rng()));
  std::filesystem::create_directories(dir);
  const auto fifo = dir / "out.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string payload(200000, '\0');
  for (char& c : payload) c = static_cast<char>('a' + rng() % 26);
  std::string got;
  std::thread reader([&] {
    std::ifstream in(fifo, std::ios::binary);
    got.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  });
  const Status st = write_file_atomically(fifo, payload);
  reader.join();
  EXPECT_TRUE(st.ok()) << st.to_string();
  EXPECT_EQ(got, payload);
  struct stat after {};
  ASSERT_EQ(::stat(fifo.c_str(), &after), 0);
  EXPECT_TRUE(S_ISFIFO(after.st_mode));
  EXPECT_FALSE(std::filesystem::exists(fifo.string() + ".tmp"));
  std::filesystem::remove_all(dir);
}

TEST(AtomicFileSpecialTargets, ACharacterDeviceIsWrittenThroughAndNothingIsMadeBesideIt) {
  ASSERT_TRUE(write_file_atomically("/dev/null", "discarded\n").ok());
  struct stat after {};
  ASSERT_EQ(::stat("/dev/null", &after), 0);
  EXPECT_TRUE(S_ISCHR(after.st_mode));
  EXPECT_FALSE(std::filesystem::exists("/dev/null.tmp"));
}

}  // namespace
}  // namespace am

namespace am {
namespace {

// `report -o /dev/stdout > file`: /dev/stdout resolves to a regular file, and the atomic write
// renamed a temporary over the link (as root: over the system's /dev/stdout). A link that names
// a descriptor is written through, and appended to.
TEST(AtomicFileSpecialTargets, ALinkToADescriptorIsWrittenThroughAndStaysALink) {
  std::mt19937_64 rng(std::random_device{}());
  const auto dir = std::filesystem::temp_directory_path() / ("am-atomic-fd-" + std::to_string(rng()));
  std::filesystem::create_directories(dir);
  const auto file = dir / "captured.txt";
  {
    std::ofstream first(file);
    first << "kept\n";
  }
  const int fd = ::open(file.c_str(), O_WRONLY | O_APPEND);
  ASSERT_GE(fd, 0);
  const auto link = dir / "fakestdout";
  std::filesystem::create_symlink("/proc/self/fd/" + std::to_string(fd), link);
  EXPECT_TRUE(write_file_atomically(link, "report\n").ok());
  ::close(fd);
  EXPECT_TRUE(std::filesystem::is_symlink(link));
  EXPECT_FALSE(std::filesystem::exists(link.string() + ".tmp"));
  std::ifstream in(file);
  const std::string got((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(got, "kept\nreport\n");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace am
