// A Switchtec PAX fabric on the management Ethernet transport, for tests and demos: one or more PAX chips
// from a topology file, a stateful GFMS database (hosts' HVDs and their logical ports, endpoint ports and
// their functions, bindings), GFMS events, and faults (refuse a bind, apply one and drop the reply, close
// the connection, take a link down, raise AER, answer slowly). It speaks the real wire protocol: the
// vendor's own `switchtec` CLI, unmodified, runs its fabric commands against it (tests/integration/
// switchtec_cli_test.sh). Each connection is served on its own thread, so commands on different
// connections run at once.
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "composer/model/error.h"
#include "fabric/switchtec/protocol.h"
#include "tests/support/switchtec_topology.h"

namespace switchyard::testing {

class SwitchtecEmulator {
 public:
  struct Options {
    SwitchtecTopology topology;
    std::string listen = "127.0.0.1:0";  // HOST:PORT; the vendor CLI only dials 54545
    std::chrono::milliseconds latency{0};  // before each MRPC reply
    // Written (atomically) after every bind and unbind: {"paxN-epP": "paxM-pQ"} for each bound device,
    // named as the Switchtec driver names them. What a crash test compares yardd's store against.
    std::filesystem::path bindingsFile;
  };
  [[nodiscard]] static Result<std::unique_ptr<SwitchtecEmulator>> start(Options options);
  ~SwitchtecEmulator();
  SwitchtecEmulator(const SwitchtecEmulator&) = delete;
  SwitchtecEmulator& operator=(const SwitchtecEmulator&) = delete;

  [[nodiscard]] std::string endpoint() const;  // HOST:PORT actually listened on
  [[nodiscard]] std::uint16_t port() const { return port_; }

  // Faults and observations, safe from any thread.
  void setLatency(std::chrono::milliseconds latency) { latencyMs_ = latency.count(); }
  // The next `n` binds are refused with `status` (an MRPC return code) and change nothing.
  void refuseBinds(int n, std::uint32_t status = switchtec::mrpc_error::kBindCheckFail);
  // The next `n` bind or unbind commands are applied, then the connection is closed without a reply.
  void dropReplies(int n);
  // The next `n` commands of any kind close the connection unanswered (nothing applied).
  void closeConnections(int n);
  // Link of a port down or up again: an endpoint's (its functions leave the fabric's database), a host's or
  // a fabric link's (an event, and the port out of L0).
  [[nodiscard]] bool setLinkUp(std::uint8_t pax, std::uint8_t port, bool up);
  // An AER report from an endpoint port; with `dpc` the switch contained the link.
  [[nodiscard]] bool raiseAer(std::uint8_t pax, std::uint8_t port, bool dpc);
  // Number of MRPC commands served, and binds / unbinds applied.
  [[nodiscard]] std::uint64_t commandsServed() const { return commands_; }
  // pdfid -> (host PAX, host port, logical port) for every bound function.
  struct BoundTo {
    std::uint8_t pax = 0, hostPort = 0, logicalPort = 0;
  };
  [[nodiscard]] std::map<std::uint16_t, BoundTo> bindings() const;
  // The fabric-wide id of function `function` of the endpoint at (pax, port); 0 when none.
  [[nodiscard]] std::uint16_t pdfidOf(std::uint8_t pax, std::uint8_t port, int function = 0) const;

 private:
  struct Connection;
  struct Chip {
    EmulatedPax spec;
    std::map<std::uint8_t, switchtec::Hvd> hvds;  // by host port
    std::set<std::uint8_t> linksDown;             // ports whose link is down
    std::deque<switchtec::GfmsEvent> events;
    bool overflow = false;
  };
  explicit SwitchtecEmulator(Options options);
  void acceptLoop();
  void serve(int fd);
  // Handles one MRPC command; returns false to close the connection without a reply.
  bool mrpc(Connection& c, std::uint32_t word, std::span<const std::uint8_t> payload, std::uint32_t& status, switchtec::Bytes& out);
  switchtec::Bytes gas(std::uint32_t offset, std::uint16_t bytes) const;
  bool reachable(std::uint8_t from, std::uint8_t to) const;
  switchtec::PaxAll paxAll(const Chip& chip) const;
  switchtec::TopoInfo topoInfo(const Chip& chip) const;
  void pushEvent(Chip& chip, switchtec::GfmsEventCode code, switchtec::Bytes data);
  Chip* chip(std::uint8_t pax);
  const Chip* chip(std::uint8_t pax) const;
  std::uint32_t bind(const switchtec::BindRequest& r);
  std::uint32_t unbind(const switchtec::UnbindRequest& r);
  void writeBindingsFile() const;

  Options options_;
  int listenFd_ = -1;
  std::uint16_t port_ = 0;
  std::string host_;
  std::atomic<bool> stopping_{false};
  std::atomic<long long> latencyMs_{0};
  std::atomic<std::uint64_t> commands_{0};
  std::thread acceptThread_;
  mutable std::mutex mutex_;  // guards everything below
  std::vector<std::unique_ptr<Chip>> chips_;
  std::map<std::uint16_t, BoundTo> bound_;  // pdfid -> where it is bound
  std::vector<std::thread> connectionThreads_;
  std::vector<int> connectionFds_;
  int refuseBinds_ = 0;
  std::uint32_t refuseStatus_ = 0;
  int dropReplies_ = 0;
  int closeConnections_ = 0;
};

}  // namespace switchyard::testing
