// Device-resident throughput of the Vulkan backend's shaders on one device, against ceilings
// measured by the same backend in the same run:
//   - copy bandwidth: device-to-device, bytes read + written per second, the better of a copy
//     compute shader (copy_vec4.comp) and vkCmdCopyBuffer;
//   - FMA rate: fp32 (fma_f32.comp: long dependent-FMA chains over many invocations) and f16
//     (fma_f16.comp) where the device has shaderFloat16;
//   - GEMV (M = 1) q4_0, q8_0, f16, f32 at N x K = 14336 x 4096 and 4096 x 14336: GB/s of
//     weight bytes read (as stored on the device) and % of the copy bandwidth;
//   - GEMM (tiled, shared memory) f16 and f32 at M = 512, K = 4096, N = 4096: GFLOPS and % of
//     the fp32 FMA rate (the GEMM accumulates in fp32 whatever the weight format).
// Everything runs on buffers already on the device (kernels/vulkan/vk_ops.h); no host copies
// are timed. Each figure is the median of kReps timed batches after untimed warm-up batches that
// keep the device busy for 0.2 s (so its clocks are up), a batch being several back-to-back
// dispatches; the clock is the queue's timestamps when it has them,
// else the wall clock around the fence wait (printed). GEMV batches run without barriers (the
// dispatches are independent: distinct outputs, activations quantized once beforehand) so they
// measure the shader's throughput, not the gaps between dispatches.
//
//   build/bench/bench_vulkan_ops [--json FILE] [--quick] [--only gemv|gemm]
//                                [--matvec-lanes N] [--matvec-rows 1|2|4] [--coopmat-k-step 32|64]
//                                [--serial]
// The tuning flags (lanes, rows, K step) override the built-in choices, to sweep them on a real
// device; --serial keeps a barrier after each GEMV dispatch (the lone-dispatch rate).
//
// --quick: smaller shapes (GEMV 2048 x 1024, GEMM 32 x 512 x 512) and buffers, for CI on
// lavapipe; exits 0 with a message when there is no Vulkan device. ACCELMATRIX_VULKAN_DEVICE
// picks the device (vk_device.h).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "kernels/formats/fp16.h"
#include "kernels/vulkan/vk_device.h"
#include "kernels/vulkan/vk_ops.h"
#include "kernels/vulkan/vk_weights.h"

namespace am::kernels::vulkan {
namespace {

constexpr int kReps = 5;                    // timed batches per figure (the median is reported)
constexpr double kWarmupSeconds = 0.2;      // device-busy time before a figure's timed batches
constexpr int kMaxWarmupBatches = 2000;     // ... or this many warm-up batches (tiny ones)
constexpr int kGemvBatch = 8;               // dispatches per timed GEMV batch
constexpr int kGemmBatch = 2;
constexpr int kCopyBatch = 4;
constexpr double kBytesPerGB = 1e9;
constexpr double kFlopsPerGflop = 1e9;
constexpr uint32_t kFmaGroupSize = 256;
constexpr uint32_t kFmaFlopsPerIteration = 4 * 4 * 2;  // 4 vec4 chains, 2 flops per FMA
constexpr double kFmaTargetSeconds = 0.02;  // grow the FMA workload until a batch takes this long
constexpr std::size_t kCopyBytesFull = std::size_t{512} << 20;
constexpr std::size_t kCopyBytesQuick = std::size_t{32} << 20;
// Weight bytes a full-mode GEMV batch streams at least (8 copies of the smallest matrix, 31 MiB):
// over the last-level cache of every GPU we know (H200 L2 60 MB, MI300X Infinity Cache 256 MB).

struct Row {
  std::string what;
  std::string shape;
  double seconds = 0.0;  // per operation (median)
  double value = 0.0;    // GB/s or GFLOPS
  std::string unit;
  double percent = -1.0;  // of the ceiling, -1: not applicable
  std::string note;
};

// Cheap deterministic bytes for weights (their values do not change the work a shader does).
struct SplitMix {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  float uniform() { return static_cast<float>(next() >> 40) / static_cast<float>(1u << 24) - 0.5f; }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Seconds per operation: warm-up batches (at least one, kWarmupSeconds of device time), then the
// median of kReps batches of `per_batch` operations each recorded by `record`.
Result<double> time_batches(VulkanDevice& dev, int per_batch, const std::function<Status()>& record) {
  // Warm-up batches until the device has been busy for kWarmupSeconds: a GPU left idle (the host
  // uploading the next weights) drops to its idle clock, and a few milliseconds of timed work
  // would be measured before it climbs back (an H200 ran the same GEMM 5x slower after the GEMV
  // section than on its own).
  double busy = 0.0;
  for (int warm = 0; warm < kMaxWarmupBatches && busy < kWarmupSeconds; ++warm) {
    for (int i = 0; i < per_batch; ++i) AM_RETURN_IF_ERROR(record());
    AM_ASSIGN_OR_RETURN(double s, dev.submit_timed());
    busy += s;
  }
  std::vector<double> t;
  for (int rep = 1; rep <= kReps; ++rep) {
    for (int i = 0; i < per_batch; ++i) AM_RETURN_IF_ERROR(record());
    AM_ASSIGN_OR_RETURN(double s, dev.submit_timed());
    t.push_back(s / per_batch);
  }
  return median(t);
}

// A weight of `kind` with n rows of k in the device layout, from deterministic bytes: block
// scales are small finite halves so no NaN/Inf reaches the sums.
PackedWeight synthetic_weight(WeightKind kind, int64_t n, int64_t k, uint64_t seed) {
  SplitMix rng{seed};
  PackedWeight w;
  w.kind = kind;
  w.rows = n;
  w.cols = k;
  if (is_block_kind(kind)) {
    const int64_t blocks = (k + kBlockValues - 1) / kBlockValues;
    w.padded = blocks;
    const std::size_t qb = kind == WeightKind::kQ8_0 ? 32 : 16;
    w.values.resize(static_cast<std::size_t>(n * blocks) * qb);
    for (auto& b : w.values) b = static_cast<uint8_t>(rng.next());
    w.scales.resize(static_cast<std::size_t>(n * blocks));
    for (auto& h : w.scales) h = fp32_to_fp16(0.01f + 0.001f * rng.uniform());
    if (kind == WeightKind::kQ4_1) {
      w.mins.resize(w.scales.size());
      for (auto& h : w.mins) h = fp32_to_fp16(0.01f * rng.uniform());
    }
    return w;
  }
  const int64_t per_chunk = kind == WeightKind::kF32 ? 4 : 8;
  w.padded = (k + per_chunk - 1) / per_chunk * per_chunk;
  const std::size_t count = static_cast<std::size_t>(n * w.padded);
  if (kind == WeightKind::kF32) {
    w.values.resize(count * sizeof(float));
    auto* f = reinterpret_cast<float*>(w.values.data());
    for (std::size_t i = 0; i < count; ++i) f[i] = rng.uniform();
  } else {
    w.values.resize(count * sizeof(uint16_t));
    auto* h = reinterpret_cast<uint16_t*>(w.values.data());
    for (std::size_t i = 0; i < count; ++i) {
      const float v = rng.uniform();
      h[i] = kind == WeightKind::kF16 ? fp32_to_fp16(v) : static_cast<uint16_t>(std::bit_cast<uint32_t>(v) >> 16);
    }
  }
  return w;
}

Result<Buffer> random_activations(VulkanDevice& dev, int64_t count, uint64_t seed) {
  SplitMix rng{seed};
  std::vector<float> host(static_cast<std::size_t>(count));
  for (float& v : host) v = 2.0f * rng.uniform();
  AM_ASSIGN_OR_RETURN(Buffer b, dev.create_buffer(host.size() * sizeof(float)));
  AM_RETURN_IF_ERROR(dev.upload(b, host.data(), host.size() * sizeof(float)));
  return b;
}

std::string shape_text(int64_t a, int64_t b) { return std::to_string(a) + "x" + std::to_string(b); }

class Bench {
 public:
  Bench(VulkanDevice& dev, bool quick) : dev_(dev), ops_(dev), quick_(quick) {}
  void set_tuning(const DeviceOpsTuning& t) { ops_.set_tuning(t); }
  void set_serial(bool on) { serial_ = on; }

  Status copy_bandwidth() {
    const std::size_t bytes =
        std::min<std::size_t>(quick_ ? kCopyBytesQuick : kCopyBytesFull, dev_.info().max_storage_buffer_range) / 16 * 16;
    AM_ASSIGN_OR_RETURN(Buffer src, dev_.create_buffer(bytes));
    AM_ASSIGN_OR_RETURN(Buffer dst, dev_.create_buffer(bytes));
    std::vector<uint8_t> fill(bytes, 0x5A);
    AM_RETURN_IF_ERROR(dev_.upload(src, fill.data(), bytes));
    const double moved = 2.0 * static_cast<double>(bytes);  // read + written
    AM_ASSIGN_OR_RETURN(double shader_s, time_batches(dev_, kCopyBatch, [&] { return ops_.copy_vec4(src, dst, bytes); }));
    AM_ASSIGN_OR_RETURN(double cmd_s, time_batches(dev_, kCopyBatch, [&] { return dev_.copy(src.get(), dst.get(), bytes); }));
    const std::string shape = std::to_string(bytes >> 20) + " MiB";
    add({"copy (shader)", shape, shader_s, moved / shader_s / kBytesPerGB, "GB/s", -1, ""});
    add({"copy (vkCmdCopyBuffer)", shape, cmd_s, moved / cmd_s / kBytesPerGB, "GB/s", -1, ""});
    copy_gbs_ = std::max(moved / shader_s, moved / cmd_s) / kBytesPerGB;
    return Status::Ok();
  }

  Status fma_rate(bool f16) {
    const char* shader = f16 ? "fma_f16" : "fma_f32";
    AM_ASSIGN_OR_RETURN(const Pipeline* p, dev_.pipeline(shader, 1));
    uint32_t groups = quick_ ? 64 : 1024;
    uint32_t iterations = 256;
    AM_ASSIGN_OR_RETURN(Buffer out, dev_.create_buffer(static_cast<std::size_t>(groups) * 64 * kFmaGroupSize * 4));
    struct {
      uint32_t iterations;
      float seed;
      uint32_t count;  // fma_f32's bound (fma_f16 has none)
    } push{iterations, 1.0f, groups * kFmaGroupSize};
    // Grow the workload until one dispatch takes long enough to time well (after one untimed
    // dispatch: some drivers, lavapipe among them, compile the shader at its first use).
    AM_RETURN_IF_ERROR(dev_.dispatch(*p, {out.get()}, &push, sizeof push, groups));
    AM_RETURN_IF_ERROR(dev_.submit());
    double s = 0.0;
    for (;;) {
      push.iterations = iterations;
      push.count = groups * kFmaGroupSize;
      AM_RETURN_IF_ERROR(dev_.dispatch(*p, {out.get()}, &push, sizeof push, groups));
      AM_ASSIGN_OR_RETURN(s, dev_.submit_timed());
      if (s >= kFmaTargetSeconds || iterations >= (1u << 20)) break;
      if (groups < (quick_ ? 64u : 1024u) * 64u && groups * 2u <= dev_.max_groups_x()) {
        groups *= 2;
      } else {
        iterations *= 2;
      }
    }
    AM_ASSIGN_OR_RETURN(double t, time_batches(dev_, 1, [&] {
      return dev_.dispatch(*p, {out.get()}, &push, sizeof push, groups);
    }));
    const double flops = static_cast<double>(groups) * kFmaGroupSize * iterations * kFmaFlopsPerIteration;
    const double gflops = flops / t / kFlopsPerGflop;
    add({f16 ? "FMA f16" : "FMA f32", std::to_string(groups) + " groups x " + std::to_string(iterations) + " it", t,
         gflops, "GFLOPS", -1, ""});
    (f16 ? fma16_gflops_ : fma32_gflops_) = gflops;
    return Status::Ok();
  }

  Status gemv(WeightKind kind, int64_t n, int64_t k) {
    const std::string what = std::string("GEMV ") + weight_kind_name(kind);
    const std::string shape = shape_text(n, k);
    const PackedWeight packed = synthetic_weight(kind, n, k, static_cast<uint64_t>(n * 31 + k));
    Result<DeviceLinear> w = upload_linear(dev_, packed, nullptr);
    if (!w.ok()) {
      if (w.status().code() != StatusCode::kUnsupported) return w.status();
      add({what, shape, 0, 0, "GB/s", -1, "skipped: " + w.status().message()});
      return Status::Ok();
    }
    // One copy of the weight per dispatch of a batch: the dispatches run concurrently (no
    // barriers), and two reading the same matrix at once share its DRAM stream through L2 (an
    // H200 showed 148% of its copy bandwidth with 3 copies in turn); one 31 MiB matrix read 8
    // times would also be served from its 60 MB L2.
    std::vector<DeviceLinear> copies;
    const std::size_t wanted = quick_ ? 1 : kGemvBatch;
    for (std::size_t i = 1; i < wanted; ++i) {
      // A device without room for all of them measures with as many as fit (the note says how
      // many); their reads may then share a stream, which the note's count makes visible.
      Result<DeviceLinear> c = upload_linear(dev_, packed, nullptr);
      if (!c.ok()) break;
      copies.push_back(std::move(c).value());
    }
    AM_ASSIGN_OR_RETURN(Buffer x, random_activations(dev_, k, 7));
    std::vector<Buffer> ys;
    for (int i = 0; i < kGemvBatch; ++i) {
      AM_ASSIGN_OR_RETURN(Buffer y, dev_.create_buffer(static_cast<std::size_t>(n) * sizeof(float)));
      ys.push_back(std::move(y));
    }
    const bool blocks = is_block_kind(kind);
    if (blocks) {
      AM_RETURN_IF_ERROR(ops_.quantize_activations(x, 1, k));
      AM_RETURN_IF_ERROR(dev_.submit());
    }
    int next = 0;
    // --serial keeps the barrier after each dispatch: each GEMV then runs alone, as one op of a
    // model's forward pass does (the lone-dispatch rate, not the shader's throughput).
    dev_.set_barriers(serial_);
    Result<double> t = time_batches(dev_, kGemvBatch, [&]() -> Status {
      const std::size_t i = static_cast<std::size_t>(next++ % kGemvBatch);
      const Buffer& y = ys[i];
      const DeviceLinear& wi = i % (copies.size() + 1) == 0 ? *w : copies[i % (copies.size() + 1) - 1];
      return blocks ? ops_.block_matmul(wi, 1, y) : ops_.linear_path(wi, x, 1, y, false);
    });
    dev_.set_barriers(true);
    AM_RETURN_IF_ERROR(t.status());
    const double gbs = static_cast<double>(w->weight_bytes) / *t / kBytesPerGB;
    add({what, shape, *t, gbs, "GB/s", copy_gbs_ > 0 ? 100.0 * gbs / copy_gbs_ : -1,
         std::to_string(w->weight_bytes >> 20) + " MiB of weights" +
             (copies.empty() ? std::string() : ", " + std::to_string(copies.size() + 1) + " copies, one per dispatch") +
             (serial_ ? ", serial" : "")});
    return Status::Ok();
  }

  Status gemm(WeightKind kind, int64_t m, int64_t n, int64_t k) {
    const std::string what = std::string("GEMM ") + weight_kind_name(kind);
    const std::string shape = "M" + std::to_string(m) + " N" + std::to_string(n) + " K" + std::to_string(k);
    const PackedWeight packed = synthetic_weight(kind, n, k, static_cast<uint64_t>(m + n + k));
    Result<DeviceLinear> w = upload_linear(dev_, packed, nullptr);
    if (!w.ok()) {
      if (w.status().code() != StatusCode::kUnsupported) return w.status();
      add({what, shape, 0, 0, "GFLOPS", -1, "skipped: " + w.status().message()});
      return Status::Ok();
    }
    AM_ASSIGN_OR_RETURN(Buffer x, random_activations(dev_, m * k, 11));
    AM_ASSIGN_OR_RETURN(Buffer y, dev_.create_buffer(static_cast<std::size_t>(m * n) * sizeof(float)));
    AM_ASSIGN_OR_RETURN(double t, time_batches(dev_, kGemmBatch, [&] { return ops_.linear_path(*w, x, m, y, true); }));
    const double gflops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) / t / kFlopsPerGflop;
    add({what, shape, t, gflops, "GFLOPS", fma32_gflops_ > 0 ? 100.0 * gflops / fma32_gflops_ : -1,
         "% of the fp32 FMA rate"});
    return Status::Ok();
  }

  void print() const {
    std::printf("| %-24s | %-26s | %12s | %12s | %9s | %s\n", "measure", "shape", "time (ms)", "rate", "% ceiling",
                "note");
    std::printf("|%s|%s|%s|%s|%s|------\n", std::string(26, '-').c_str(), std::string(28, '-').c_str(),
                std::string(14, '-').c_str(), std::string(14, '-').c_str(), std::string(11, '-').c_str());
    for (const Row& r : rows_) {
      char rate[48] = "";
      char pct[16] = "";
      char ms[24] = "";
      if (r.seconds > 0) {
        std::snprintf(ms, sizeof ms, "%.4f", r.seconds * 1e3);
        std::snprintf(rate, sizeof rate, "%.1f %s", r.value, r.unit.c_str());
      }
      if (r.percent >= 0) std::snprintf(pct, sizeof pct, "%.1f%%", r.percent);
      std::printf("| %-24s | %-26s | %12s | %12s | %9s | %s\n", r.what.c_str(), r.shape.c_str(), ms, rate, pct,
                  r.note.c_str());
    }
  }

  nlohmann::json to_json() const {
    nlohmann::json rows = nlohmann::json::array();
    for (const Row& r : rows_) {
      nlohmann::json j = {{"measure", r.what}, {"shape", r.shape}, {"seconds", r.seconds}, {"unit", r.unit},
                          {"value", r.value}, {"note", r.note}};
      if (r.percent >= 0) j["percent_of_ceiling"] = r.percent;
      rows.push_back(std::move(j));
    }
    return {{"copy_gbs", copy_gbs_}, {"fma_f32_gflops", fma32_gflops_}, {"fma_f16_gflops", fma16_gflops_},
            {"results", rows}};
  }

 private:
  void add(Row r) {
    rows_.push_back(std::move(r));
    std::fflush(stdout);
  }

  VulkanDevice& dev_;
  DeviceOps ops_;
  bool quick_;
  bool serial_ = false;
  double copy_gbs_ = 0.0;
  double fma32_gflops_ = 0.0;
  double fma16_gflops_ = 0.0;
  std::vector<Row> rows_;
};

struct Sweep {
  std::string only;  // "", "gemv" or "gemm"
  DeviceOpsTuning tuning;
  bool serial = false;  // GEMV dispatches with a barrier after each
};

int run(const std::string& json_path, bool quick, const Sweep& sweep) {
  Result<VulkanDeviceInfo> info = select_vulkan_device();
  if (!info.ok()) {
    std::printf("bench_vulkan_ops: %s; nothing to measure\n", info.status().message().c_str());
    return info.status().code() == StatusCode::kUnsupported ? 0 : 1;
  }
  Result<std::unique_ptr<VulkanDevice>> dev = VulkanDevice::create(*info);
  if (!dev.ok()) {
    std::fprintf(stderr, "bench_vulkan_ops: %s\n", dev.status().to_string().c_str());
    return 1;
  }
  const VulkanDeviceInfo& d = (*dev)->info();
  std::printf("device: %s\ndriver: %s\nclock: %s\nmode: %s\ncooperative matrices (f16 GEMM): %s\ninteger dot products: %s\n\n",
              d.label().c_str(),
              d.driver.c_str(),
              (*dev)->timing() == Timing::kTimestamps ? "queue timestamps" : "wall clock around fence waits",
              quick ? "quick" : "full", (*dev)->coopmat_f16() ? "on" : (d.coopmat_f16 ? "off (portable)" : "not on this device"),
              (*dev)->int_dot() ? "on (gemv q8_0/q4_0/q4_1 use OpSDot)"
                                : (d.int_dot ? "off (" + std::string(kVulkanPortableEnv) + ")" : "not on this device").c_str());
  Bench bench(**dev, quick);
  bench.set_tuning(sweep.tuning);
  bench.set_serial(sweep.serial);
  std::printf("matvec lanes: %s, float matvec rows: %u, cooperative-matrix K step: %u\n\n",
              sweep.tuning.matvec_lanes == 0 ? "built-in" : std::to_string(sweep.tuning.matvec_lanes).c_str(),
              sweep.tuning.matvec_rows, sweep.tuning.coopmat_k_step);
  auto check = [](Status s) {
    if (!s.ok()) {
      std::fprintf(stderr, "bench_vulkan_ops: %s\n", s.to_string().c_str());
      std::exit(1);
    }
  };
  check(bench.copy_bandwidth());
  check(bench.fma_rate(false));
  if (d.fp16) check(bench.fma_rate(true));
  const std::vector<std::pair<int64_t, int64_t>> gemv_shapes =
      quick ? std::vector<std::pair<int64_t, int64_t>>{{2048, 1024}}
            : std::vector<std::pair<int64_t, int64_t>>{{14336, 4096}, {4096, 14336}};
  for (const auto& [n, k] : sweep.only == "gemm" ? decltype(gemv_shapes){} : gemv_shapes) {
    for (WeightKind kind : {WeightKind::kQ4_0, WeightKind::kQ8_0, WeightKind::kF16, WeightKind::kF32}) {
      check(bench.gemv(kind, n, k));
    }
  }
  const int64_t gm = quick ? 32 : 512;
  const int64_t gk = quick ? 512 : 4096;
  if (sweep.only != "gemv") {
    for (WeightKind kind : {WeightKind::kF16, WeightKind::kF32}) check(bench.gemm(kind, gm, gk, gk));
  }
  bench.print();
  if (!json_path.empty()) {
    nlohmann::json doc = bench.to_json();
    doc["device"] = {{"name", d.name}, {"driver", d.driver}, {"type", d.type_name()}, {"software", d.software},
                     {"fp16", d.fp16}, {"int_dot", (*dev)->int_dot()}, {"coopmat_f16", (*dev)->coopmat_f16()}, {"subgroup_size", d.subgroup_size}};
    doc["clock"] = (*dev)->timing() == Timing::kTimestamps ? "timestamps" : "wall";
    doc["quick"] = quick;
    // What the figures were taken with, so that a sweep's files tell themselves apart.
    doc["settings"] = {{"only", sweep.only.empty() ? "all" : sweep.only},
                       {"matvec_lanes", sweep.tuning.matvec_lanes == 0 ? nlohmann::json("built-in")
                                                                        : nlohmann::json(sweep.tuning.matvec_lanes)},
                       {"matvec_rows", sweep.tuning.matvec_rows},
                       {"coopmat_k_step", sweep.tuning.coopmat_k_step},
                       {"serial_gemv", sweep.serial},
                       {"portable_shaders", portable_shaders_forced()}};
    std::ofstream out(json_path);
    out << doc.dump(2) << "\n";
    if (!out) {
      std::fprintf(stderr, "bench_vulkan_ops: cannot write %s\n", json_path.c_str());
      return 1;
    }
  }
  return 0;
}

}  // namespace
}  // namespace am::kernels::vulkan

int main(int argc, char** argv) {
  CLI::App app{"Device-resident throughput of the Vulkan shaders vs the copy bandwidth and FMA rate measured in the same run"};
  std::string json;
  bool quick = false;
  app.add_option("--json", json, "write the results as JSON to this file");
  app.add_flag("--quick", quick, "smaller shapes and buffers (CI on lavapipe)");
  am::kernels::vulkan::Sweep sweep;
  app.add_option("--only", sweep.only, "measure only the ceilings and these: gemv or gemm")
      ->check(CLI::IsMember({"gemv", "gemm"}));
  app.add_option("--matvec-lanes", sweep.tuning.matvec_lanes,
                 "invocations per matrix-vector row (tuning; default: by row length, 32 to 128)")
      ->check(CLI::IsMember({1u, 2u, 4u, 8u, 16u, 32u, 64u, 128u}));
  app.add_option("--matvec-rows", sweep.tuning.matvec_rows,
                 "float-weight matrix-vector rows per invocation set (tuning; default " +
                     std::to_string(am::kernels::vulkan::kMatvecRows) + ")")
      ->check(CLI::IsMember({1u, 2u, 4u}));
  app.add_option("--coopmat-k-step", sweep.tuning.coopmat_k_step,
                 "K step of the cooperative-matrix GEMM (tuning; default " +
                     std::to_string(am::kernels::vulkan::kCoopmatKStep) + "; unused without cooperative matrices)")
      ->check(CLI::IsMember({32u, 64u}));
  app.add_flag("--serial", sweep.serial,
               "GEMV dispatches with a barrier after each (each runs alone, as in a forward pass)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Usage errors exit 2, like accelmatrix's own commands (help and version exit 0).
    return app.exit(e) == 0 ? 0 : 2;
  }
  return am::kernels::vulkan::run(json, quick, sweep);
}
