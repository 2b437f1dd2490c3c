// The residency bookkeeping every device backend shares (resident_tensors.h), on its own: which
// tensor a host range lies in, freed storage retiring and recycling device buffers, and the
// checks that catch host accesses without to_host()/from_host().
#include "kernels/resident_tensors.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>

namespace am::kernels {
namespace {

// A device buffer stand-in: the bookkeeping only moves buffers around and tests them for empty.
struct FakeBuffer {
  int id = 0;
  explicit operator bool() const { return id != 0; }
};
using Registry = ResidentTensors<FakeBuffer>;

TEST(ResidentTensors, FindsTheTensorARangeLiesInAndNothingForRangesOutsideOrAcross) {
  auto reg = std::make_shared<Registry>();
  Tensor a(Shape{4, 8}, reg), b(Shape{4, 8}, reg);
  reg->add(a);
  reg->add(b);
  Tensor plain(Shape{4, 8});
  EXPECT_EQ(reg->find(a.data(), a.bytes())->data, a.data());
  EXPECT_EQ(reg->find(a.row(2), 8 * sizeof(float))->data, a.data());
  EXPECT_EQ(Registry::offset_of(*reg->find(a.row(2), 32), a.row(2)), 2 * 8 * sizeof(float));
  EXPECT_EQ(reg->find(b.row(3), 8 * sizeof(float))->data, b.data());
  EXPECT_EQ(reg->find(a.row(3), 16 * sizeof(float)), nullptr);  // runs past a's end
  EXPECT_EQ(reg->find(plain.data(), plain.bytes()), nullptr);
  EXPECT_EQ(reg->live(), 2u);
}

TEST(ResidentTensors, AnOutputGoesThroughScratchWhenItOverlapsAnInputOrStartsInsideItsTensor) {
  auto reg = std::make_shared<Registry>();
  Tensor x = Registry::make_tensor(reg, Shape{4, 8});
  Tensor y = Registry::make_tensor(reg, Shape{4, 8});
  const Registry::Entry& ex = *reg->find(x.data(), x.bytes());
  const Registry::Entry& ey = *reg->find(y.data(), y.bytes());
  EXPECT_TRUE(reg->output_in_place(ey, y.data(), y.bytes()));
  EXPECT_FALSE(reg->output_in_place(ey, y.row(1), 8 * sizeof(float)));  // a range inside the tensor
  reg->note_input(x.row(2), 8 * sizeof(float));
  EXPECT_FALSE(reg->output_in_place(ex, x.data(), x.bytes()));  // writes what the op reads
  EXPECT_TRUE(reg->output_in_place(ex, x.data(), 2 * 8 * sizeof(float)));  // rows 0-1 only
  EXPECT_TRUE(reg->output_in_place(ey, y.data(), y.bytes()));
  reg->end_op();
  EXPECT_TRUE(reg->output_in_place(ex, x.data(), x.bytes()));
  EXPECT_TRUE(Registry::output_needs_current(ex, 8 * sizeof(float), false));  // partial write
  EXPECT_TRUE(Registry::output_needs_current(ex, x.bytes(), true));
  EXPECT_FALSE(Registry::output_needs_current(ex, x.bytes(), false));
}

TEST(ResidentTensors, FreedTensorsRetireTheirBuffersUntilRecycledForTensorsOfUpToTheirSize) {
  auto reg = std::make_shared<Registry>();
  {
    Tensor t(Shape{100}, reg);
    reg->add(t);
    Registry::Entry* e = reg->find(t.data(), t.bytes());
    e->buffer.id = 7;
    e->capacity = t.bytes();
  }
  EXPECT_EQ(reg->live(), 0u);
  Tensor u(Shape{60}, reg);
  reg->add(u);
  Registry::Entry* e = reg->find(u.data(), u.bytes());
  EXPECT_FALSE(reg->reuse_buffer(*e));  // retired: recorded work may still use it
  reg->recycle();
  Tensor tiny(Shape{10}, reg);
  reg->add(tiny);
  EXPECT_FALSE(reg->reuse_buffer(*reg->find(tiny.data(), tiny.bytes())));  // over twice its size
  Tensor big(Shape{101}, reg);
  reg->add(big);
  EXPECT_FALSE(reg->reuse_buffer(*reg->find(big.data(), big.bytes())));  // too small
  ASSERT_TRUE(reg->reuse_buffer(*e));
  EXPECT_EQ(e->buffer.id, 7);
  EXPECT_EQ(e->capacity, 100 * sizeof(float));
}

TEST(ResidentTensors, ChecksCatchAHostWriteToAStaleOrSharedCopy) {
  auto reg = std::make_shared<Registry>();
  reg->set_checks(true);
  Tensor t(Shape{16}, reg);
  reg->add(t);
  Registry::Entry* e = reg->find(t.data(), t.bytes());
  reg->device_wrote(*e);
  EXPECT_TRUE(std::isnan(t.data()[3]));  // a read without to_host() sees NaN
  EXPECT_TRUE(reg->verify(*e).ok());
  t.data()[3] = 1.0f;
  EXPECT_EQ(reg->verify(*e).code(), StatusCode::kInternal);

  reg->both_current(*e);  // as after a download
  EXPECT_TRUE(reg->verify(*e).ok());
  t.data()[9] = 2.0f;
  const Status s = reg->verify(*e);
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_NE(s.message().find("from_host"), std::string::npos) << s.message();
}

TEST(ResidentTensors, ATensorOutlivingItsRegistryFreesAsPlainMemory) {
  Tensor t;
  {
    auto reg = std::make_shared<Registry>();
    t = Tensor(Shape{8}, reg);
    reg->add(t);
  }
  t.data()[0] = 3.0f;
  t = Tensor(Shape{2});  // frees the storage: the observer is gone, nothing is told
  EXPECT_EQ(t.data()[0], 0.0f);
}

}  // namespace
}  // namespace am::kernels
