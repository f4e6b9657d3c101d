#include "cli/usage_output.h"

#include <fmt/format.h>

#include "cli/output.h"

namespace yardctl {

namespace pb = switchyard::v1;

namespace {

// A label's value in a row: "-" where the row's systems had no such label, "" (quoted) where it had no value.
std::string labelCell(const pb::UsageRow& row, const std::string& key) {
  const auto it = row.labels().find(key);
  if (it == row.labels().end()) return "-";
  return it->second.empty() ? "\"\"" : it->second;
}

std::string csvField(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

void printUsage(const pb::UsageResponse& r, const std::vector<std::string>& labelKeys, std::ostream& out) {
  out << fmt::format("GPU-hours{}{} from {} to {}{}\n", r.total_memory_gib_hours() > 0 ? ", pooled memory GiB-hours" : "",
                     r.total_device_hours() > 0 ? ", drive- and NIC-hours" : "", r.since(), r.until(),
                     r.history_from().empty() || r.history_from() <= r.since() ? "" : fmt::format(" (the operation log starts at {})", r.history_from()));
  if (r.rows().empty()) {
    out << "no GPU, pooled memory, drive or NIC was held by a system in that time\n";
    return;
  }
  const bool memory = r.total_memory_gib_hours() > 0;
  const bool devices = r.total_device_hours() > 0;
  std::vector<std::string> header{"TENANT", "SYSTEM", "MODEL"};
  for (const auto& k : labelKeys) header.push_back(upper(k));
  for (const char* h : {"GPU-HOURS", "IDLE", "SYSTEMS"}) header.emplace_back(h);
  if (memory) header.emplace_back("GIB-HOURS");
  if (devices) header.emplace_back("DEVICE-HOURS");
  Table t(header);
  auto idle = [](double idleHours, double hours) {
    return hours > 0 ? fmt::format("{:.2f} ({:.0f}%)", idleHours, 100 * idleHours / hours) : fmt::format("{:.2f}", idleHours);
  };
  for (const auto& row : r.rows()) {
    std::vector<std::string> cells{orDash(row.tenant()),
                                   row.system_name().empty() ? orDash(row.system_id()) : fmt::format("{} ({})", row.system_name(), row.system_id()),
                                   orDash(row.model())};
    for (const auto& k : labelKeys) cells.push_back(labelCell(row, k));
    cells.push_back(fmt::format("{:.2f}", row.gpu_hours()));
    cells.push_back(idle(row.idle_gpu_hours(), row.gpu_hours()));
    cells.push_back(std::to_string(row.systems()));
    if (memory) cells.push_back(row.memory_gib_hours() > 0 ? fmt::format("{:.2f}", row.memory_gib_hours()) : "-");
    if (devices) cells.push_back(row.device_hours() > 0 ? fmt::format("{:.2f}", row.device_hours()) : "-");
    t.add(cells);
  }
  std::vector<std::string> total{"total", "", ""};
  total.resize(total.size() + labelKeys.size());
  total.push_back(fmt::format("{:.2f}", r.total_gpu_hours()));
  total.push_back(idle(r.total_idle_gpu_hours(), r.total_gpu_hours()));
  total.emplace_back();
  if (memory) total.push_back(fmt::format("{:.2f}", r.total_memory_gib_hours()));
  if (devices) total.push_back(fmt::format("{:.2f}", r.total_device_hours()));
  t.add(total);
  t.print(out);
}

void printUsageCsv(const pb::UsageResponse& r, const std::vector<std::string>& labelKeys, std::ostream& out) {
  // The columns of every release first; one "label:KEY" column per label grouped by after them.
  out << "tenant,system_id,system_name,model,gpu_hours,systems,idle_gpu_hours,memory_gib_hours,device_hours";
  for (const auto& k : labelKeys) out << ",label:" << k;
  out << "\n";
  for (const auto& row : r.rows()) {
    out << fmt::format("{},{},{},{},{:.4f},{},{:.4f},{:.4f},{:.4f}", csvField(row.tenant()), csvField(row.system_id()), csvField(row.system_name()),
                       csvField(row.model()), row.gpu_hours(), row.systems(), row.idle_gpu_hours(), row.memory_gib_hours(), row.device_hours());
    for (const auto& k : labelKeys) {
      const auto it = row.labels().find(k);
      out << "," << (it == row.labels().end() ? std::string() : csvField(it->second));
    }
    out << "\n";
  }
}

}  // namespace yardctl
