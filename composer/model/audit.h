// The audit trail: one record per request to change something (compose, decompose, attach, detach),
// accepted or refused, with who asked, for which tenant, and how it ended. Written by the engine in the
// same transaction as the operation it accepted (or on its own for a refusal); the outcome is filled in
// by the transaction that finishes the operation. Queried with `yardctl audit`.
#pragma once

#include <cstdint>
#include <string>

#include "composer/model/caller.h"
#include "composer/model/clock.h"

namespace switchyard {

struct AuditRecord {
  std::uint64_t sequence = 0;  // assigned by the engine, strictly increasing
  Timestamp at = 0;            // when the request came
  Caller caller;               // who asked, as authenticated
  std::string action;          // compose, decompose, attach, detach
  std::string target;          // the system as the request named it
  std::string tenant;          // the tenant of that system (or the one a compose asked for)
  std::string result;          // "accepted", or the refusal's code: PERMISSION_DENIED, RESOURCE_EXHAUSTED, ...
  std::string message;         // the refusal's reason, or what was placed
  std::string operationId;     // the accepted operation
  std::string outcome;         // succeeded or failed once the operation ended; empty before, and for refusals
  Timestamp finishedAt = 0;
};

// Which records to list, newest first. Empty or zero fields do not filter.
struct AuditQuery {
  std::string tenant;
  std::string identity;
  Timestamp since = 0;            // at >= since
  Timestamp until = 0;            // at < until
  std::uint64_t beforeSequence = 0;  // paging: only records older than this one
  std::size_t limit = 100;
};

}  // namespace switchyard
