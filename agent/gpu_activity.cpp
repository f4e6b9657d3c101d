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
    if (!utilization && f[1].starts_with('[')) {  // [N/A]: unknown is not idle, unless MIG mode (HostOps asks)
      into.utilizationUnread[normalizeBusId(f[0])] = number<std::uint64_t>(f[2]).value_or(0);
      return;
    }
    if (!utilization || *utilization < 0 || *utilization > 100) {
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

namespace {

// A table row's words, its "|" borders and separators dropped.
std::vector<std::string_view> words(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (std::isspace(static_cast<unsigned char>(line[i])) || line[i] == '|')) ++i;
    const std::size_t from = i;
    while (i < line.size() && !std::isspace(static_cast<unsigned char>(line[i])) && line[i] != '|') ++i;
    if (i > from) out.push_back(line.substr(from, i - from));
  }
  return out;
}

}  // namespace

MigProcesses parseMigProcesses(std::string_view table) {
  std::map<int, std::string> busOf;  // nvidia-smi's GPU index -> bus id, from the GPU rows above the processes
  MigProcesses out;
  bool inProcesses = false;
  eachLine(table, [&](std::string_view line) {
    if (line.find("Processes:") != std::string_view::npos) {
      inProcesses = true;
      return;
    }
    const auto w = words(line);
    if (w.empty()) return;
    const auto index = number<int>(w[0]);
    if (!index) return;
    if (!inProcesses) {  // "|   0  NVIDIA H100 80GB HBM3   On  |   00000000:00:06.0 Off |": the first row of a GPU
      for (const auto word : w)
        if (word.size() >= 12 && looksLikeBusId(word) && word.find(':') != word.rfind(':')) {
          busOf.try_emplace(*index, normalizeBusId(word));
          break;
        }
      return;
    }
    // "|    1    3    0      34965      C   python                          14195MiB |"
    if (w.size() < 7) return;
    const auto gi = number<int>(w[1]);
    const auto pid = number<int>(w[3]);
    const auto bus = busOf.find(*index);
    if (!gi || !pid || *pid <= 0 || bus == busOf.end()) return;  // N/A: not in a GPU instance
    std::string name(w[5]);
    for (std::size_t i = 6; i + 1 < w.size(); ++i) name += " " + std::string(w[i]);
    auto memory = w.back();
    if (memory.ends_with("MiB")) memory.remove_suffix(3);
    out[bus->second][*gi].push_back({*pid, name, number<std::uint64_t>(memory).value_or(0)});
  });
  return out;
}

std::map<int, int> parseGpuInstanceStarts(std::string_view listing) {
  std::map<int, int> out;
  eachLine(listing, [&](std::string_view line) {
    const auto w = words(line);
    const auto name = std::find(w.begin(), w.end(), "MIG");
    if (name == w.end() || w.end() - name < 5) return;
    const auto gi = number<int>(*(name + 3));
    const std::string_view placement = *(name + 4);
    const auto start = number<int>(placement.substr(0, placement.find(':')));
    if (gi && start) out[*gi] = *start;
  });
  return out;
}

}  // namespace switchyard::agent
