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

#include "kernels/cpu_features.h"

namespace am::bench {
namespace {

constexpr std::size_t kCacheLineBytes = 64;

struct AlignedFree {
  void operator()(uint64_t* p) const { std::free(p); }
};

#if defined(__x86_64__)
// 512-bit loads into four accumulators: one core issues enough loads to reach its share of the
// memory bandwidth, so the measured figure is the memory's, not this loop's.
__attribute__((target("avx512f"))) uint64_t sum_words_avx512(const uint64_t* p, std::size_t n) {
  __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) {
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
uint64_t sum_words(const uint64_t* p, std::size_t n) {
#if defined(__x86_64__)
  if (kernels::cpu_features().avx512f) return sum_words_avx512(p, n);
#endif
  uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    s0 += p[i];
    s1 += p[i + 1];
    s2 += p[i + 2];
    s3 += p[i + 3];
  }
  for (; i < n; ++i) s0 += p[i];
  return s0 + s1 + s2 + s3;
}

}  // namespace

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

ReadBandwidth measure_read_bandwidth(kernels::ThreadPool& pool, double min_time_s) {
  ReadBandwidth r;
  r.buffer_bytes = std::max(kMinReadBufferBytes, kLlcMultiple * last_level_cache_bytes());
  r.buffer_bytes -= r.buffer_bytes % kCacheLineBytes;
  r.threads = pool.size();
  const std::size_t words = r.buffer_bytes / sizeof(uint64_t);
  std::unique_ptr<uint64_t, AlignedFree> buf(static_cast<uint64_t*>(std::aligned_alloc(kCacheLineBytes, r.buffer_bytes)));
  if (!buf) throw std::bad_alloc();
  const int64_t parts = pool.size();
  // Each thread first-touches the slice it will read, so its pages sit on its NUMA node.
  pool.parallel_for(parts, 1, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      for (std::size_t i = words * t / parts; i < words * (t + 1) / parts; ++i) buf.get()[i] = i * 0x9E3779B97F4A7C15ull;
    }
  });
  std::vector<uint64_t> sums(static_cast<std::size_t>(parts));
  auto pass = [&] {
    pool.parallel_for(parts, 1, [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; ++p) {
        const std::size_t w0 = words * p / parts, w1 = words * (p + 1) / parts;
        sums[static_cast<std::size_t>(p)] = sum_words(buf.get() + w0, w1 - w0);
      }
    });
  };
  pass();  // warm-up: thread start-up, TLB
  std::vector<double> seconds;
  double total = 0.0;
  volatile uint64_t sink = 0;  // keeps the sums (and so the reads) alive
  while (total < min_time_s || static_cast<int>(seconds.size()) < kMinBandwidthPasses) {
    const auto t0 = std::chrono::steady_clock::now();
    pass();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (uint64_t v : sums) sink = sink + v;
    seconds.push_back(s);
    total += s;
  }
  std::sort(seconds.begin(), seconds.end());
  r.passes = static_cast<int>(seconds.size());
  const double bytes = static_cast<double>(words * sizeof(uint64_t));
  r.best_bytes_per_second = bytes / seconds.front();
  r.median_bytes_per_second = bytes / seconds[seconds.size() / 2];
  return r;
}

}  // namespace am::bench
