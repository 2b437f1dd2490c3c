// Shared measurement helpers for the benchmarks in bench/.
//
// Contract:
//   - last_level_cache_bytes(): the size of this CPU's last-level cache (sysfs, then sysconf,
//     then kFallbackLlcBytes when neither answers).
//   - streaming_buffer_bytes(): max(kMinReadBufferBytes, kLlcMultiple x LLC): a working set no
//     cache holds. Benchmarks that stream weights (GEMV, decode) use at least this many bytes so
//     that they and the bandwidth baseline see the same memory system.
//   - StreamingReader: a STREAM-like read kernel. Every thread of `pool` sums its own contiguous
//     slice of one buffer of streaming_buffer_bytes(), first touched by the same threads. Two
//     loops are measured: loads alone (the hardware prefetchers' rate) and loads with software
//     prefetch kReadPrefetchBytes ahead (what a kernel that prefetches can reach; on these VMs
//     about 10-20% more). Figures are the best pass of the faster loop (STREAM's convention:
//     the bound a kernel is judged against is the highest rate seen), its median, and which
//     loop it was, in bytes per second. The constructor allocates (std::bad_alloc on failure);
//     not thread-safe against other users of `pool`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "bench/process_stats.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/formats/weight_format.h"
#include "kernels/thread_pool.h"

namespace am::bench {

inline constexpr std::size_t kMinReadBufferBytes = std::size_t{512} << 20;  // 512 MiB
inline constexpr std::size_t kLlcMultiple = 8;
inline constexpr std::size_t kFallbackLlcBytes = std::size_t{32} << 20;
inline constexpr int kMinBandwidthPasses = 5;
inline constexpr std::size_t kReadPrefetchBytes = 2048;

std::size_t last_level_cache_bytes();
// cpu_model_name() is declared in bench/process_stats.h (shared with the whole-system benches).
std::size_t streaming_buffer_bytes();

struct ReadBandwidth {
  double best_bytes_per_second = 0.0;
  double median_bytes_per_second = 0.0;
  std::size_t buffer_bytes = 0;
  int threads = 0;
  int passes = 0;                      // of the reported loop
  const char* loop = "";               // "loads" or "loads+prefetch"
  double loads_only_best_bytes_per_second = 0.0;
};

// On a shared host the memory bandwidth left to this VM moves by 2x within a minute (measured:
// 34 to 80 GB/s), so a streaming kernel is only comparable with read passes taken alternately
// with its own runs: call round() between them.
//   measure(): reset(), then rounds (a pass of each loop) until both min_time_s and
//              kMinBandwidthPasses are reached; returns their summary.
//   round():   one pass of each loop; returns the summary of all rounds since the last reset().
class StreamingReader {
 public:
  explicit StreamingReader(kernels::ThreadPool& pool);  // allocates and first-touches the buffer
  ReadBandwidth measure(double min_time_s);
  ReadBandwidth round();
  ReadBandwidth summary() const;
  void reset() { seconds_[0].clear(); seconds_[1].clear(); }
  std::size_t bytes() const { return bytes_; }

 private:
  struct FreeDeleter {
    void operator()(uint64_t* p) const { std::free(p); }
  };
  double pass_seconds(bool prefetch);

  kernels::ThreadPool& pool_;
  std::size_t bytes_;
  std::unique_ptr<uint64_t, FreeDeleter> buf_;
  std::vector<uint64_t> sums_;
  std::vector<double> seconds_[2];  // loads, loads+prefetch
  uint64_t sink_ = 0;
};

// A read in the shape of a decode step: one token's weight products, in order, each one a
// parallel_for over `tasks_per_product` contiguous slices (as the matmul driver hands a
// product's tiles to the pool), each slice summed with software prefetch kReadPrefetchBytes
// ahead, as StreamingReader's faster loop. No arithmetic, so it says what memory gives a
// token's many short products (a TinyLlama layer's are 0.3-6.5 MiB) with their hand-offs and
// joins: the most a decode's kernels can reach on this host, beside the long read's bound.
// Products are laid out one after another in one buffer, each 64-byte aligned (std::bad_alloc
// when it cannot be allocated); the buffer is first touched by the pool's threads.
class ProductReader {
 public:
  ProductReader(kernels::ThreadPool& pool, const std::vector<std::size_t>& product_bytes, int64_t tasks_per_product);
  // One token: every product once. Returns the seconds the pass took.
  double pass_seconds();
  std::size_t bytes() const { return bytes_; }

 private:
  struct FreeDeleter {
    void operator()(uint64_t* p) const { std::free(p); }
  };
  kernels::ThreadPool& pool_;
  std::vector<std::size_t> offsets_;  // in words: product i is [offsets_[i], offsets_[i + 1])
  int64_t tasks_;
  std::size_t bytes_ = 0;
  std::unique_ptr<uint64_t, FreeDeleter> buf_;
  std::vector<uint64_t> sums_;
  uint64_t sink_ = 0;
};

// Arithmetic peaks of all of `pool`'s threads, measured with register-only loops of
// kPeakChains independent dependency chains per thread (enough to cover the latency of every
// unit these CPUs have): fp32 FMA (2 flops per lane), the int8 dot product (2 ops per byte
// pair: VPDPBUSD with AVX-512 VNNI, else VPMADDUBSW+VPMADDWD on AVX2 counted the same way) and
// the bf16 dot product (VDPBF16PS, 2 flops per pair; 0 where the CPU lacks it). Zero where the
// ISA is missing altogether (the scalar path reports 0 for all). Best of repeated runs.
// These are what a GEMM's fraction of peak is judged against: LIMITS.md's table is from one
// machine, and a different CPU model (Zen 4 vs Zen 5 here) halves or doubles them.
inline constexpr int kPeakChains = 12;
struct ComputePeaks {
  double fp32_flops = 0.0;
  double int8_ops = 0.0;
  double bf16_flops = 0.0;
  const char* isa = "";
};
// `path`: the kernel path whose instructions set the peak: avx2 measures the AVX2 loops even on
// a CPU with AVX-512 (a forced-avx2 run is then judged against what AVX2 can do), avx512 the
// AVX-512 ones; scalar and neon report 0.
ComputePeaks measure_compute_peaks(kernels::ThreadPool& pool, double min_time_s, kernels::KernelPath path);

// The most the AVX-512 interleaved tile kernel (kernels/formats/dot_interleaved_avx512.cpp,
// tile_kernel4: 6 rows of X x 4 groups) can do on this core whatever its memory does: its
// instruction mix per block of 32 values with every operand in registers or L1 — 96 VPDPBUSD
// into 12 int32 accumulators (8 deep) with the activation bytes broadcast from L1, the weights'
// inserts and decode (q8_0: the xor of each 64-byte pair of chunks; q4_0/q4_1: and, shift, and
// per nibble pair) and the per-block scaling of each accumulator (convert, weight scale x
// activation scale, FMA; q4_1 one FMA more for its min). The weights' own loads are left out.
// Counted as the int8 peak counts (2 ops per byte
// pair of VPDPBUSD only): the share of the int8 peak left once the rest of the mix has taken its
// pipes. 0 where the CPU lacks AVX-512 VNNI or `format` has no such kernel (q8_0, q4_0, q4_1).
// `scaled` false leaves the per-block scaling out (q8_0 and q4_0), which says what it costs.
double measure_tile_mix_ceiling(kernels::ThreadPool& pool, double min_time_s, kernels::WeightFormat format,
                                bool scaled = true);

}  // namespace am::bench
