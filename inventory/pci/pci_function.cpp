#include "inventory/pci/pci_function.h"

#include <fmt/format.h>

#include <charconv>

namespace switchyard {

namespace {

template <typename T>
bool parseHex(std::string_view text, std::size_t digits, T& out) {
  if (text.size() != digits) return false;
  unsigned long value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, 16);
  if (ec != std::errc() || end != text.data() + text.size()) return false;
  out = static_cast<T>(value);
  return true;
}

}  // namespace

std::string toString(const PciAddress& a) { return fmt::format("{:04x}:{:02x}:{:02x}.{:x}", a.domain, a.bus, a.device, a.function); }

std::optional<PciAddress> parsePciAddress(std::string_view text) {
  PciAddress a;
  if (text.size() == 12) {
    if (text[4] != ':' || !parseHex(text.substr(0, 4), 4, a.domain)) return std::nullopt;
    text.remove_prefix(5);
  }
  if (text.size() != 7 || text[2] != ':' || text[5] != '.') return std::nullopt;
  if (!parseHex(text.substr(0, 2), 2, a.bus) || !parseHex(text.substr(3, 2), 2, a.device) || !parseHex(text.substr(6, 1), 1, a.function))
    return std::nullopt;
  if (a.device > 31 || a.function > 7) return std::nullopt;
  return a;
}

std::string_view toString(PciePortType type) {
  switch (type) {
    case PciePortType::kNone: return "pci";
    case PciePortType::kEndpoint: return "endpoint";
    case PciePortType::kRootPort: return "root-port";
    case PciePortType::kSwitchUpstream: return "switch-upstream";
    case PciePortType::kSwitchDownstream: return "switch-downstream";
    case PciePortType::kOther: return "other";
  }
  return "other";
}

std::string formatSerialNumber(std::uint64_t serial) {
  std::string out;
  for (int shift = 56; shift >= 0; shift -= 8) {
    if (!out.empty()) out += '-';
    out += fmt::format("{:02x}", (serial >> shift) & 0xFF);
  }
  return out;
}

std::optional<std::uint64_t> parseSerialNumber(std::string_view text) {
  if (text.size() != 23) return std::nullopt;
  std::uint64_t serial = 0;
  for (std::size_t i = 0; i < 8; ++i) {
    if (i > 0 && text[i * 3 - 1] != '-') return std::nullopt;
    std::uint8_t byte = 0;
    if (!parseHex(text.substr(i * 3, 2), 2, byte)) return std::nullopt;
    serial = (serial << 8) | byte;
  }
  return serial;
}

std::string linkSpeedText(int generation) {
  static constexpr std::string_view kSpeeds[] = {"", "2.5 GT/s", "5 GT/s", "8 GT/s", "16 GT/s", "32 GT/s", "64 GT/s"};
  if (generation < 1 || generation > 6) return "unknown";
  return std::string(kSpeeds[generation]);
}

std::string PciFunction::serial() const { return serialNumber ? formatSerialNumber(*serialNumber) : kernelSerial; }

bool PciFunction::hasSerial(std::string_view serial) const {
  if (serial.empty()) return false;
  if (serialNumber && formatSerialNumber(*serialNumber) == serial) return true;
  return !kernelSerial.empty() && kernelSerial == serial;
}

}  // namespace switchyard
