// The op harness: every case of op_cases.h on every backend against the cpu scalar reference,
// one test per (backend, op): BackendOps_cpu.linear, BackendOps_opencl.attention, ... The cpu
// backend runs on its best SIMD path with two threads (so its kernels are held to the scalar
// reference too); opencl and vulkan on the device make_backend() picks, each test skipping with
// the reason when the backend has no device here. A case whose (op, format) the backend does not
// support() is listed and skipped, never counted as a pass. Residency checks are on
// (resident_tensors.h), so a backend that mishandles resident inputs or outputs fails here.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kernels/accuracy.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/resident_tensors.h"
#include "kernels/thread_pool.h"
#include "tests/kernels/backend_ops/op_cases.h"

namespace am::kernels::testing {
namespace {

constexpr int kCpuThreads = 2;

const std::vector<OpCase>& cases() {
  static const std::vector<OpCase> all = all_op_cases();
  return all;
}

// Backends live for the whole binary and go in a GoogleTest environment's TearDown (a device
// destroyed by a static destructor after the driver's own exit handler crashed on an H200).
struct Backends {
  ThreadPool pool{kCpuThreads};
  std::map<std::string, std::unique_ptr<Backend>> made;
  std::map<std::string, Status> missing;
};
Backends*& backends() {
  static Backends* b = nullptr;
  return b;
}
class ReleaseBackends : public ::testing::Environment {
 public:
  void TearDown() override {
    delete backends();
    backends() = nullptr;
  }
};

Result<Backend*> backend_named(const std::string& name) {
  if (backends() == nullptr) backends() = new Backends();
  Backends& b = *backends();
  if (auto it = b.made.find(name); it != b.made.end()) return it->second.get();
  if (auto it = b.missing.find(name); it != b.missing.end()) return it->second;
  ExecContext ctx{best_kernel_path(), &b.pool};
  ctx.cpu_weights = false;  // the cases' weights are GGUF rows, which every backend runs
  Result<std::unique_ptr<Backend>> be = make_backend(name, ctx);
  if (!be.ok()) {
    b.missing.emplace(name, be.status());
    return be.status();
  }
  Backend* raw = be->get();
  std::printf("backend %s on %s\n", name.c_str(), raw->device_name().c_str());
  b.made.emplace(name, std::move(*be));
  return raw;
}

// The scalar reference's outputs of a case, computed once.
const std::vector<Tensor>& reference(std::size_t index) {
  static CpuBackend scalar(ExecContext{KernelPath::kScalar, nullptr, false});
  static std::map<std::size_t, std::vector<Tensor>> done;
  auto it = done.find(index);
  if (it == done.end()) {
    Result<std::vector<Tensor>> r = cases()[index].run(scalar);
    EXPECT_TRUE(r.ok()) << cases()[index].name << " on the scalar reference: " << r.status().message();
    it = done.emplace(index, r.ok() ? std::move(*r) : std::vector<Tensor>{}).first;
  }
  return it->second;
}

// Empty when `got` matches `want` as op_cases.h says: the same non-finite elements (NaN where
// NaN, the same infinity), the finite ones within `tolerance` in NMSE, or bit-identical for kExact.
std::string compare(const Tensor& got, const Tensor& want, double tolerance) {
  double err = 0.0, energy = 0.0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const float g = got.data()[i], w = want.data()[i];
    if (!std::isfinite(w) || !std::isfinite(g)) {
      const bool same = std::isnan(w) ? std::isnan(g) : g == w;
      if (!same) return "element " + std::to_string(i) + " is " + std::to_string(g) + ", the reference " + std::to_string(w);
      continue;
    }
    if (tolerance == OpTolerance::kExact && std::memcmp(&g, &w, sizeof g) != 0) {
      return "element " + std::to_string(i) + " is " + std::to_string(g) + ", not bit-identical to the reference " +
             std::to_string(w);
    }
    err += (static_cast<double>(g) - w) * (static_cast<double>(g) - w);
    energy += static_cast<double>(w) * w;
  }
  const double nmse = energy > 0.0 ? err / energy : err;
  if (nmse > tolerance) return "NMSE " + std::to_string(nmse) + " above " + std::to_string(tolerance);
  return {};
}

void run_op(const std::string& backend, Op op) {
  Result<Backend*> be = backend_named(backend);
  if (!be.ok()) {
    if (be.status().code() != StatusCode::kUnsupported) FAIL() << be.status().to_string();
    GTEST_SKIP() << backend << " has no device here: " << be.status().message();
  }
  int ran = 0;
  for (std::size_t i = 0; i < cases().size(); ++i) {
    const OpCase& c = cases()[i];
    if (c.op != op) continue;
    SCOPED_TRACE(c.name);
    if (Status s = (*be)->supports(c.op, c.format); !s.ok()) {
      std::printf("  skipped on %s: %s (%s)\n", backend.c_str(), c.name.c_str(), s.message().c_str());
      continue;
    }
    const std::vector<Tensor>& want = reference(i);
    Result<std::vector<Tensor>> got = c.run(**be);
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    ASSERT_EQ(got->size(), want.size());
    for (std::size_t k = 0; k < want.size(); ++k) {
      ASSERT_EQ((*got)[k].numel(), want[k].numel());
      const std::string bad = compare((*got)[k], want[k], c.tolerance);
      EXPECT_TRUE(bad.empty()) << "output " << k << ": " << bad;
    }
    ++ran;
  }
  EXPECT_GT(ran, 0) << "no case of " << op_name(op) << " ran on " << backend;
}

// Every reject case on `backend`: InvalidArgument naming what is wrong.
void run_rejects(const std::string& backend) {
  Result<Backend*> be = backend_named(backend);
  if (!be.ok()) {
    if (be.status().code() != StatusCode::kUnsupported) FAIL() << be.status().to_string();
    GTEST_SKIP() << backend << " has no device here: " << be.status().message();
  }
  for (const RejectCase& r : all_reject_cases()) {
    SCOPED_TRACE(r.name);
    if (!(*be)->supports(r.op).ok()) continue;
    const Status s = r.call(**be);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
    EXPECT_NE(s.message().find(r.must_mention), std::string::npos) << s.message();
  }
}

class OpTest : public ::testing::Test {
 public:
  OpTest(std::string backend, Op op) : backend_(std::move(backend)), op_(op) {}
  void TestBody() override {
    if (rejects_) {
      run_rejects(backend_);
    } else {
      run_op(backend_, op_);
    }
  }
  static OpTest* rejects(std::string backend) {
    auto* t = new OpTest(std::move(backend), Op::kAdd);
    t->rejects_ = true;
    return t;
  }

 private:
  std::string backend_;
  Op op_;
  bool rejects_ = false;
};

void register_all() {
  std::vector<Op> ops;
  for (const OpCase& c : cases()) {
    bool seen = false;
    for (Op o : ops) seen = seen || o == c.op;
    if (!seen) ops.push_back(c.op);
  }
  for (const char* backend : {"cpu", "opencl", "vulkan"}) {
    const std::string suite = std::string("BackendOps_") + backend;
    for (Op op : ops) {
      ::testing::RegisterTest(suite.c_str(), std::string(op_name(op)).c_str(), nullptr, nullptr, __FILE__, __LINE__,
                              [backend, op]() -> ::testing::Test* { return new OpTest(backend, op); });
    }
    ::testing::RegisterTest(suite.c_str(), "rejects_bad_arguments", nullptr, nullptr, __FILE__, __LINE__,
                            [backend]() -> ::testing::Test* { return OpTest::rejects(backend); });
  }
}

}  // namespace
}  // namespace am::kernels::testing

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  setenv(am::kernels::kResidencyChecksEnv, "1", 0);
  ::testing::AddGlobalTestEnvironment(new am::kernels::testing::ReleaseBackends);
  am::kernels::testing::register_all();
  return RUN_ALL_TESTS();
}
