#include "bench/bench_util.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <new>
#include <string>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "common/clock.h"
#include "kernels/cpu/cpu_features.h"

namespace am::bench {
namespace {

constexpr std::size_t kCacheLineBytes = 64;

#if defined(__x86_64__)
// 512-bit loads into four accumulators: one core issues enough loads to reach its share of the
// memory bandwidth, so the measured figure is the memory's, not this loop's. kPrefetch > 0 adds
// a software prefetch of each line kPrefetch bytes ahead.
template <std::size_t kPrefetch>
__attribute__((target("avx512f"))) uint64_t sum_words_avx512(const uint64_t* p, std::size_t n) {
  __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    if constexpr (kPrefetch > 0) {
      const char* ahead = reinterpret_cast<const char*>(p + i) + kPrefetch;
      for (int line = 0; line < 4; ++line) _mm_prefetch(ahead + 64 * line, _MM_HINT_T0);
    }
    a0 = _mm512_add_epi64(a0, _mm512_load_si512(p + i));
    a1 = _mm512_add_epi64(a1, _mm512_load_si512(p + i + 8));
    a2 = _mm512_add_epi64(a2, _mm512_load_si512(p + i + 16));
    a3 = _mm512_add_epi64(a3, _mm512_load_si512(p + i + 24));
  }
  uint64_t s = static_cast<uint64_t>(_mm512_reduce_add_epi64(
      _mm512_add_epi64(_mm512_add_epi64(a0, a1), _mm512_add_epi64(a2, a3))));
  for (; i < n; ++i) s += p[i];
  return s;
}
#endif

// Four independent accumulators keep the adds off the critical path, so loads are the limit.
// `p` is 64-byte aligned (the AVX-512 path uses aligned loads).
template <std::size_t kPrefetch>
uint64_t sum_words(const uint64_t* p, std::size_t n) {
#if defined(__x86_64__)
  if (kernels::cpu_features().avx512f) return sum_words_avx512<kPrefetch>(p, n);
#endif
  uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    if constexpr (kPrefetch > 0) {
      if (i % 8 == 0) __builtin_prefetch(reinterpret_cast<const char*>(p + i) + kPrefetch);
    }
    s0 += p[i];
    s1 += p[i + 1];
    s2 += p[i + 2];
    s3 += p[i + 3];
  }
  for (; i < n; ++i) s0 += p[i];
  return s0 + s1 + s2 + s3;
}

#if defined(__x86_64__)
constexpr int64_t kPeakIterations = 2'000'000;

// Each loop runs kPeakChains independent accumulators for kPeakIterations steps; the empty asm
// keeps the operands in registers and the loop from being folded.
__attribute__((target("avx512f"))) float fma_chains_avx512() {
  __m512 a[kPeakChains];
  for (int j = 0; j < kPeakChains; ++j) a[j] = _mm512_set1_ps(static_cast<float>(j));
  __m512 x = _mm512_set1_ps(0.999f), y = _mm512_set1_ps(1e-3f);
  for (int64_t i = 0; i < kPeakIterations; ++i) {
    #pragma GCC unroll 12
    for (int j = 0; j < kPeakChains; ++j) a[j] = _mm512_fmadd_ps(a[j], x, y);
    __asm__ volatile("" : "+v"(x), "+v"(y));
  }
  float s = 0.0f;
  for (int j = 0; j < kPeakChains; ++j) s += _mm512_reduce_add_ps(a[j]);
  return s;
}

__attribute__((target("avx512f,avx512bw,avx512vnni"))) float vnni_chains_avx512() {
  __m512i a[kPeakChains];
  for (int j = 0; j < kPeakChains; ++j) a[j] = _mm512_set1_epi32(j);
  __m512i x = _mm512_set1_epi8(3), y = _mm512_set1_epi8(-2);
  for (int64_t i = 0; i < kPeakIterations; ++i) {
    #pragma GCC unroll 12
    for (int j = 0; j < kPeakChains; ++j) a[j] = _mm512_dpbusd_epi32(a[j], x, y);
    __asm__ volatile("" : "+v"(x), "+v"(y));
  }
  int64_t s = 0;
  for (int j = 0; j < kPeakChains; ++j) s += _mm512_reduce_add_epi32(a[j]);
  return static_cast<float>(s);
}

__attribute__((target("avx512f,avx512bf16"))) float bf16_chains_avx512() {
  __m512 a[kPeakChains];
  for (int j = 0; j < kPeakChains; ++j) a[j] = _mm512_set1_ps(static_cast<float>(j));
  __m512bh x = (__m512bh)_mm512_set1_epi16(0x3F80), y = (__m512bh)_mm512_set1_epi16(0x3A83);
  for (int64_t i = 0; i < kPeakIterations; ++i) {
    #pragma GCC unroll 12
    for (int j = 0; j < kPeakChains; ++j) a[j] = _mm512_dpbf16_ps(a[j], x, y);
    __asm__ volatile("" : "+v"(x), "+v"(y));
  }
  float s = 0.0f;
  for (int j = 0; j < kPeakChains; ++j) s += _mm512_reduce_add_ps(a[j]);
  return s;
}

__attribute__((target("avx2,fma"))) float fma_chains_avx2() {
  __m256 a[kPeakChains];
  for (int j = 0; j < kPeakChains; ++j) a[j] = _mm256_set1_ps(static_cast<float>(j));
  __m256 x = _mm256_set1_ps(0.999f), y = _mm256_set1_ps(1e-3f);
  for (int64_t i = 0; i < kPeakIterations; ++i) {
    #pragma GCC unroll 12
    for (int j = 0; j < kPeakChains; ++j) a[j] = _mm256_fmadd_ps(a[j], x, y);
    __asm__ volatile("" : "+x"(x), "+x"(y));
  }
  float s = 0.0f;
  alignas(32) float lanes[8];
  for (int j = 0; j < kPeakChains; ++j) {
    _mm256_store_ps(lanes, a[j]);
    for (float v : lanes) s += v;
  }
  return s;
}

// tile_kernel4's mix for one block per iteration (see measure_tile_mix_ceiling), as the kernel
// compiles: 96 vpdpbusd, the activation groups, corrections and scales broadcast from L1, the
// weights' inserts and decode, and the scaling. The empty asm statements stand for the weight
// loads: the weights and scales are "new" each block, so nothing is hoisted out of the loop.
constexpr int kMixRows = 6;      // rows of X per call (kPackedTileRows)
constexpr int kMixHalves = 2;    // two zmm of 16 outputs per row: 4 groups of 8
constexpr int kMixDotsPerBlock = 96;
template <bool kQ8, bool kMin, bool kScale>
__attribute__((target("avx512f,avx512bw,avx512vnni"))) float tile_mix_avx512() {
  __m512 acc[kMixRows][kMixHalves];
  #pragma GCC unroll 12
  for (auto& row : acc) row[0] = row[1] = _mm512_setzero_ps();
  __m512i raw[kMixHalves] = {_mm512_set1_epi32(0x5A3C1F07), _mm512_set1_epi32(0x1B2D3E4F)};
  const __m512i mask = _mm512_set1_epi8(0x0F), bias = _mm512_set1_epi8(static_cast<char>(0x80));
  __m512 dw = _mm512_set1_ps(1e-3f), dm = _mm512_set1_ps(-2e-3f);
  // What the kernel broadcasts from L1 per block: each row of X's correction (the int32 sums'
  // start), its 4-byte activation groups per chunk, its scale and its min sum.
  alignas(64) int32_t corr[kMixRows];
  alignas(64) int32_t xq[8][kMixRows];
  alignas(64) float xd[kMixRows];
  alignas(64) float xs[kMixRows];
  for (int m = 0; m < kMixRows; ++m) {
    corr[m] = -128 * (m + 1);
    for (int c = 0; c < 8; ++c) xq[c][m] = 0x01FF02FE + 0x01010101 * (c * kMixRows + m);
    xd[m] = 0.5f / static_cast<float>(m + 1);
    xs[m] = 1.5f + 0.25f * static_cast<float>(m);
  }
  for (int64_t i = 0; i < kPeakIterations; ++i) {
    // A new block: the compiler may assume nothing of the broadcast rows or the weights.
    __asm__ volatile("" : "+m"(corr), "+m"(xq), "+m"(xd), "+m"(xs), "+v"(raw[0]), "+v"(raw[1]), "+v"(dw), "+v"(dm));
    __m512i isum[kMixRows][kMixHalves];
    #pragma GCC unroll 12
    for (int m = 0; m < kMixRows; ++m) isum[m][0] = isum[m][1] = _mm512_set1_epi32(corr[m]);
    #pragma GCC unroll 12
    for (int c = 0; c < (kQ8 ? 8 : 4); ++c) {
      __asm__ volatile("" : "+v"(raw[0]), "+v"(raw[1]));
      __m512i lo[kMixHalves], hi[kMixHalves];
      #pragma GCC unroll 12
      for (int h = 0; h < kMixHalves; ++h) {
        // The kernel puts two groups' 32-byte pieces into one register (pair256): an insert.
        raw[h] = _mm512_inserti64x4(raw[h], _mm512_castsi512_si256(raw[1 - h]), 1);
        if constexpr (kQ8) {
          lo[h] = _mm512_xor_si512(raw[h], bias);
        } else {
          lo[h] = _mm512_and_si512(raw[h], mask);
          hi[h] = _mm512_and_si512(_mm512_srli_epi16(raw[h], 4), mask);
        }
      }
      #pragma GCC unroll 12
      for (int m = 0; m < kMixRows; ++m) {
        const __m512i xl = _mm512_set1_epi32(xq[c][m]);
        #pragma GCC unroll 12
        for (int h = 0; h < kMixHalves; ++h) isum[m][h] = _mm512_dpbusd_epi32(isum[m][h], lo[h], xl);
        if constexpr (!kQ8) {
          const __m512i xh = _mm512_set1_epi32(xq[c + 4][m]);
          #pragma GCC unroll 12
          for (int h = 0; h < kMixHalves; ++h) isum[m][h] = _mm512_dpbusd_epi32(isum[m][h], hi[h], xh);
        }
      }
    }
    if constexpr (kScale) {
      #pragma GCC unroll 12
      for (int m = 0; m < kMixRows; ++m) {
        #pragma GCC unroll 12
        for (int h = 0; h < kMixHalves; ++h) {
          acc[m][h] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[m][h]), _mm512_mul_ps(dw, _mm512_set1_ps(xd[m])),
                                      acc[m][h]);
          if constexpr (kMin) acc[m][h] = _mm512_fmadd_ps(dm, _mm512_set1_ps(xs[m]), acc[m][h]);
        }
      }
    } else {
      // Without the scaling the sums still leave the block, as integers.
      #pragma GCC unroll 12
      for (int m = 0; m < kMixRows; ++m) {
        #pragma GCC unroll 12
        for (int h = 0; h < kMixHalves; ++h) {
          acc[m][h] = _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(acc[m][h]), isum[m][h]));
        }
      }
    }
  }
  float s = 0.0f;
  #pragma GCC unroll 12
  for (auto& row : acc) s += _mm512_reduce_add_ps(row[0]) + _mm512_reduce_add_ps(row[1]);
  return s;
}

// AVX2 int8 dot: vpmaddubsw (pairs to int16) + vpmaddwd (to int32) + add per 32 byte pairs.
__attribute__((target("avx2"))) float int8_chains_avx2() {
  __m256i a[kPeakChains];
  for (int j = 0; j < kPeakChains; ++j) a[j] = _mm256_set1_epi32(j);
  __m256i x = _mm256_set1_epi8(3), y = _mm256_set1_epi8(-2), ones = _mm256_set1_epi16(1);
  for (int64_t i = 0; i < kPeakIterations; ++i) {
    #pragma GCC unroll 12
    for (int j = 0; j < kPeakChains; ++j) {
      a[j] = _mm256_add_epi32(a[j], _mm256_madd_epi16(_mm256_maddubs_epi16(x, y), ones));
    }
    __asm__ volatile("" : "+x"(x), "+x"(y));
  }
  alignas(32) int32_t lanes[8];
  int64_t s = 0;
  for (int j = 0; j < kPeakChains; ++j) {
    _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), a[j]);
    for (int32_t v : lanes) s += v;
  }
  return static_cast<float>(s);
}
#endif

// Best rate (operations per second) of `loop` run on every thread of `pool` at once.
double peak_rate(kernels::ThreadPool& pool, double min_time_s, float (*loop)(), double ops_per_iteration) {
  const int64_t parts = pool.size();
  std::vector<float> sink(static_cast<std::size_t>(parts));
  double best = 0.0, total = 0.0;
  for (int run = 0; run < kMinBandwidthPasses || total < min_time_s; ++run) {
    const auto t0 = std::chrono::steady_clock::now();
    pool.parallel_for(parts, 1, [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; ++p) sink[static_cast<std::size_t>(p)] = loop();
    });
    const double s = seconds_since(t0);
    total += s;
    if (run > 0) best = std::max(best, ops_per_iteration * kPeakIterations * parts / s);  // run 0: warm-up
  }
  volatile float keep = 0.0f;
  for (float v : sink) keep = keep + v;
  return best;
}

}  // namespace

ComputePeaks measure_compute_peaks(kernels::ThreadPool& pool, double min_time_s, kernels::KernelPath path) {
  ComputePeaks p;
#if defined(__x86_64__)
  const kernels::CpuFeatures& f = kernels::cpu_features();
  const double share = min_time_s / 3.0;
  if (path == kernels::KernelPath::kAvx512 && f.avx512f && f.avx512bw && f.avx512vnni) {
    p.isa = "avx512";
    p.fp32_flops = peak_rate(pool, share, fma_chains_avx512, kPeakChains * 16.0 * 2.0);
    p.int8_ops = peak_rate(pool, share, vnni_chains_avx512, kPeakChains * 64.0 * 2.0);
    if (f.avx512bf16) p.bf16_flops = peak_rate(pool, share, bf16_chains_avx512, kPeakChains * 32.0 * 2.0);
  } else if ((path == kernels::KernelPath::kAvx2 || path == kernels::KernelPath::kAvx512) && f.avx2 && f.fma) {
    p.isa = "avx2";
    p.fp32_flops = peak_rate(pool, share, fma_chains_avx2, kPeakChains * 8.0 * 2.0);
    p.int8_ops = peak_rate(pool, share, int8_chains_avx2, kPeakChains * 32.0 * 2.0);
  }
#else
  (void)pool;
  (void)min_time_s;
  (void)path;
#endif
  return p;
}

double measure_tile_mix_ceiling(kernels::ThreadPool& pool, double min_time_s, kernels::WeightFormat format,
                                bool scaled) {
#if defined(__x86_64__)
  const kernels::CpuFeatures& f = kernels::cpu_features();
  if (!(f.avx512f && f.avx512bw && f.avx512vnni)) return 0.0;
  constexpr double kOps = kMixDotsPerBlock * 64.0 * 2.0;
  using kernels::WeightFormat;
  switch (format) {
    case WeightFormat::kQ8_0:
      return peak_rate(pool, min_time_s, scaled ? tile_mix_avx512<true, false, true> : tile_mix_avx512<true, false, false>, kOps);
    case WeightFormat::kQ4_0:
      return peak_rate(pool, min_time_s, scaled ? tile_mix_avx512<false, false, true> : tile_mix_avx512<false, false, false>,
                       kOps);
    case WeightFormat::kQ4_1:
      return scaled ? peak_rate(pool, min_time_s, tile_mix_avx512<false, true, true>, kOps) : 0.0;
    default:
      return 0.0;
  }
#else
  (void)pool;
  (void)min_time_s;
  (void)format;
  (void)scaled;
  return 0.0;
#endif
}

std::size_t last_level_cache_bytes() {
  // sysfs first: inside virtual machines sysconf may report the host's whole socket.
  for (const char* index : {"index3", "index2"}) {
    std::ifstream f(std::string("/sys/devices/system/cpu/cpu0/cache/") + index + "/size");
    std::string text;
    if (f >> text && !text.empty()) {
      const std::size_t value = std::strtoull(text.c_str(), nullptr, 10);
      const char unit = text.back();
      const std::size_t scale = unit == 'K' ? 1024 : unit == 'M' ? 1024 * 1024 : 1;
      if (value > 0) return value * scale;
    }
  }
  const long llc = ::sysconf(_SC_LEVEL3_CACHE_SIZE);
  return llc > 0 ? static_cast<std::size_t>(llc) : kFallbackLlcBytes;
}

std::size_t streaming_buffer_bytes() {
  const std::size_t bytes = std::max(kMinReadBufferBytes, kLlcMultiple * last_level_cache_bytes());
  return bytes - bytes % kCacheLineBytes;
}

StreamingReader::StreamingReader(kernels::ThreadPool& pool)
    : pool_(pool), bytes_(streaming_buffer_bytes()), sums_(static_cast<std::size_t>(pool.size())) {
  buf_.reset(static_cast<uint64_t*>(std::aligned_alloc(kCacheLineBytes, bytes_)));
  if (!buf_) throw std::bad_alloc();
  const std::size_t words = bytes_ / sizeof(uint64_t);
  const int64_t parts = pool_.size();
  // Each thread first-touches the slice it will read, so its pages sit on its NUMA node.
  pool_.parallel_for(parts, 1, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      for (std::size_t i = words * t / parts; i < words * (t + 1) / parts; ++i) buf_.get()[i] = i * 0x9E3779B97F4A7C15ull;
    }
  });
  pass_seconds(false);  // warm-up: thread start-up, TLB
}

double StreamingReader::pass_seconds(bool prefetch) {
  const std::size_t words = bytes_ / sizeof(uint64_t);
  const int64_t parts = pool_.size();
  const auto t0 = std::chrono::steady_clock::now();
  pool_.parallel_for(parts, 1, [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) {
      const std::size_t w0 = words * p / parts, w1 = words * (p + 1) / parts;
      sums_[static_cast<std::size_t>(p)] = prefetch ? sum_words<kReadPrefetchBytes>(buf_.get() + w0, w1 - w0)
                                                    : sum_words<0>(buf_.get() + w0, w1 - w0);
    }
  });
  const double s = seconds_since(t0);
  for (uint64_t v : sums_) sink_ += v;  // keeps the sums (and so the reads) alive
  return s;
}

ProductReader::ProductReader(kernels::ThreadPool& pool, const std::vector<std::size_t>& product_bytes,
                             int64_t tasks_per_product)
    : pool_(pool), tasks_(std::max<int64_t>(1, tasks_per_product)), sums_(static_cast<std::size_t>(tasks_)) {
  constexpr std::size_t kLineWords = kCacheLineBytes / sizeof(uint64_t);
  offsets_.push_back(0);
  for (std::size_t b : product_bytes) {
    const std::size_t words = (b / sizeof(uint64_t) + kLineWords - 1) / kLineWords * kLineWords;
    offsets_.push_back(offsets_.back() + words);
  }
  bytes_ = offsets_.back() * sizeof(uint64_t);
  buf_.reset(static_cast<uint64_t*>(std::aligned_alloc(kCacheLineBytes, std::max(bytes_, kCacheLineBytes))));
  if (!buf_) throw std::bad_alloc();
  const int64_t words = static_cast<int64_t>(offsets_.back());
  pool_.parallel_for(words, 1 << 16, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) buf_.get()[i] = static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ull;
  });
  pass_seconds();  // warm-up: the pool's threads, TLB
}

double ProductReader::pass_seconds() {
  constexpr std::size_t kLineWords = kCacheLineBytes / sizeof(uint64_t);
  const auto t0 = std::chrono::steady_clock::now();
  for (std::size_t p = 0; p + 1 < offsets_.size(); ++p) {
    const std::size_t lines = (offsets_[p + 1] - offsets_[p]) / kLineWords;
    const uint64_t* base = buf_.get() + offsets_[p];
    pool_.parallel_for(tasks_, 1, [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        const std::size_t l0 = lines * static_cast<std::size_t>(t) / static_cast<std::size_t>(tasks_);
        const std::size_t l1 = lines * static_cast<std::size_t>(t + 1) / static_cast<std::size_t>(tasks_);
        sums_[static_cast<std::size_t>(t)] = sum_words<kReadPrefetchBytes>(base + l0 * kLineWords, (l1 - l0) * kLineWords);
      }
    });
    for (uint64_t v : sums_) sink_ += v;
  }
  return seconds_since(t0);
}

ReadBandwidth StreamingReader::round() {
  for (int prefetch = 0; prefetch < 2; ++prefetch) seconds_[prefetch].push_back(pass_seconds(prefetch != 0));
  return summary();
}

ReadBandwidth StreamingReader::measure(double min_time_s) {
  reset();
  ReadBandwidth r;
  double total = 0.0;
  while (total < min_time_s || r.passes < kMinBandwidthPasses) {
    const auto t0 = std::chrono::steady_clock::now();
    r = round();
    total += seconds_since(t0);
  }
  return r;
}

ReadBandwidth StreamingReader::summary() const {
  ReadBandwidth r;
  r.buffer_bytes = bytes_;
  r.threads = pool_.size();
  if (seconds_[0].empty() || seconds_[1].empty()) return r;
  std::vector<double> sorted[2] = {seconds_[0], seconds_[1]};
  for (auto& v : sorted) std::sort(v.begin(), v.end());
  const double bytes = static_cast<double>(bytes_);
  const int best = sorted[1].front() < sorted[0].front() ? 1 : 0;
  r.loop = best == 1 ? "loads+prefetch" : "loads";
  r.passes = static_cast<int>(sorted[best].size());
  r.best_bytes_per_second = bytes / sorted[best].front();
  r.median_bytes_per_second = bytes / sorted[best][sorted[best].size() / 2];
  r.loads_only_best_bytes_per_second = bytes / sorted[0].front();
  return r;
}

}  // namespace am::bench
