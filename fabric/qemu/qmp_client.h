// One QMP session with a QEMU process (the QEMU Machine Protocol: JSON objects, one per line, over a Unix
// socket). Connecting reads the greeting and negotiates capabilities; execute() sends a command and returns
// its "return" member, or its "error" as a Switchyard error; events that arrive meanwhile are kept, in order,
// for waitEvent(). Every step has a deadline. QEMU serves one client per QMP socket at a
// time, so a driver opens a session per call and holds none idle.
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "composer/model/error.h"
#include "fabric/tcp_stream.h"

namespace switchyard::qemu {

using Deadline = std::chrono::steady_clock::time_point;
using Json = nlohmann::json;

// A command QEMU refused: its error class ("GenericError", "DeviceNotFound", ...) and description.
struct QmpError {
  std::string errorClass;
  std::string description;
};

class QmpSession {
 public:
  // Connects to the QMP socket at `path` and negotiates (qmp_capabilities).
  [[nodiscard]] static Result<QmpSession> connect(const std::string& path, Deadline deadline);

  // Runs `command`: the reply's "return" member. A refusal is kFailedPrecondition (DeviceNotFound:
  // kNotFound) with QEMU's description, and lastError() tells its class.
  [[nodiscard]] Result<Json> execute(const std::string& command, const Json& arguments, Deadline deadline);
  [[nodiscard]] Result<Json> execute(const std::string& command, Deadline deadline) { return execute(command, Json::object(), deadline); }
  [[nodiscard]] const QmpError& lastError() const { return lastError_; }

  // Waits for an event that satisfies `match` (taking it, and keeping the others); kDeadlineExceeded when
  // none came in time.
  [[nodiscard]] Result<Json> waitEvent(const std::function<bool(const Json&)>& match, Deadline deadline);

 private:
  QmpSession(tcp::Fd fd, std::string path) : fd_(std::move(fd)), path_(std::move(path)) {}
  // The next JSON object QEMU sends.
  [[nodiscard]] Result<Json> readMessage(Deadline deadline);

  tcp::Fd fd_;
  std::string path_;
  std::string buffer_;  // bytes read past the last line
  std::deque<Json> events_;
  QmpError lastError_;
  unsigned id_ = 0;
};

}  // namespace switchyard::qemu
