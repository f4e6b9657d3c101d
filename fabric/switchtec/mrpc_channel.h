// How MRPC commands reach a Switchtec chip: over the management Ethernet transport (TCP, default port
// 54545) or through the kernel's switchtec driver (/dev/switchtecN). A channel carries one command at a
// time, as the chip does per connection; MrpcPool keeps several so that commands for different hosts run
// at once. Every call has a deadline; a transport failure is an error, an MRPC return code is a value.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "composer/model/error.h"
#include "fabric/switchtec/bytes.h"

namespace switchyard::switchtec {

using Deadline = std::chrono::steady_clock::time_point;

struct MrpcReply {
  std::uint32_t status = 0;  // 0: done; otherwise the firmware's return code (protocol.h mrpc_error)
  Bytes output;              // exactly the bytes asked for
};

class MrpcChannel {
 public:
  virtual ~MrpcChannel() = default;
  // Runs one command. kDeadlineExceeded when no answer came in time (the chip may still run it);
  // kUnavailable when the transport broke. After either, the channel is not used again.
  [[nodiscard]] virtual Result<MrpcReply> call(std::uint32_t commandWord, std::span<const std::uint8_t> payload,
                                               std::size_t outputBytes, Deadline deadline) = 0;
  // Reads `bytes` of the global address space (device id, partition): Ethernet only; the kernel
  // driver exposes these in sysfs instead.
  [[nodiscard]] virtual Result<Bytes> readGas(std::uint32_t offset, std::uint16_t bytes, Deadline deadline) = 0;
  [[nodiscard]] virtual std::string describe() const = 0;
};

// "HOST[:PORT][@INSTANCE]" (Ethernet) or a path such as /dev/switchtec0 (the kernel driver).
struct Endpoint {
  std::string host;  // empty for a device path
  std::uint16_t port = 0;
  std::uint8_t instance = 0;
  std::string devicePath;
  [[nodiscard]] std::string describe() const;
};
[[nodiscard]] Result<Endpoint> parseEndpoint(std::string_view text);

[[nodiscard]] Result<std::unique_ptr<MrpcChannel>> openChannel(const Endpoint& endpoint, Deadline deadline);

// Up to `size` open channels to one endpoint, opened on demand and reused; a channel whose call failed
// at the transport is closed instead of returned.
class MrpcPool {
 public:
  MrpcPool(Endpoint endpoint, std::size_t size) : endpoint_(std::move(endpoint)), size_(size) {}
  [[nodiscard]] Result<MrpcReply> call(std::uint32_t commandWord, std::span<const std::uint8_t> payload, std::size_t outputBytes,
                                       Deadline deadline);
  // Runs `work` on one channel held for its whole length (a multi-command dump).
  [[nodiscard]] Result<void> withChannel(Deadline deadline, const std::function<Result<void>(MrpcChannel&)>& work);
  [[nodiscard]] Result<Bytes> readGas(std::uint32_t offset, std::uint16_t bytes, Deadline deadline);
  [[nodiscard]] const Endpoint& endpoint() const { return endpoint_; }
  // Commands sent so far (what "commands per compose" is measured by).
  [[nodiscard]] std::uint64_t commandsSent() const;

 private:
  Result<std::unique_ptr<MrpcChannel>> acquire(Deadline deadline);
  void release(std::unique_ptr<MrpcChannel> channel, bool healthy);

  Endpoint endpoint_;
  std::size_t size_;
  mutable std::mutex mutex_;
  std::condition_variable freed_;
  std::vector<std::unique_ptr<MrpcChannel>> idle_;
  std::size_t open_ = 0;
  std::uint64_t commands_ = 0;
};

}  // namespace switchyard::switchtec
