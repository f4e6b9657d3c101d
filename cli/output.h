// How yardctl prints: aligned tables for people, protobuf's canonical JSON for scripts.
#pragma once

#include <google/protobuf/message.h>

#include <iosfwd>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "switchyard/v1/switchyard.pb.h"

namespace yardctl {

enum class Format { kTable, kJson };

class Table {
 public:
  explicit Table(std::vector<std::string> headers) : headers_(std::move(headers)) {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void print(std::ostream& out) const;

 private:
  std::vector<std::string> headers_;
  std::vector<std::vector<std::string>> rows_;
};

// Field names as in the .proto (snake_case), every field present: stable for scripts.
[[nodiscard]] std::string toJson(const google::protobuf::Message& message);

[[nodiscard]] std::string stateName(switchyard::v1::SystemState s);
[[nodiscard]] std::string stateName(switchyard::v1::OperationState s);
[[nodiscard]] std::string kindName(switchyard::v1::OperationKind k);
[[nodiscard]] std::string allocationName(switchyard::v1::DeviceAllocation a);

// What an empty filtered list prints instead of its table: "no system matches -l 'team=x', --tenant a
// (`yardctl systems` lists them all)". Empty when no filter is set (the list's own empty message applies).
// `filters`: flag and value, unset ones empty.
[[nodiscard]] std::string noneMatched(std::string_view what, std::string_view command,
                                      const std::vector<std::pair<std::string, std::string>>& filters);

void printSystems(const switchyard::v1::ListSystemsResponse& r, std::ostream& out);
void printSystem(const switchyard::v1::System& s, std::ostream& out);
void printDevices(const switchyard::v1::ListDevicesResponse& r, std::ostream& out);
void printHosts(const switchyard::v1::ListHostsResponse& r, std::ostream& out);
void printTopology(const switchyard::v1::Topology& t, std::ostream& out);
void printOperations(const switchyard::v1::ListOperationsResponse& r, std::ostream& out);
void printOperation(const switchyard::v1::Operation& op, std::ostream& out);
void printPlan(const switchyard::v1::PlanResponse& p, bool explain, std::ostream& out);
void printEvent(const switchyard::v1::Event& e, std::ostream& out);
void printCapacity(const switchyard::v1::Capacity& c, std::ostream& out);
void printQueue(const switchyard::v1::ListQueueResponse& r, std::ostream& out);
// "-" for an empty text.
[[nodiscard]] std::string orDash(const std::string& s);
// "2h5m" from a number of seconds; "-" for 0.
[[nodiscard]] std::string durationText(std::int64_t seconds);

}  // namespace yardctl
