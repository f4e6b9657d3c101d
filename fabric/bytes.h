// Byte buffers for the switches' binary wire formats: a writer that appends fields and a reader that never
// reads past its end (a short or hostile reply is an error value, never a crash). Switchtec MRPC and CXL
// FM-API payloads are little-endian; a few transport headers use network order (`be16`, `be32`).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace switchyard::wire {

using Bytes = std::vector<std::uint8_t>;

class ByteWriter {
 public:
  ByteWriter& u8(std::uint8_t v) {
    out_.push_back(v);
    return *this;
  }
  ByteWriter& u16(std::uint16_t v) { return u8(static_cast<std::uint8_t>(v)).u8(static_cast<std::uint8_t>(v >> 8)); }
  ByteWriter& u32(std::uint32_t v) { return u16(static_cast<std::uint16_t>(v)).u16(static_cast<std::uint16_t>(v >> 16)); }
  ByteWriter& u64(std::uint64_t v) { return u32(static_cast<std::uint32_t>(v)).u32(static_cast<std::uint32_t>(v >> 32)); }
  ByteWriter& be16(std::uint16_t v) { return u8(static_cast<std::uint8_t>(v >> 8)).u8(static_cast<std::uint8_t>(v)); }
  ByteWriter& be32(std::uint32_t v) { return be16(static_cast<std::uint16_t>(v >> 16)).be16(static_cast<std::uint16_t>(v)); }
  ByteWriter& zeros(std::size_t n) {
    out_.insert(out_.end(), n, 0);
    return *this;
  }
  ByteWriter& bytes(std::span<const std::uint8_t> b) {
    out_.insert(out_.end(), b.begin(), b.end());
    return *this;
  }
  // Pads with zeros up to `size` bytes in all (no-op when already there).
  ByteWriter& padTo(std::size_t size) {
    if (out_.size() < size) out_.resize(size, 0);
    return *this;
  }
  [[nodiscard]] std::size_t size() const { return out_.size(); }
  // Overwrites a little-endian u32 at `offset` (a length field known only once the body is written).
  void patchU32(std::size_t offset, std::uint32_t v) {
    for (int i = 0; i < 4; ++i) out_.at(offset + static_cast<std::size_t>(i)) = static_cast<std::uint8_t>(v >> (8 * i));
  }
  [[nodiscard]] Bytes take() { return std::move(out_); }

 private:
  Bytes out_;
};

// Reads fields in order; after the first read past the end every read returns 0 and ok() is false.
class ByteReader {
 public:
  explicit ByteReader(std::span<const std::uint8_t> in) : in_(in) {}
  std::uint8_t u8() {
    if (!need(1)) return 0;
    return in_[pos_++];
  }
  std::uint16_t u16() {
    const auto lo = u8();
    return static_cast<std::uint16_t>(lo | (u8() << 8));
  }
  std::uint32_t u32() {
    const std::uint32_t lo = u16();
    return lo | (static_cast<std::uint32_t>(u16()) << 16);
  }
  std::uint64_t u64() {
    const std::uint64_t lo = u32();
    return lo | (static_cast<std::uint64_t>(u32()) << 32);
  }
  std::uint16_t be16() {
    const auto hi = u8();
    return static_cast<std::uint16_t>((hi << 8) | u8());
  }
  std::uint32_t be32() {
    const std::uint32_t hi = be16();
    return (hi << 16) | be16();
  }
  void skip(std::size_t n) {
    if (need(n)) pos_ += n;
  }
  [[nodiscard]] std::span<const std::uint8_t> take(std::size_t n) {
    if (!need(n)) return {};
    auto s = in_.subspan(pos_, n);
    pos_ += n;
    return s;
  }
  [[nodiscard]] bool ok() const { return ok_; }
  [[nodiscard]] std::size_t position() const { return pos_; }
  [[nodiscard]] std::size_t remaining() const { return ok_ ? in_.size() - pos_ : 0; }

 private:
  bool need(std::size_t n) {
    if (!ok_ || in_.size() - pos_ < n) {
      ok_ = false;
      return false;
    }
    return true;
  }
  std::span<const std::uint8_t> in_;
  std::size_t pos_ = 0;
  bool ok_ = true;
};

}  // namespace switchyard::wire
