// Fuzz target: what yardd reads back from etcd (issue "No request can stop yardd", item 2). Every byte etcd
// sends is outside input: its JSON gateway's replies (range, txn, lease grant and keep-alive, the token, an
// error's body, a watch stream's lines; inventory/etcd/replies.h) and the records other writers left under
// yardd's keys (inventory/etcd/records.h). The first byte picks the reader, the rest is its input.
// Whatever the bytes: no crash, hang or leak, and what reads keeps its promise: a record that reads writes
// back as JSON that reads again, a granted lease is not 0, a TTL read is what the reply said.
//
// Built as the other targets are (tests/CMakeLists.txt): a libFuzzer binary in the fuzz build, and a replay of
// the committed corpus (tests/fuzz/corpus/etcd_reply) in every build. The corpus holds replies as etcd 3.5's
// gateway words them, and each record as yardd writes it (the replay binary writes those with
// ETCD_REPLY_FUZZ_SEEDS=DIR).
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "inventory/etcd/records.h"
#include "inventory/etcd/replies.h"

using namespace switchyard;
using namespace switchyard::etcd;

namespace {

// A record that reads must write back as JSON that reads again (what the next yardd will read).
template <typename Read>
void roundTrips(std::string_view text, Read read) {
  auto first = read(text, "fuzz");
  if (!first) return;
  const std::string again = toJson(*first).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (!read(again, "fuzz again")) std::abort();
}

void writeSeed(const std::filesystem::path& dir, int reader, const std::string& name, const nlohmann::json& record) {
  std::ofstream out(dir / ("record-" + name), std::ios::binary);
  out.put(static_cast<char>(reader));
  out << record.dump();
}

// Each record as yardd writes it: one with its lists filled, so that the fuzzer starts from every field.
void writeRecordSeeds(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  Topology t;
  Switch sw;
  sw.id = "sw1";
  sw.model = "PAX";
  t.switches.push_back(sw);
  Port up, down;
  up.id = "sw1-up0";
  up.switchId = "sw1";
  up.kind = PortKind::kUpstream;
  down.id = "sw1-dn0";
  down.switchId = "sw1";
  t.ports = {up, down};
  Host h;
  h.id = "host1";
  h.upstreamPorts.push_back(HostUpstreamPort{"sw1-up0", 0});
  t.hosts.push_back(h);
  Device d;
  d.id = "gpu0";
  d.portId = "sw1-dn0";
  t.devices.push_back(d);
  writeSeed(dir, 7, "topology", toJson(t));
  System s;
  s.id = "sys-000001";
  s.name = "train";
  s.hostId = "host1";
  s.bindings.push_back({"gpu0", "sw1-up0"});
  s.labels["team"] = "vision";
  writeSeed(dir, 8, "system", toJson(s));
  Operation op;
  op.id = "op-000001";
  op.systemId = s.id;
  op.steps.push_back(Step{});
  op.steps.back().kind = "bind";
  op.steps.back().bindings = s.bindings;
  writeSeed(dir, 9, "operation", toJson(op));
  DeviceAssignment held;
  held.deviceId = "gpu0";
  held.allocation = DeviceAllocation::kAllocated;
  held.owner = s.id;
  writeSeed(dir, 10, "assignment", toJson(held));
  Event e;
  e.type = "system.composed";
  e.subject = s.id;
  writeSeed(dir, 11, "event", toJson(e));
  AuditRecord a;
  a.action = "compose";
  a.target = "train";
  a.result = "accepted";
  writeSeed(dir, 12, "audit", toJson(a));
  writeSeed(dir, 13, "demand", toJson(DemandShape{}));
  writeSeed(dir, 14, "idle-stretch", toJson(IdleStretch{}));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const bool seeded = [] {
    if (const char* dir = std::getenv("ETCD_REPLY_FUZZ_SEEDS")) writeRecordSeeds(dir);
    return true;
  }();
  (void)seeded;
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 15) {
    case 0:
      (void)rangeReplyOf(text);
      break;
    case 1:
      (void)txnReplyOf(text);
      break;
    case 2:
      if (auto lease = leaseGrantReplyOf(text); lease && *lease == 0) std::abort();
      break;
    case 3:
      (void)keepAliveReplyOf(text);
      break;
    case 4:
      (void)tokenReplyOf(text);
      break;
    case 5:
      if (errorReplyOf(text).message.empty() && !text.empty()) std::abort();  // the body itself when nothing better
      break;
    case 6:
      (void)watchMessageOf(text);
      break;
    case 7: roundTrips(text, topologyFrom); break;
    case 8: roundTrips(text, systemFrom); break;
    case 9: roundTrips(text, operationFrom); break;
    case 10: roundTrips(text, assignmentFrom); break;
    case 11: roundTrips(text, eventFrom); break;
    case 12: roundTrips(text, auditFrom); break;
    case 13: roundTrips(text, demandFrom); break;
    case 14: roundTrips(text, idleStretchFrom); break;
  }
  return 0;
}
