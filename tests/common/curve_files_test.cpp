#include <gtest/gtest.h>

#include <fstream>
#include <sys/stat.h>

#include "common/curve_files.h"

namespace am {
namespace {

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::string t = (std::filesystem::temp_directory_path() / "am-curve-XXXXXX").string();
    path = mkdtemp(t.data());
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

TEST(CurveFiles, WrittenKeypairLoadsBackAndTheSecretFileIsPrivate) {
  if (!curve_available()) GTEST_SKIP() << "libzmq without CURVE";
  TempDir dir;
  auto pair = write_curve_keypair(dir.path, "coord");
  ASSERT_TRUE(pair.ok()) << pair.status().to_string();
  auto loaded = load_curve_keypair(dir.path / "coord.key");
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  EXPECT_EQ(loaded->public_key, pair->public_key);
  EXPECT_EQ(loaded->secret_key, pair->secret_key);
  auto pub = load_curve_public_key(dir.path / "coord.pub");
  ASSERT_TRUE(pub.ok());
  EXPECT_EQ(*pub, pair->public_key);
  struct stat st {};
  ASSERT_EQ(::stat((dir.path / "coord.key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  // Never overwrites an existing key.
  EXPECT_FALSE(write_curve_keypair(dir.path, "coord").ok());
}

TEST(CurveFiles, KeyNamesThatAreNoPlainVisibleFileNameAreRefusedWithoutWritingAnything) {
  if (!curve_available()) GTEST_SKIP() << "libzmq without CURVE";
  TempDir dir;
  for (const std::string& name : {std::string(), std::string("."), std::string(".."), std::string(".hidden"),
                                  std::string("a/b"), std::string(300, 'x')}) {
    auto pair = write_curve_keypair(dir.path, name);
    ASSERT_FALSE(pair.ok()) << "'" << name << "'";
    EXPECT_EQ(pair.status().code(), StatusCode::kInvalidArgument) << pair.status().to_string();
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir.path));
  // The longest name that fits beside its suffix is written.
  EXPECT_TRUE(write_curve_keypair(dir.path, std::string(251, 'y')).ok());
}

TEST(CurveFiles, AllowListReadsEveryPubFileOfADirectory) {
  if (!curve_available()) GTEST_SKIP() << "libzmq without CURVE";
  TempDir dir;
  auto a = write_curve_keypair(dir.path, "a");
  auto b = write_curve_keypair(dir.path, "b");
  ASSERT_TRUE(a.ok() && b.ok());
  auto keys = load_curve_allow_list(dir.path);
  ASSERT_TRUE(keys.ok()) << keys.status().to_string();
  EXPECT_EQ(*keys, (std::vector<std::string>{a->public_key, b->public_key}));
  auto one = load_curve_allow_list(dir.path / "b.pub");
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->size(), 1u);
  TempDir empty;
  EXPECT_FALSE(load_curve_allow_list(empty.path).ok());
}

TEST(CurveFiles, BadFilesAreRefusedNamingFileAndLine) {
  if (!curve_available()) GTEST_SKIP() << "libzmq without CURVE";
  TempDir dir;
  auto good = write_curve_keypair(dir.path, "good");
  ASSERT_TRUE(good.ok());
  std::ofstream(dir.path / "garbage.key") << "public " << good->public_key << "\nsecret not-a-key\n";
  auto bad = load_curve_keypair(dir.path / "garbage.key");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("garbage.key:2"), std::string::npos) << bad.status().message();
  auto other = write_curve_keypair(dir.path, "other");
  ASSERT_TRUE(other.ok());
  std::ofstream(dir.path / "mixed.key") << "public " << good->public_key << "\nsecret " << other->secret_key << "\n";
  auto mixed = load_curve_keypair(dir.path / "mixed.key");
  ASSERT_FALSE(mixed.ok());
  EXPECT_NE(mixed.status().message().find("does not belong"), std::string::npos);
  EXPECT_FALSE(load_curve_public_key(dir.path / "missing.pub").ok());
}

}  // namespace
}  // namespace am
