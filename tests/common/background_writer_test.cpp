// Output written on a thread of its own (common/background_writer.h).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <random>
#include <string>
#include <thread>

#include "common/background_writer.h"

namespace am {
namespace {

TEST(BackgroundWriter, EveryPieceArrivesInOrderThroughASlowSink) {
  std::string received;
  BackgroundWriter writer(
      [&](std::string_view piece) {
        std::this_thread::sleep_for(std::chrono::microseconds(200));
        received.append(piece);
        return Status::Ok();
      },
      /*max_queued_bytes=*/64);
  std::string expected;
  std::mt19937 rng(99);
  for (int i = 0; i < 300; ++i) {
    const std::string piece = std::to_string(i) + std::string(rng() % 40, 'x') + ";";
    ASSERT_TRUE(writer.write(piece).ok());
    expected += piece;
  }
  ASSERT_TRUE(writer.finish().ok());
  EXPECT_EQ(received, expected);
}

TEST(BackgroundWriter, TheQueueNeverHoldsMoreThanItsBound) {
  std::atomic<std::size_t> given{0};
  std::atomic<std::size_t> written{0};
  std::size_t worst = 0;
  BackgroundWriter writer(
      [&](std::string_view piece) {
        std::this_thread::sleep_for(std::chrono::microseconds(300));
        written += piece.size();
        return Status::Ok();
      },
      /*max_queued_bytes=*/100);
  for (int i = 0; i < 200; ++i) {
    ASSERT_TRUE(writer.write(std::string(10, 'y')).ok());
    given += 10;
    // What write() accepted and the sink has not finished: the queue, plus the piece in hand.
    worst = std::max(worst, given.load() - written.load());
  }
  ASSERT_TRUE(writer.finish().ok());
  EXPECT_EQ(written.load(), 2000u);
  EXPECT_LE(worst, 110u);
}

TEST(BackgroundWriter, TheSinksFirstErrorStopsTheWritingAndIsReported) {
  int calls = 0;
  BackgroundWriter writer([&](std::string_view) {
    ++calls;
    return calls == 3 ? io_error("disk full") : Status::Ok();
  });
  // Written until the error comes back (the sink sees the third piece on its own thread).
  Status last;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (last.ok() && std::chrono::steady_clock::now() < deadline) {
    last = writer.write("piece");
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_FALSE(last.ok());
  const Status finished = writer.finish();
  EXPECT_EQ(finished.code(), StatusCode::kIoError);
  EXPECT_NE(finished.message().find("disk full"), std::string::npos);
  EXPECT_EQ(calls, 3);   // nothing reached the sink after its error
  EXPECT_FALSE(writer.write("late").ok());
}

}  // namespace
}  // namespace am
