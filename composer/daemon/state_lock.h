// One yardd per state directory (and per database): an exclusive advisory lock (flock) on a lock file,
// held for the life of the process and released by the kernel however it ends (kill -9 included). A second
// yardd on the same directory or database refuses to start and names the holder's pid.
#pragma once

#include <filesystem>

#include "composer/model/error.h"

namespace switchyard {

class StateLock {
 public:
  // Locks `lockFile` (created with its directory when missing) and writes this process's pid into it.
  // kFailedPrecondition, naming the holder's pid, when another process holds it; `what` names what is
  // protected in the message ("the state directory /var/lib/switchyard").
  [[nodiscard]] static Result<StateLock> acquire(const std::filesystem::path& lockFile, const std::string& what);
  StateLock(StateLock&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  StateLock& operator=(StateLock&& other) noexcept;
  StateLock(const StateLock&) = delete;
  StateLock& operator=(const StateLock&) = delete;
  ~StateLock();

 private:
  explicit StateLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace switchyard
