#include "tests/support/switchtec_emulator.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <fstream>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace switchyard::testing {

using namespace switchtec;

namespace {

constexpr std::size_t kMaxEvents = 128;


bool recvExact(int fd, std::uint8_t* out, std::size_t n) {
  std::size_t done = 0;
  while (done < n) {
    const auto r = ::recv(fd, out + done, n - done, 0);
    if (r <= 0) return false;
    done += static_cast<std::size_t>(r);
  }
  return true;
}

bool sendAll(int fd, const Bytes& b) {
  std::size_t done = 0;
  while (done < b.size()) {
    const auto r = ::send(fd, b.data() + done, b.size() - done, MSG_NOSIGNAL);
    if (r <= 0) return false;
    done += static_cast<std::size_t>(r);
  }
  return true;
}

}  // namespace


struct SwitchtecEmulator::Connection {
  std::map<std::uint8_t, Bytes> dumps;  // GFMS dump in progress, by section
  Bytes topo;
};

SwitchtecEmulator::SwitchtecEmulator(Options options) : options_(std::move(options)) {
  latencyMs_ = options_.latency.count();
  for (const auto& spec : options_.topology.chips) {
    auto c = std::make_unique<Chip>();
    c->spec = spec;
    for (const auto& h : spec.hosts) {
      Hvd hvd;
      hvd.instance = static_cast<std::uint8_t>(c->hvds.size());
      hvd.physPort = h.port;
      hvd.hfid = static_cast<std::uint16_t>(0x10 * (spec.id + 1) + hvd.instance);
      hvd.logicalPorts = h.logicalPorts;
      hvd.slots.resize(static_cast<std::size_t>(h.logicalPorts) * kFunctionsPerLogicalPort);
      c->hvds[h.port] = std::move(hvd);
    }
    chips_.push_back(std::move(c));
  }
  writeBindingsFile();  // nothing bound yet
}

Result<std::unique_ptr<SwitchtecEmulator>> SwitchtecEmulator::start(Options options) {
  if (options.topology.chips.empty()) return fail(Code::kInvalidArgument, "a Switchtec emulator needs at least one PAX");
  std::unique_ptr<SwitchtecEmulator> e(new SwitchtecEmulator(std::move(options)));
  const auto& listen = e->options_.listen;
  const auto colon = listen.rfind(':');
  if (colon == std::string::npos) return fail(Code::kInvalidArgument, fmt::format("--listen '{}': HOST:PORT", listen));
  e->host_ = listen.substr(0, colon);
  int port = 0;
  try {
    port = std::stoi(listen.substr(colon + 1));
  } catch (const std::exception&) {
    return fail(Code::kInvalidArgument, fmt::format("--listen '{}': the port is not a number", listen));
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  if (::inet_pton(AF_INET, e->host_.c_str(), &addr.sin_addr) != 1)
    return fail(Code::kInvalidArgument, fmt::format("--listen '{}': an IPv4 address is needed", listen));
  e->listenFd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  ::setsockopt(e->listenFd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(e->listenFd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(e->listenFd_, 64) != 0)
    return fail(Code::kUnavailable, fmt::format("cannot listen on {}: {}", listen, std::strerror(errno)));
  socklen_t len = sizeof addr;
  ::getsockname(e->listenFd_, reinterpret_cast<sockaddr*>(&addr), &len);
  e->port_ = ntohs(addr.sin_port);
  e->acceptThread_ = std::thread([raw = e.get()] { raw->acceptLoop(); });
  return e;
}

SwitchtecEmulator::~SwitchtecEmulator() {
  stopping_ = true;
  ::shutdown(listenFd_, SHUT_RDWR);
  if (acceptThread_.joinable()) acceptThread_.join();
  ::close(listenFd_);
  std::vector<std::thread> threads;
  {
    std::lock_guard lock(mutex_);
    for (int fd : connectionFds_) ::shutdown(fd, SHUT_RDWR);
    threads = std::move(connectionThreads_);
  }
  for (auto& t : threads) t.join();
}

std::string SwitchtecEmulator::endpoint() const { return fmt::format("{}:{}", host_, port_); }

void SwitchtecEmulator::acceptLoop() {
  while (!stopping_) {
    const int fd = ::accept4(listenFd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (stopping_) return;
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return;
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    std::lock_guard lock(mutex_);
    connectionFds_.push_back(fd);
    connectionThreads_.emplace_back([this, fd] { serve(fd); });
  }
}

void SwitchtecEmulator::serve(int fd) {
  Connection connection;
  bool opened = false;
  for (;;) {
    std::array<std::uint8_t, kEthHeaderSize> raw{};
    if (!recvExact(fd, raw.data(), raw.size())) break;
    auto header = decodeHeader(raw);
    if (!header) break;
    Bytes body(header->payloadBytes);
    if (!body.empty() && !recvExact(fd, body.data(), body.size())) break;
    if (header->packet == EthPacket::kOpen) {
      if (header->function != EthFunction::kOpenRequest) break;
      opened = true;
      const bool known = header->serviceType == static_cast<std::uint8_t>(EthService::kCommand) ||
                         header->serviceType == static_cast<std::uint8_t>(EthService::kEvent);
      if (!sendAll(fd, encodeHeader({.function = known ? EthFunction::kOpenAccept : EthFunction::kOpenReject,
                                     .packet = EthPacket::kOpen,
                                     .serviceInstance = header->serviceInstance,
                                     .serviceType = header->serviceType,
                                     .outputBytes = static_cast<std::uint16_t>(known ? 0 : 1)})))
        break;
      continue;
    }
    if (!opened) break;  // commands before OPEN: not a management client
    {
      std::lock_guard lock(mutex_);
      if (closeConnections_ > 0) {
        --closeConnections_;
        break;
      }
    }
    ByteReader r(body);
    const auto word = r.u32();
    std::uint32_t status = 0;
    Bytes out;
    EthFunction replyFunction = EthFunction::kMrpcResponse;
    std::size_t outputBytes = header->outputBytes;
    if (header->function == EthFunction::kGasCommand) {
      replyFunction = EthFunction::kGasResponse;
      const auto offset = r.u32();
      const auto bytes = r.u16();
      if (word == kGasRead) {
        out = gas(offset, bytes);
        outputBytes = out.size();
      } else {
        outputBytes = 0;  // GAS writes: accepted, nothing modelled behind them
      }
    } else if (header->function == EthFunction::kMrpcCommand) {
      ++commands_;
      // Slow answers: sleep in steps, so that stopping the emulator does not wait for them.
      const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(latencyMs_.load());
      while (!stopping_ && std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(until - std::chrono::steady_clock::now(), std::chrono::milliseconds(20)));
      if (stopping_) break;
      if (!mrpc(connection, word, r.take(r.remaining()), status, out)) break;
    } else {
      break;
    }
    out.resize(outputBytes, 0);  // the client reads exactly what it asked for
    auto reply = encodeHeader({.function = replyFunction, .packet = EthPacket::kCommand, .payloadBytes = static_cast<std::uint16_t>(4 + out.size())});
    ByteWriter w;
    w.u32(status).bytes(out);
    const auto tail = w.take();
    reply.insert(reply.end(), tail.begin(), tail.end());
    if (!sendAll(fd, reply)) break;
  }
  std::lock_guard lock(mutex_);
  connectionFds_.erase(std::remove(connectionFds_.begin(), connectionFds_.end(), fd), connectionFds_.end());
  ::close(fd);
}

Bytes SwitchtecEmulator::gas(std::uint32_t offset, std::uint16_t bytes) const {
  // The few registers a client reads over GAS: top (partitions) and system info.
  Bytes out(bytes, 0);
  const auto put = [&](std::uint32_t at, std::uint64_t value, int width) {
    for (int i = 0; i < width; ++i) {
      const auto a = at + static_cast<std::uint32_t>(i);
      if (a >= offset && a < offset + bytes) out[a - offset] = static_cast<std::uint8_t>(value >> (8 * i));
    }
  };
  const auto& local = options_.topology.chips.front();
  put(kGasTopPartitionCount, 1, 1);
  put(kGasTopPartitionId, 0, 1);
  put(kGasDeviceId, local.deviceId, 4);
  put(kGasDeviceId + 4, 0x100, 4);       // device version
  put(kGasDeviceId + 8, 0x04050000, 4);  // firmware version 4.5
  return out;
}

SwitchtecEmulator::Chip* SwitchtecEmulator::chip(std::uint8_t pax) {
  for (auto& c : chips_)
    if (c->spec.id == pax) return c.get();
  return nullptr;
}
const SwitchtecEmulator::Chip* SwitchtecEmulator::chip(std::uint8_t pax) const {
  for (const auto& c : chips_)
    if (c->spec.id == pax) return c.get();
  return nullptr;
}

bool SwitchtecEmulator::reachable(std::uint8_t from, std::uint8_t to) const {
  std::set<std::uint8_t> seen{from};
  std::vector<std::uint8_t> frontier{from};
  while (!frontier.empty()) {
    const auto* c = chip(frontier.back());
    frontier.pop_back();
    if (!c) continue;
    for (const auto& l : c->spec.links)
      if (seen.insert(l.peerPax).second) frontier.push_back(l.peerPax);
  }
  return seen.contains(to);
}

void SwitchtecEmulator::pushEvent(Chip& c, GfmsEventCode code, Bytes data) {
  if (c.events.size() >= kMaxEvents) {
    c.overflow = true;
    c.events.pop_front();
  }
  c.events.push_back({code, c.spec.id, std::move(data)});
}

PaxAll SwitchtecEmulator::paxAll(const Chip& c) const {
  PaxAll all;
  auto& g = all.general;
  g.header = {.sectionClass = 0, .paxIndex = c.spec.id, .swfid = static_cast<std::uint16_t>(0x8000 | c.spec.id)};
  g.physPortCount = static_cast<std::uint8_t>(c.spec.hosts.size() + c.spec.endpoints.size() + c.spec.links.size());
  g.hvdCount = static_cast<std::uint8_t>(c.hvds.size());
  g.pdfidStart = emulatedPdfid(c.spec.id, 0, 0);
  g.pdfidEnd = static_cast<std::uint16_t>(g.pdfidStart + 0xff);
  g.hfidStart = static_cast<std::uint16_t>(0x10 * (c.spec.id + 1));
  g.hfidEnd = static_cast<std::uint16_t>(g.hfidStart + 0xf);
  for (const auto& [port, hvd] : c.hvds) {
    all.hvds.push_back(hvd);
    g.rcPortMap |= std::uint64_t{1} << port;
  }
  for (std::size_t i = 0; i < c.spec.endpoints.size(); ++i) {
    const auto& spec = c.spec.endpoints[i];
    g.epPortMap |= std::uint64_t{1} << spec.port;
    EpPort port;
    port.physPort = spec.port;
    if (c.linksDown.contains(spec.port)) {
      port.kind = EpPortKind::kNone;
    } else {
      port.kind = EpPortKind::kEndpoint;
      port.attachedDspEnumId = static_cast<std::uint16_t>(0x100 + spec.port);
      ++g.epCount;
      for (std::size_t f = 0; f < spec.functions.size(); ++f) {
        EpFunction fn;
        fn.functionId = static_cast<std::uint16_t>(f);
        fn.sriovCapPf = 1;  // a physical function without SR-IOV
        fn.pdfid = emulatedPdfid(c.spec.id, i, f);
        fn.vendorId = spec.functions[f].vendorId;
        fn.deviceId = spec.functions[f].deviceId;
        fn.subVendorId = spec.functions[f].subVendorId;
        fn.subDeviceId = spec.functions[f].subDeviceId;
        fn.classCode = spec.functions[f].classCode;
        fn.bars[0] = {0x0, 24};   // 16 MiB registers
        fn.bars[1] = {0xc, 37};   // 128 GiB prefetchable (the GPU's memory window)
        fn.bars[3] = {0xc, 25};
        if (auto b = bound_.find(fn.pdfid); b != bound_.end()) {
          fn.bound = true;
          fn.boundPaxId = b->second.pax;
          fn.boundHvdPhysPort = b->second.hostPort;
          fn.boundHvdLogPort = b->second.logicalPort;
        }
        ++g.epFunctionCount;
        port.functions.push_back(fn);
      }
    }
    all.epPorts.push_back(std::move(port));
  }
  for (const auto& l : c.spec.links) g.fabPortMap |= std::uint64_t{1} << l.port;
  return all;
}

TopoInfo SwitchtecEmulator::topoInfo(const Chip& c) const {
  TopoInfo t;
  t.switchIndex = c.spec.id;
  const auto gen = paxGeneration(c.spec.deviceId).value_or(Generation::kGen4);
  const std::uint8_t rate = gen == Generation::kGen5 ? 5 : 4;
  auto add = [&](std::uint8_t port, PortType type) {
    PortInfo p{.physPort = port, .type = type, .cfgRate = rate, .negRate = rate};
    if (c.linksDown.contains(port)) {
      p.negWidth = 0;
      p.majorLtssm = 0;  // Detect (quiet)
    }
    t.ports.push_back(p);
  };
  for (const auto& h : c.spec.hosts) add(h.port, PortType::kHost);
  for (const auto& e : c.spec.endpoints) add(e.port, PortType::kEndpoint);
  for (const auto& l : c.spec.links) add(l.port, PortType::kFabric);
  std::sort(t.ports.begin(), t.ports.end(), [](const PortInfo& a, const PortInfo& b) { return a.physPort < b.physPort; });
  return t;
}

std::uint32_t SwitchtecEmulator::bind(const BindRequest& r) {
  Chip* host = chip(r.hostSwitchIndex);
  if (!host || !host->hvds.contains(r.hostPhysPort)) return mrpc_error::kPhysPortNotExist;
  auto& hvd = host->hvds[r.hostPhysPort];
  if (r.hostLogPort >= hvd.logicalPorts) return mrpc_error::kNoLogicalPort;
  for (int f = 0; f < kFunctionsPerLogicalPort; ++f)
    if (hvd.slot(f, r.hostLogPort).bound) return mrpc_error::kLogicalPortAlreadyBound;
  std::set<std::uint16_t> seen;
  for (const auto pdfid : r.pdfids) {
    if (!seen.insert(pdfid).second) return mrpc_error::kParamInvalid;
    const Chip* owner = nullptr;
    for (const auto& c : chips_) {
      const auto start = emulatedPdfid(c->spec.id, 0, 0);
      if (pdfid >= start && pdfid < start + 0x100) owner = c.get();
    }
    if (!owner) return mrpc_error::kParamInvalid;
    const auto index = static_cast<std::size_t>((pdfid - emulatedPdfid(owner->spec.id, 0, 0)) / 8);
    const auto function = static_cast<std::size_t>((pdfid - emulatedPdfid(owner->spec.id, 0, 0)) % 8);
    if (index >= owner->spec.endpoints.size() || function >= owner->spec.endpoints[index].functions.size())
      return mrpc_error::kParamInvalid;
    if (owner->linksDown.contains(owner->spec.endpoints[index].port)) return mrpc_error::kPhysPortDisabled;
    if (bound_.contains(pdfid)) return mrpc_error::kPhysPortAlreadyBound;
    if (!reachable(host->spec.id, owner->spec.id)) return mrpc_error::kBindCheckFail;
  }
  for (std::size_t f = 0; f < r.pdfids.size(); ++f) {
    hvd.slot(static_cast<int>(f), r.hostLogPort) = {true, r.pdfids[f]};
    bound_[r.pdfids[f]] = {r.hostSwitchIndex, r.hostPhysPort, r.hostLogPort};
    ByteWriter e;
    e.u8(r.hostSwitchIndex).u8(r.hostPhysPort).u8(r.hostLogPort).u8(0).u16(r.pdfids[f]);
    pushEvent(*host, GfmsEventCode::kBind, e.take());
  }
  return 0;
}

std::uint32_t SwitchtecEmulator::unbind(const UnbindRequest& r) {
  Chip* host = chip(r.hostSwitchIndex);
  if (!host || !host->hvds.contains(r.hostPhysPort)) return mrpc_error::kPhysPortNotExist;
  auto& hvd = host->hvds[r.hostPhysPort];
  if (r.hostLogPort >= hvd.logicalPorts) return mrpc_error::kParamInvalid;
  bool any = false;
  for (int f = 0; f < kFunctionsPerLogicalPort; ++f) {
    auto& slot = hvd.slot(f, r.hostLogPort);
    if (!slot.bound) continue;
    any = true;
    bound_.erase(slot.pdfid);
    ByteWriter e;
    e.u8(r.hostSwitchIndex).u8(r.hostPhysPort).u8(r.hostLogPort).u8(0).u16(slot.pdfid);
    pushEvent(*host, GfmsEventCode::kUnbind, e.take());
    slot = {};
  }
  return any ? 0 : mrpc_error::kLogicalPortNotBound;
}

bool SwitchtecEmulator::mrpc(Connection& conn, std::uint32_t word, std::span<const std::uint8_t> payload, std::uint32_t& status, Bytes& out) {
  std::lock_guard lock(mutex_);
  const auto op = word & kCommandMask;
  const auto paxField = static_cast<std::uint8_t>((word >> kPaxIdShift) & kPaxIdMask);
  const auto localId = chips_.front()->spec.id;
  const std::uint8_t paxId = paxField == kPaxIdLocal ? localId : paxField;
  Chip* target = chip(paxId);
  ByteReader in(payload);
  ByteWriter w;
  status = 0;
  if (op == static_cast<std::uint32_t>(Mrpc::kPing)) {
    const auto ping = in.u32();
    const auto gen = paxGeneration(chips_.front()->spec.deviceId).value_or(Generation::kGen4);
    w.u32(3u | (gen == Generation::kGen5 ? 1u << 12 : 0u)).u32(~ping);
  } else if (op == static_cast<std::uint32_t>(Mrpc::kGetPaxId)) {
    w.u8(localId);
  } else if (!target || !reachable(localId, paxId)) {
    status = mrpc_error::kParamInvalid;  // a PAX this chip cannot reach
  } else if (op == static_cast<std::uint32_t>(Mrpc::kTopoInfoDump)) {
    const auto sub = in.u8();
    if (sub == kTopoDumpStart) {
      conn.topo = encodeTopoInfo(topoInfo(*target), paxGeneration(target->spec.deviceId).value_or(Generation::kGen4));
      w.u8(0);
    } else if (sub == kTopoDumpStatus) {
      w.u8(kTopoDumpReady).u8(0).u16(static_cast<std::uint16_t>(conn.topo.size() / 4));
    } else if (sub == kTopoDumpData || sub == kTopoDumpDataGen5) {
      in.skip(1);
      const std::size_t offset = in.u16();
      const std::size_t room = payload.size() >= 4 ? std::min<std::size_t>(kTopoDataPerReply, 1024) : 0;
      const std::size_t n = offset < conn.topo.size() ? std::min(room, conn.topo.size() - offset) / 4 * 4 : 0;
      w.u8(kTopoDumpReady).u8(0).u16(static_cast<std::uint16_t>(n / 4));
      w.bytes(std::span(conn.topo).subspan(std::min(offset, conn.topo.size()), n));
    } else if (sub == kTopoDumpFinish) {
      conn.topo.clear();
      w.u8(0);
    } else {
      status = mrpc_error::kSubcmdInvalid;
    }
  } else if (op == static_cast<std::uint32_t>(Mrpc::kGfmsDbDump)) {
    const auto sub = in.u8();
    const auto param = in.u8();
    in.skip(2);
    const auto type = in.u32();
    const SectionHeader header{.sectionClass = sub, .paxIndex = target->spec.id, .swfid = static_cast<std::uint16_t>(0x8000 | target->spec.id)};
    if (sub == static_cast<std::uint8_t>(GfmsDump::kFabric)) {
      FabricGeneral f;
      f.header = header;
      for (std::size_t i = 0; i < f.reach.size(); ++i)
        f.reach[i] = chip(static_cast<std::uint8_t>(i)) && reachable(target->spec.id, static_cast<std::uint8_t>(i)) ? kReachUnicast : kReachUnreachable;
      w.bytes(encodeFabricGeneral(f));
    } else if (sub == static_cast<std::uint8_t>(GfmsDump::kPax)) {
      auto g = paxAll(*target).general;
      g.header = header;
      w.bytes(encodePaxGeneral(g));
    } else if (sub == static_cast<std::uint8_t>(GfmsDump::kFabPort)) {
      auto link = std::find_if(target->spec.links.begin(), target->spec.links.end(), [&](const EmulatedLink& l) { return l.port == param; });
      if (link == target->spec.links.end()) {
        status = mrpc_error::kParamInvalid;
      } else {
        w.bytes(encodeFabPort({.header = header, .physPort = link->port, .attachedPhysPort = link->peerPort, .attachedSwitchIndex = link->peerPax,
                               .attachedSwfid = static_cast<std::uint16_t>(0x8000 | link->peerPax), .attachedFwVersion = 0x04050000}));
      }
    } else if (sub == static_cast<std::uint8_t>(GfmsDump::kPaxAll) || sub == static_cast<std::uint8_t>(GfmsDump::kHvd) ||
               sub == static_cast<std::uint8_t>(GfmsDump::kEpPort)) {
      if (type == kDumpStart) {
        Bytes data;
        const auto all = paxAll(*target);
        if (sub == static_cast<std::uint8_t>(GfmsDump::kPaxAll)) {
          data = encodePaxAll(all);
        } else if (sub == static_cast<std::uint8_t>(GfmsDump::kHvd)) {
          for (const auto& h : all.hvds)
            if (h.instance == param) data = encodeHvd(header, h);
        } else {
          for (const auto& p : all.epPorts)
            if (p.physPort == param) data = encodeEpPortSection(header, p);
        }
        if (data.empty()) {
          status = mrpc_error::kParamInvalid;
        } else {
          w.u32(static_cast<std::uint32_t>(data.size() / 4)).u32(static_cast<std::uint32_t>(chips_.size()));
          conn.dumps[sub] = std::move(data);
        }
      } else if (type == kDumpGet) {
        const auto offsetDw = in.u32();
        auto it = conn.dumps.find(sub);
        if (it == conn.dumps.end() || static_cast<std::size_t>(offsetDw) * 4 >= it->second.size()) {
          status = mrpc_error::kParamInvalid;
        } else {
          const std::size_t leftDw = it->second.size() / 4 - offsetDw;
          const std::size_t chunkDw = std::min<std::size_t>(leftDw, kDumpChunkDw - 3);
          w.u32(offsetDw).u32(static_cast<std::uint32_t>(chunkDw + 3)).u32(0);
          w.bytes(std::span(it->second).subspan(static_cast<std::size_t>(offsetDw) * 4, chunkDw * 4));
        }
      } else if (type == kDumpFinish) {
        conn.dumps.erase(sub);
      } else {
        status = mrpc_error::kParamInvalid;
      }
    } else {
      status = mrpc_error::kSubcmdInvalid;  // HVD_DETAIL and beyond: not modelled
    }
  } else if (op == static_cast<std::uint32_t>(Mrpc::kGfmsBindUnbind)) {
    auto request = decodeBindUnbind(payload);
    if (!request) {
      status = mrpc_error::kBindSubcmdInvalid;
    } else if (request->subcommand == kGfmsBind && refuseBinds_ > 0) {
      --refuseBinds_;
      status = refuseStatus_;
    } else {
      status = request->subcommand == kGfmsBind ? bind(request->bind) : unbind(request->unbind);
      if (status == 0) writeBindingsFile();
      w.u8(static_cast<std::uint8_t>(status));
      if (dropReplies_ > 0) {
        --dropReplies_;
        return false;  // applied, and the reply is lost with the connection
      }
    }
  } else if (op == static_cast<std::uint32_t>(Mrpc::kGfmsEvent)) {
    const auto sub = in.u8();
    if (sub == 0) {
      target->events.clear();
      target->overflow = false;
    } else {
      in.skip(1);
      const auto want = in.u16();
      EventBatch batch;
      std::size_t bytes = 4;
      while (batch.events.size() < want && !target->events.empty() && bytes + 4 + target->events.front().data.size() <= kMrpcMaxData) {
        bytes += 4 + target->events.front().data.size();
        batch.events.push_back(std::move(target->events.front()));
        target->events.pop_front();
      }
      batch.remaining = static_cast<std::uint16_t>(target->events.size());
      batch.overflow = std::exchange(target->overflow, false);
      w.bytes(encodeEventBatch(batch));
    }
  } else {
    status = mrpc_error::kCommandInvalid;
  }
  out = w.take();
  return true;
}

}  // namespace switchyard::testing
