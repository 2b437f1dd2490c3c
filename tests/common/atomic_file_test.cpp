// Files written whole or not at all (common/atomic_file.h), including the piecewise writer the
// streaming reports write through.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/atomic_file.h"

namespace am {
namespace {

namespace fs = std::filesystem;

// The writer's temporaries of `name` in `dir` ("<name>.<random>.tmp").
int temporaries(const fs::path& dir, const std::string& name) {
  int n = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string f = e.path().filename().string();
    if (f.rfind(name + ".", 0) == 0 && f.size() > name.size() + 4 && f.compare(f.size() - 4, 4, ".tmp") == 0) ++n;
  }
  return n;
}

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
  EXPECT_EQ(temporaries(dir_, "report.json"), 1);
  ASSERT_TRUE(writer->commit().ok());
  EXPECT_EQ(read(path), expected);
  EXPECT_EQ(temporaries(dir_, "report.json"), 0);
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
  EXPECT_EQ(temporaries(dir_, "report.json"), 0);
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
  EXPECT_NE(writer.status().message().find("no-such-dir/out.json."), std::string::npos) << writer.status().message();
  EXPECT_NE(writer.status().message().find(".tmp"), std::string::npos) << writer.status().message();
  EXPECT_FALSE(fs::exists(dir_ / "no-such-dir"));
}

// `report --db results.md.tmp -o results.md` emptied and then deleted the database: the
// temporary was the fixed name "<path>.tmp", truncated or unlinked whatever it held.
TEST_F(AtomicFileTest, AFileNamedLikeTheOldTemporaryIsNeverTouched) {
  const fs::path path = dir_ / "results.md";
  const std::string precious = "SQLite format 3" + std::string(1, '\0') + "and more";
  {
    std::ofstream out(dir_ / "results.md.tmp", std::ios::binary);
    out << precious;
  }
  ASSERT_TRUE(write_file_atomically(path, "report").ok());
  EXPECT_EQ(read(path), "report");
  EXPECT_EQ(read(dir_ / "results.md.tmp"), precious);
  {
    auto dropped = AtomicFileWriter::create(path);   // and when a writer fails on the way
    ASSERT_TRUE(dropped.ok());
  }
  EXPECT_EQ(read(dir_ / "results.md.tmp"), precious);
}

TEST_F(AtomicFileTest, ReplacingAFileNeverWidensItsPermissions) {
  const fs::path path = dir_ / "private.md";
  ASSERT_TRUE(write_file_atomically(path, "mine", 0600).ok());
  ASSERT_TRUE(write_file_atomically(path, "still mine").ok());   // asked for 0644
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(read(path), "still mine");
  // A secret written over a public file is not made public by it either.
  const fs::path key = dir_ / "key";
  ASSERT_TRUE(write_file_atomically(key, "public").ok());
  ASSERT_TRUE(write_file_atomically(key, "secret", kSecretFileMode).ok());
  ASSERT_EQ(::stat(key.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, kSecretFileMode);
}

TEST_F(AtomicFileTest, AnOwnerThatCouldNotReadItsFileCanAgainAfterAReplacement) {
  const fs::path secret = dir_ / "secret-w1";
  ASSERT_TRUE(write_file_atomically(secret, "old", kSecretFileMode).ok());
  ASSERT_EQ(::chmod(secret.c_str(), 0), 0);   // made unreadable by mistake
  ASSERT_TRUE(write_file_atomically(secret, "new", kSecretFileMode).ok());
  struct stat st {};
  ASSERT_EQ(::stat(secret.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, kSecretFileMode);
}

// 21 bytes of suffix turned names of 235-251 bytes, which fit before, into ENAMETOOLONG.
TEST_F(AtomicFileTest, ANameNearTheLimitStillGetsATemporary) {
  const fs::path path = dir_ / (std::string(250, 'r') + ".md");
  ASSERT_EQ(path.filename().string().size(), 253u);
  const Status st = write_file_atomically(path, "long");
  ASSERT_TRUE(st.ok()) << st.to_string();
  EXPECT_EQ(read(path), "long");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);
}

// A writer killed between its temporary and the rename leaves the temporary; the next writer of
// the path removes those whose process is gone and that nothing wrote for a minute, and no other.
TEST_F(AtomicFileTest, TemporariesOfKilledWritersAreRemovedByTheNextWriter) {
  const fs::path path = dir_ / "report.md";
  pid_t dead = ::fork();
  if (dead == 0) _exit(0);
  ASSERT_GT(dead, 0);
  int status = 0;
  ASSERT_EQ(::waitpid(dead, &status, 0), dead);
  const auto old_time = fs::file_time_type::clock::now() - std::chrono::minutes(5);
  const auto make = [&](const std::string& name, bool old) {
    { std::ofstream(dir_ / name) << "partial"; }
    if (old) fs::last_write_time(dir_ / name, old_time);
  };
  const std::string stale = "report.md." + std::to_string(dead) + "-0badcafe.tmp";
  const std::string fresh = "report.md." + std::to_string(dead) + "-12345678.tmp";      // just written
  const std::string alive = "report.md." + std::to_string(::getpid()) + "-87654321.tmp";  // a live writer
  const std::string other = "report.md.tmp";                                              // not ours
  make(stale, true);
  make(fresh, false);
  make(alive, true);
  make(other, true);
  ASSERT_TRUE(write_file_atomically(path, "done").ok());
  EXPECT_FALSE(fs::exists(dir_ / stale));
  EXPECT_TRUE(fs::exists(dir_ / fresh));
  EXPECT_TRUE(fs::exists(dir_ / alive));
  EXPECT_TRUE(fs::exists(dir_ / other));
  EXPECT_EQ(read(path), "done");
}

// Six writers of one path at once (six `report -o same.json`): five failed "cannot rename
// same.json.tmp" as they shared one temporary. Each now has its own; all succeed, the file is
// one of them whole, and no temporary is left.
TEST_F(AtomicFileTest, ConcurrentWritersOfOnePathAllSucceedAndOneWinsWhole) {
  const fs::path path = dir_ / "same.json";
  constexpr int kWriters = 6;
  std::vector<std::string> contents;
  for (int i = 0; i < kWriters; ++i) contents.push_back(std::string(100000 + i, static_cast<char>('a' + i)));
  std::vector<Status> results(kWriters);
  std::vector<std::thread> threads;
  for (int i = 0; i < kWriters; ++i) {
    threads.emplace_back([&, i] {
      auto w = AtomicFileWriter::create(path);
      if (!w.ok()) {
        results[i] = w.status();
        return;
      }
      for (std::size_t at = 0; at < contents[i].size(); at += 4096) {
        Status st = w->append(std::string_view(contents[i]).substr(at, 4096));
        if (!st.ok()) {
          results[i] = st;
          return;
        }
      }
      results[i] = w->commit();
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < kWriters; ++i) EXPECT_TRUE(results[i].ok()) << i << ": " << results[i].to_string();
  const std::string got = read(path);
  EXPECT_NE(std::find(contents.begin(), contents.end(), got), contents.end()) << got.size();
  EXPECT_EQ(temporaries(dir_, "same.json"), 0);
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
  EXPECT_EQ(temporaries(dir, "out.fifo"), 0);
  std::filesystem::remove_all(dir);
}

TEST(AtomicFileSpecialTargets, ACharacterDeviceIsWrittenThroughAndNothingIsMadeBesideIt) {
  ASSERT_TRUE(write_file_atomically("/dev/null", "discarded\n").ok());
  struct stat after {};
  ASSERT_EQ(::stat("/dev/null", &after), 0);
  EXPECT_TRUE(S_ISCHR(after.st_mode));
  EXPECT_EQ(temporaries("/dev", "null"), 0);
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
  EXPECT_EQ(temporaries(dir, "fakestdout"), 0);
  std::ifstream in(file);
  const std::string got((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(got, "kept\nreport\n");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace am
