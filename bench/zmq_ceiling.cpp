#include "bench/zmq_ceiling.h"

#include <algorithm>
#include <atomic>
#include <csignal>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <sys/prctl.h>

#include <zmq.hpp>

#include "bench/process_stats.h"
#include "common/atomic_file.h"
#include "common/clock.h"
#include "common/protocol.h"

namespace am::bench {
namespace {

std::atomic<bool> g_stop{false};
void on_signal(int) { g_stop.store(true); }

// Bytes that are not all zeros (some transports and allocators treat zero pages specially).
std::string filler(std::size_t n) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + (i * 7) % 26);
  return s;
}

void common_options(zmq::socket_t& s) {
  s.set(zmq::sockopt::linger, 0);
  s.set(zmq::sockopt::maxmsgsize, static_cast<int64_t>(proto::kMaxFrameBytes));
}

}  // namespace

int serve_ceiling_router(const std::filesystem::path& endpoint_file, std::size_t assign_bytes) {
  std::signal(SIGTERM, on_signal);
  std::signal(SIGINT, on_signal);
  prctl(PR_SET_PDEATHSIG, SIGTERM);   // ends with the bench that started it, however that ends
  zmq::context_t ctx;
  zmq::socket_t router(ctx, zmq::socket_type::router);
  common_options(router);
  router.set(zmq::sockopt::router_mandatory, false);
  router.bind("tcp://127.0.0.1:*");
  const std::string endpoint = router.get(zmq::sockopt::last_endpoint);
  if (!write_file_atomically(endpoint_file, endpoint + "\n").ok()) return 2;
  const std::string body = filler(assign_bytes);
  const std::string type = "ASSIGN";
  auto send_job = [&](const zmq::message_t& identity) {
    router.send(zmq::buffer(identity.data(), identity.size()), zmq::send_flags::sndmore);
    router.send(zmq::buffer(type), zmq::send_flags::sndmore);
    router.send(zmq::buffer(body), zmq::send_flags::none);
  };
  zmq::pollitem_t item{router.handle(), 0, ZMQ_POLLIN, 0};
  while (!g_stop.load()) {
    try {
      if (zmq::poll(&item, 1, std::chrono::milliseconds(100)) == 0) continue;
      for (;;) {
        zmq::message_t identity, kind, payload;
        if (!router.recv(identity, zmq::recv_flags::dontwait)) break;
        if (!identity.more() || !router.recv(kind) || !kind.more() || !router.recv(payload)) continue;
        if (kind.to_string_view() == "HELLO") {
          const int credit = std::max(1, std::atoi(payload.to_string().c_str()));
          for (int i = 0; i < credit; ++i) send_job(identity);
        } else {
          send_job(identity);
        }
      }
    } catch (const zmq::error_t& e) {
      if (e.num() != EINTR) return 3;
    }
  }
  return 0;
}

Result<CeilingResult> run_ceiling_dealers(const CeilingOptions& o) {
  if (o.peers < 1 || o.credit < 1 || o.threads < 1) return invalid_argument("ceiling: peers, credit, threads >= 1");
  zmq::context_t ctx;
  zmq_ctx_set(ctx.handle(), ZMQ_MAX_SOCKETS, std::max(1024, o.peers + 64));
  const std::string result = filler(o.result_bytes);
  const std::string hello = std::to_string(o.credit);
  std::vector<zmq::socket_t> sockets;
  try {
    for (int i = 0; i < o.peers; ++i) {
      sockets.emplace_back(ctx, zmq::socket_type::dealer);
      common_options(sockets.back());
      sockets.back().connect(o.endpoint);
      sockets.back().send(zmq::str_buffer("HELLO"), zmq::send_flags::sndmore);
      sockets.back().send(zmq::buffer(hello), zmq::send_flags::none);
    }
  } catch (const zmq::error_t& e) {
    return io_error(std::string("ceiling: ") + e.what());
  }
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> count{0};
  const int threads = std::min(o.threads, o.peers);
  std::vector<std::thread> drivers;
  for (int t = 0; t < threads; ++t) {
    drivers.emplace_back([&, t] {
      std::vector<zmq::pollitem_t> items;
      for (std::size_t i = static_cast<std::size_t>(t); i < sockets.size(); i += static_cast<std::size_t>(threads)) {
        items.push_back(zmq::pollitem_t{sockets[i].handle(), 0, ZMQ_POLLIN, 0});
      }
      std::vector<zmq::socket_t*> own;
      for (std::size_t i = static_cast<std::size_t>(t); i < sockets.size(); i += static_cast<std::size_t>(threads)) {
        own.push_back(&sockets[i]);
      }
      uint64_t local = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        if (zmq::poll(items.data(), items.size(), std::chrono::milliseconds(20)) <= 0) continue;
        for (std::size_t k = 0; k < items.size(); ++k) {
          if (!(items[k].revents & ZMQ_POLLIN)) continue;
          zmq::socket_t& s = *own[k];
          for (;;) {
            zmq::message_t kind, payload;
            if (!s.recv(kind, zmq::recv_flags::dontwait)) break;
            if (kind.more()) (void)s.recv(payload);
            s.send(zmq::str_buffer("RESULT"), zmq::send_flags::sndmore);
            s.send(zmq::buffer(result), zmq::send_flags::none);
            if (++local % 64 == 0) count.fetch_add(64, std::memory_order_relaxed);
          }
        }
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(o.warmup_s));
  const uint64_t c0 = count.load();
  const double cpu0 = sample_self().cpu_s;
  const auto t0 = SteadyClock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(o.seconds));
  const uint64_t c1 = count.load();
  const double elapsed = seconds_since(t0);
  const double cpu1 = sample_self().cpu_s;
  stop.store(true);
  for (auto& d : drivers) d.join();
  CeilingResult r;
  r.round_trips = c1 - c0;
  r.seconds = elapsed;
  r.round_trips_per_s = static_cast<double>(r.round_trips) / elapsed;
  r.client_cpu_s = cpu1 - cpu0;
  return r;
}

}  // namespace am::bench
