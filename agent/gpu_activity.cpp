#include "agent/gpu_activity.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <optional>

namespace switchyard::agent {

namespace {

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> fields(std::string_view line) {
  std::vector<std::string_view> out;
  while (true) {
    const auto comma = line.find(',');
    out.push_back(trimmed(line.substr(0, comma)));
    if (comma == std::string_view::npos) return out;
    line.remove_prefix(comma + 1);
  }
}

template <typename T>
std::optional<T> number(std::string_view text) {
  T value{};
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// Calls `line` for each non-empty line of `text`.
template <typename F>
void eachLine(std::string_view text, F&& line) {
  while (!text.empty()) {
    const auto end = text.find('\n');
    const auto l = trimmed(text.substr(0, end));
    if (!l.empty()) line(l);
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
}

bool looksLikeBusId(std::string_view s) { return s.size() >= 7 && s.find(':') != std::string_view::npos && s.find('.') != std::string_view::npos; }

}  // namespace

std::string normalizeBusId(std::string_view busId) {
  std::string out(trimmed(busId));
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out.size() > 12 ? out.substr(out.size() - 12) : out;
}

void parseGpuUtilization(std::string_view csv, ParsedActivity& into) {
  eachLine(csv, [&](std::string_view line) {
    const auto f = fields(line);
    if (f.size() != 3 || !looksLikeBusId(f[0])) {
      ++into.skippedLines;
      return;
    }
    const auto utilization = number<int>(f[1]);
    if (!utilization || *utilization < 0 || *utilization > 100) {  // [N/A]: unknown is not idle
      ++into.skippedLines;
      return;
    }
    into.gpus[normalizeBusId(f[0])] = {*utilization, number<std::uint64_t>(f[2]).value_or(0)};
  });
}

void parseComputeApps(std::string_view csv, ParsedActivity& into) {
  eachLine(csv, [&](std::string_view line) {
    const auto f = fields(line);
    // The name sits between the pid and the memory; rejoin it should it hold a comma.
    if (f.size() < 4 || !looksLikeBusId(f[0])) {
      ++into.skippedLines;
      return;
    }
    const auto pid = number<int>(f[1]);
    if (!pid || *pid <= 0) {
      ++into.skippedLines;
      return;
    }
    std::string name(f[2]);
    for (std::size_t i = 3; i + 1 < f.size(); ++i) name += ", " + std::string(f[i]);  // nvidia-smi separates with ", "
    into.processes[normalizeBusId(f[0])].push_back({*pid, name, number<std::uint64_t>(f.back()).value_or(0)});
  });
}

}  // namespace switchyard::agent
