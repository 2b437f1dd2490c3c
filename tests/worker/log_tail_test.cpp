#include <random>
#include <string>

#include <gtest/gtest.h>

#include "worker/log_tail.h"

namespace am::worker {
namespace {

TEST(LogTail, KeepsExactlyTheLastBytesOfRandomChunks) {
  std::mt19937 rng(20240611);
  for (std::size_t capacity : {std::size_t{1}, std::size_t{7}, std::size_t{100}, std::size_t{4096}}) {
    LogTail tail(capacity);
    std::string everything;
    std::uniform_int_distribution<int> size_dist(0, static_cast<int>(capacity) * 3);
    std::uniform_int_distribution<int> char_dist(' ', '~');
    for (int chunk = 0; chunk < 200; ++chunk) {
      std::string data(static_cast<std::size_t>(size_dist(rng)), ' ');
      for (char& c : data) c = static_cast<char>(char_dist(rng));
      tail.append(data);
      everything += data;
      const std::string expected =
          everything.size() > capacity ? everything.substr(everything.size() - capacity) : everything;
      ASSERT_EQ(tail.str(), expected) << "capacity " << capacity << " chunk " << chunk;
    }
    EXPECT_EQ(tail.total_bytes(), everything.size());
  }
}

TEST(LogTail, DropsACharacterCutAtTheWindowStart) {
  LogTail tail(4);
  tail.append("ab\xc3\xa9xyz");  // "abéxyz": the 4-byte window starts inside é
  EXPECT_EQ(tail.str(), "xyz");
  tail.append("\xe2\x82\xac");  // €
  EXPECT_EQ(tail.str(), "z\xe2\x82\xac");
}

TEST(LogTail, RepairsInvalidOutputByTheProjectPolicy) {
  LogTail tail(64);
  tail.append("a\xff" "b \xc0\xaf");
  EXPECT_EQ(tail.str(), "a\xEF\xBF\xBD" "b \xEF\xBF\xBD\xEF\xBF\xBD");
}

}  // namespace
}  // namespace am::worker
