#include "composer/model/durable_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace switchyard {

namespace {

Result<void> failed(const std::filesystem::path& path, std::string_view what, int error) {
  return fail(Code::kUnavailable, fmt::format("{}: cannot {}: {}", path.string(), what, std::strerror(error)));
}

}  // namespace

Result<void> writeFileDurably(const std::filesystem::path& path, std::string_view content, mode_t mode) {
  std::filesystem::path tmp = path;
  tmp += ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return failed(tmp, "create", errno);
  auto abandon = [&](std::string_view what, int error) {
    ::close(fd);
    ::unlink(tmp.c_str());
    return failed(tmp, what, error);
  };
  if (::fchmod(fd, mode) != 0) return abandon("set its mode", errno);
  for (std::size_t done = 0; done < content.size();) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return abandon("write", n < 0 ? errno : ENOSPC);
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) return abandon("flush to disk", errno);
  if (::close(fd) != 0) {
    const int error = errno;
    ::unlink(tmp.c_str());
    return failed(tmp, "close", error);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int error = errno;
    ::unlink(tmp.c_str());
    return failed(path, "replace", error);
  }
  // The rename is durable once the directory is.
  const std::filesystem::path dir = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  if (const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dfd >= 0) {
    (void)::fsync(dfd);
    ::close(dfd);
  }
  return {};
}

Result<void> writePortFile(const std::filesystem::path& path, int port) {
  if (path.empty()) return {};
  return writeFileDurably(path, std::to_string(port) + "\n");
}

}  // namespace switchyard
