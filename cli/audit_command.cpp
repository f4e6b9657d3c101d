#include "cli/audit_command.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <ctime>
#include <iostream>

namespace yardctl {

namespace pb = switchyard::v1;

std::optional<std::string> auditTime(const std::string& text) {
  if (text.size() >= 10 && text[4] == '-') return text;  // an absolute time: yardd checks its form
  if (text.size() < 2) return std::nullopt;
  std::int64_t amount = 0;
  for (std::size_t i = 0; i + 1 < text.size(); ++i) {
    if (text[i] < '0' || text[i] > '9' || amount > 100'000'000) return std::nullopt;
    amount = amount * 10 + (text[i] - '0');
  }
  const std::int64_t unit = text.back() == 's' ? 1 : text.back() == 'm' ? 60 : text.back() == 'h' ? 3600 : text.back() == 'd' ? 86'400 : 0;
  if (unit == 0) return std::nullopt;
  const std::time_t at = std::time(nullptr) - static_cast<std::time_t>(amount * unit);
  std::tm utc{};
  gmtime_r(&at, &utc);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z", utc.tm_year + 1900, utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min,
                     utc.tm_sec);
}

void printAudit(const pb::ListAuditResponse& r, std::ostream& out) {
  Table t({"SEQ", "TIME", "WHO", "ROLE", "TENANT", "ACTION", "TARGET", "RESULT", "OPERATION", "OUTCOME", "DETAIL"});
  for (const auto& a : r.records())
    t.add({std::to_string(a.sequence()), a.at(), a.caller().identity(), a.caller().role(), a.tenant().empty() ? "-" : a.tenant(), a.action(),
           a.target(), a.result(), a.operation_id().empty() ? "-" : a.operation_id(),
           a.outcome().empty() ? (a.operation_id().empty() ? "-" : "running") : a.outcome(), a.message()});
  t.print(out);
  if (r.records_size() > 0)
    out << fmt::format("(older: yardctl audit --before {})\n", r.records(r.records_size() - 1).sequence());
}

void addAuditCommand(CLI::App& app, ListAuditCall call, std::function<Format()> format, int& rc) {
  struct Flags {
    std::string tenant, identity, since, until;
    int limit = 100;
    std::uint64_t before = 0;
  };
  auto flags = std::make_shared<Flags>();
  auto* audit = app.add_subcommand("audit",
                                   "Who asked for what and when, and how it ended: every compose, decompose, attach and detach, "
                                   "accepted or refused, and every password lockout (action lockout), newest first");
  audit->add_option("--tenant", flags->tenant, "Only this tenant's records (its systems, or asked by its identities)");
  audit->add_option("--identity", flags->identity, "Only requests by this identity");
  audit->add_option("--since", flags->since, "From this time: RFC 3339 (2026-11-23T09:00:00Z) or ago (30m, 12h, 7d)");
  audit->add_option("--until", flags->until, "Before this time (same forms)");
  audit->add_option("--limit", flags->limit, "At most this many records")->check(CLI::Range(1, 10'000))->capture_default_str();
  audit->add_option("--before", flags->before, "Only records older than this sequence number (the next page)");
  audit->callback([flags, call = std::move(call), format = std::move(format), &rc] {
    pb::ListAuditRequest req;
    req.set_tenant(flags->tenant);
    req.set_identity(flags->identity);
    for (auto [text, set] : {std::pair{&flags->since, &pb::ListAuditRequest::set_since<const std::string&>},
                             std::pair{&flags->until, &pb::ListAuditRequest::set_until<const std::string&>}}) {
      if (text->empty()) continue;
      auto t = auditTime(*text);
      if (!t) {
        std::cerr << fmt::format("error: '{}' is neither an RFC 3339 time nor an age like 30m, 12h or 7d\n", *text);
        rc = 2;
        return;
      }
      (req.*set)(*t);
    }
    req.set_limit(flags->limit);
    req.set_before_sequence(flags->before);
    pb::ListAuditResponse r;
    if ((rc = call(req, r)) != 0) return;
    if (format() == Format::kJson)
      std::cout << toJson(r) << "\n";
    else
      printAudit(r, std::cout);
  });
}

}  // namespace yardctl
