#include "fabric/qemu/qmp_client.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace switchyard::qemu {

namespace {

// QMP messages are small; a line past this is not QEMU talking.
constexpr std::size_t kMaxLine = 4 << 20;

}  // namespace

Result<QmpSession> QmpSession::connect(const std::string& path, Deadline deadline) {
  sockaddr_un address{};
  if (path.size() >= sizeof address.sun_path) return fail(Code::kInvalidArgument, fmt::format("QMP socket path '{}' is too long for a Unix socket", path));
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  tcp::Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (fd.get() < 0) return fail(Code::kInternal, fmt::format("socket: {}", std::strerror(errno)));
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    if (errno != EINPROGRESS && errno != EAGAIN)
      return fail(Code::kUnavailable, fmt::format("QMP socket {}: {} (is the VM running?)", path, std::strerror(errno)));
    SY_TRY(tcp::waitFor(fd.get(), POLLOUT, deadline, fmt::format("connecting to QMP at {}", path)));
  }
  QmpSession session(std::move(fd), path);
  // QEMU greets a client only once it serves it: another client holding the socket shows as no greeting.
  auto greeting = session.readMessage(deadline);
  if (!greeting) return fail(greeting.error().wrap(fmt::format("QMP at {}: no greeting (another client may hold the socket)", path)));
  if (!greeting->contains("QMP")) return fail(Code::kUnavailable, fmt::format("{} does not speak QMP: it greeted with {}", path, greeting->dump(-1, ' ', false, Json::error_handler_t::replace)));
  SY_TRY(session.execute("qmp_capabilities", deadline));
  return session;
}

Result<Json> QmpSession::readMessage(Deadline deadline) {
  for (;;) {
    if (const auto end = buffer_.find('\n'); end != std::string::npos) {
      const std::string line = buffer_.substr(0, end);
      buffer_.erase(0, end + 1);
      if (line.find_first_not_of(" \r\t") == std::string::npos) continue;
      Json message = Json::parse(line, nullptr, false);
      if (message.is_discarded() || !message.is_object())
        return fail(Code::kUnavailable, fmt::format("QMP at {}: not a JSON object: {}", path_, line.substr(0, 200)));
      return message;
    }
    if (buffer_.size() > kMaxLine) return fail(Code::kUnavailable, fmt::format("QMP at {}: a line longer than {} bytes", path_, kMaxLine));
    SY_TRY(tcp::waitFor(fd_.get(), POLLIN, deadline, fmt::format("QMP at {}", path_)));
    char chunk[8192];
    const auto n = ::recv(fd_.get(), chunk, sizeof chunk, 0);
    if (n == 0) return fail(Code::kUnavailable, fmt::format("QMP at {}: QEMU closed the connection", path_));
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return fail(Code::kUnavailable, fmt::format("QMP at {}: recv: {}", path_, std::strerror(errno)));
    }
    buffer_.append(chunk, static_cast<std::size_t>(n));
  }
}

Result<Json> QmpSession::execute(const std::string& command, const Json& arguments, Deadline deadline) {
  const unsigned id = ++id_;
  Json request{{"execute", command}, {"id", id}};
  if (!arguments.empty()) request["arguments"] = arguments;
  const std::string line = request.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
  SY_TRY(tcp::writeAll(fd_.get(), {reinterpret_cast<const std::uint8_t*>(line.data()), line.size()}, deadline, fmt::format("QMP {} at {}", command, path_)));
  for (;;) {
    SY_ASSIGN(auto message, readMessage(deadline));
    if (message.contains("event")) {
      events_.push_back(std::move(message));
      continue;
    }
    if (!message.contains("id") || message["id"] != id) continue;  // an answer to a command we gave up on
    if (message.contains("return")) return std::move(message["return"]);
    const auto& error = message.value("error", Json::object());
    lastError_ = {error.value("class", "GenericError"), error.value("desc", message.dump(-1, ' ', false, Json::error_handler_t::replace))};
    return fail(lastError_.errorClass == "DeviceNotFound" ? Code::kNotFound : Code::kFailedPrecondition,
                fmt::format("QEMU refused {}: {}", command, lastError_.description));
  }
}

Result<Json> QmpSession::waitEvent(const std::function<bool(const Json&)>& match, Deadline deadline) {
  for (;;) {
    for (auto it = events_.begin(); it != events_.end(); ++it)
      if (match(*it)) {
        Json event = std::move(*it);
        events_.erase(it);
        return event;
      }
    SY_ASSIGN(auto message, readMessage(deadline));
    if (message.contains("event")) events_.push_back(std::move(message));
  }
}

}  // namespace switchyard::qemu
