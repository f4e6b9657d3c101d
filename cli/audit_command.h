// `yardctl audit`: who asked for what, when, and how it ended; filters by tenant, identity and time.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "cli/output.h"
#include "switchyard/v1/switchyard.grpc.pb.h"

namespace CLI {
class App;
}

namespace yardctl {

// Runs ListAudit; returns yardctl's exit code (the caller prints errors).
using ListAuditCall = std::function<int(const switchyard::v1::ListAuditRequest&, switchyard::v1::ListAuditResponse&)>;

void addAuditCommand(CLI::App& app, ListAuditCall call, std::function<Format()> format, int& rc);

// "2026-11-23T09:00:00Z" as it is, or a time ago ("90s", "30m", "12h", "7d") as RFC 3339 UTC; nothing if neither.
[[nodiscard]] std::optional<std::string> auditTime(const std::string& text);

void printAudit(const switchyard::v1::ListAuditResponse& r, std::ostream& out);

}  // namespace yardctl
