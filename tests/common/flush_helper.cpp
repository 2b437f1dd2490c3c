// A process that queues messages for a coordinator and exits at once: the transport's exit-time
// flush is only observable from another process (tests/common/transport_flush_test.cpp).
//
// Usage: flush_helper ENDPOINT COUNT flush|noflush
// Connects a DEALER to ENDPOINT, queues COUNT HEARTBEATs, closes it (with flush_on_close for
// "flush"), calls finish_pending_sends and exits 0 when that finished in time, 1 when not.
#include <cstdlib>
#include <string>

#include "common/protocol.h"
#include "common/transport.h"

int main(int argc, char** argv) {
  if (argc != 4) return 2;
  const std::string mode = argv[3];
  const int count = std::atoi(argv[2]);
  {
    auto dealer = am::DealerEndpoint::connect(argv[1]);
    if (!dealer.ok()) return 3;
    for (int i = 0; i < count; ++i) {
      if (!dealer->send(am::proto::Message{am::proto::Heartbeat{}}).ok()) return 4;
    }
    // Long enough for the reconnect backoff (up to 8 s between tries) to meet a late bind.
    if (mode == "flush") dealer->flush_on_close(25'000);
  }
  return am::finish_pending_sends(30'000) ? 0 : 1;
}
