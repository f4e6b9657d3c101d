// The emulator's faults and observations (see switchtec_emulator.h): what tests change and read from
// outside the wire protocol.
#include <algorithm>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tests/support/switchtec_emulator.h"

namespace switchyard::testing {

using namespace switchtec;

void SwitchtecEmulator::writeBindingsFile() const {
  if (options_.bindingsFile.empty()) return;
  nlohmann::json out = nlohmann::json::object();
  for (const auto& c : chips_)
    for (std::size_t i = 0; i < c->spec.endpoints.size(); ++i)
      if (auto b = bound_.find(emulatedPdfid(c->spec.id, i, 0)); b != bound_.end())
        out[fmt::format("pax{}-ep{}", c->spec.id, c->spec.endpoints[i].port)] = fmt::format("pax{}-p{}", b->second.pax, b->second.hostPort);
  const auto tmp = options_.bindingsFile.string() + ".tmp";
  std::ofstream(tmp) << out.dump() << "\n";
  std::filesystem::rename(tmp, options_.bindingsFile);
}

void SwitchtecEmulator::refuseBinds(int n, std::uint32_t status) {
  std::lock_guard lock(mutex_);
  refuseBinds_ = n;
  refuseStatus_ = status;
}

void SwitchtecEmulator::dropReplies(int n) {
  std::lock_guard lock(mutex_);
  dropReplies_ = n;
}

void SwitchtecEmulator::closeConnections(int n) {
  std::lock_guard lock(mutex_);
  closeConnections_ = n;
}

bool SwitchtecEmulator::setLinkUp(std::uint8_t pax, std::uint8_t port, bool up) {
  std::lock_guard lock(mutex_);
  Chip* c = chip(pax);
  if (!c) return false;
  auto ep = std::find_if(c->spec.endpoints.begin(), c->spec.endpoints.end(), [&](const EmulatedEndpoint& e) { return e.port == port; });
  const bool host = std::any_of(c->spec.hosts.begin(), c->spec.hosts.end(), [&](const EmulatedHost& h) { return h.port == port; });
  const bool fabric = std::any_of(c->spec.links.begin(), c->spec.links.end(), [&](const EmulatedLink& l) { return l.port == port; });
  if (ep == c->spec.endpoints.end() && !host && !fabric) return false;
  const bool wasUp = !c->linksDown.contains(port);
  if (wasUp == up) return true;
  if (host || fabric) {  // a host's or another chip's link: an event, and the port's LTSSM leaves L0
    if (up)
      c->linksDown.erase(port);
    else
      c->linksDown.insert(port);
    ByteWriter e;
    e.u16(port);
    pushEvent(*c, host ? (up ? GfmsEventCode::kHostLinkUp : GfmsEventCode::kHostLinkDown) : (up ? GfmsEventCode::kFabricLinkUp : GfmsEventCode::kFabricLinkDown),
              e.take());
    return true;
  }
  ByteWriter e;
  e.u16(port).u16(static_cast<std::uint16_t>(ep->functions.size()));
  if (up) {
    c->linksDown.erase(port);
    pushEvent(*c, GfmsEventCode::kDeviceAdd, e.take());
  } else {
    c->linksDown.insert(port);
    pushEvent(*c, GfmsEventCode::kDeviceDelete, e.take());
  }
  return true;
}

bool SwitchtecEmulator::raiseAer(std::uint8_t pax, std::uint8_t port, bool dpc) {
  std::lock_guard lock(mutex_);
  Chip* c = chip(pax);
  if (!c) return false;
  ByteWriter e;
  e.u16(port).u8(static_cast<std::uint8_t>(0x01 | (dpc ? 0x02 : 0))).u8(0).u32(0x4000).u32(0).u32(0).zeros(16);
  pushEvent(*c, GfmsEventCode::kAer, e.take());
  return true;
}

std::map<std::uint16_t, SwitchtecEmulator::BoundTo> SwitchtecEmulator::bindings() const {
  std::lock_guard lock(mutex_);
  return bound_;
}

std::uint16_t SwitchtecEmulator::pdfidOf(std::uint8_t pax, std::uint8_t port, int function) const {
  std::lock_guard lock(mutex_);
  const Chip* c = chip(pax);
  if (!c) return 0;
  for (std::size_t i = 0; i < c->spec.endpoints.size(); ++i)
    if (c->spec.endpoints[i].port == port) return emulatedPdfid(pax, i, static_cast<std::size_t>(function));
  return 0;
}

}  // namespace switchyard::testing
