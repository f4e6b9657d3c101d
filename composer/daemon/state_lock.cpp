#include "composer/daemon/state_lock.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

namespace switchyard {

Result<StateLock> StateLock::acquire(const std::filesystem::path& lockFile, const std::string& what) {
  std::error_code ec;
  std::filesystem::create_directories(lockFile.parent_path(), ec);
  const int fd = ::open(lockFile.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return fail(Code::kFailedPrecondition, fmt::format("cannot open the lock file {}: {}", lockFile.string(), std::strerror(errno)));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    char buffer[32] = {};
    const ssize_t n = ::pread(fd, buffer, sizeof buffer - 1, 0);
    ::close(fd);
    if (error != EWOULDBLOCK)
      return fail(Code::kFailedPrecondition, fmt::format("cannot lock {}: {}", lockFile.string(), std::strerror(error)));
    std::string holder = n > 0 ? std::string(buffer, static_cast<std::size_t>(n)) : std::string();
    while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
    return fail(Code::kFailedPrecondition,
                fmt::format("another yardd{} is using {} (it holds {}); stop it first, or give this one its own --state-dir",
                            holder.empty() ? "" : " (pid " + holder + ")", what, lockFile.string()));
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    // Locked all the same: only the pid in the message of a second yardd is lost.
  }
  return StateLock(fd);
}

StateLock& StateLock::operator=(StateLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

StateLock::~StateLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the last descriptor releases the lock
}

}  // namespace switchyard
