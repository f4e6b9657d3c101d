#include "composer/model/queue.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <fmt/format.h>

namespace switchyard {

const std::vector<PriorityClass>& defaultPriorityClasses() {
  static const std::vector<PriorityClass> kClasses{{"production", 1000, false, true}, {"batch", 100, false, true}, {"spot", 0, true, false, false}};
  return kClasses;
}

std::optional<PriorityClass> parsePriorityClass(std::string_view text, std::string& error) {
  const auto eq = text.find('=');
  PriorityClass c;
  c.name = std::string(text.substr(0, eq));
  const bool nameOk = !c.name.empty() && c.name.size() <= 32 &&
                      std::all_of(c.name.begin(), c.name.end(), [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_'; });
  if (eq == std::string_view::npos || !nameOk) {
    error = fmt::format("'{}': expected NAME=VALUE[:preemptible[:requeue]][:preempting] with a name of letters, digits, '-' or '_'", text);
    return std::nullopt;
  }
  std::string_view rest = text.substr(eq + 1);
  if (const auto colon = rest.find(':'); colon != std::string_view::npos) {
    std::string_view flags = rest.substr(colon + 1);
    rest = rest.substr(0, colon);
    while (!flags.empty()) {
      const auto next = flags.find(':');
      const std::string_view flag = flags.substr(0, next);
      if (flag == "preemptible") c.preemptible = true;
      else if (flag == "preempting") c.preempting = true;
      else if (flag == "requeue") c.requeue = true;
      else {
        error = fmt::format("'{}': after the value only ':preemptible', ':requeue' and ':preempting' may follow", text);
        return std::nullopt;
      }
      flags = next == std::string_view::npos ? std::string_view{} : flags.substr(next + 1);
    }
  }
  if (c.requeue && !c.preemptible) {
    error = fmt::format("'{}': ':requeue' needs ':preemptible' (only a preempted system is queued again)", text);
    return std::nullopt;
  }
  auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), c.value);
  if (ec != std::errc{} || end != rest.data() + rest.size() || c.value < -1'000'000 || c.value > 1'000'000) {
    error = fmt::format("'{}': the value must be a whole number (higher goes first)", text);
    return std::nullopt;
  }
  return c;
}

// Why a request waits, short enough to keep per request and show in a list: the packing core's first line
// and the first few hosts' reasons, then how many hosts its answer covers past them (it names up to eight hosts
// per filter that rejected some and counts the rest in a last line).
std::string shortReason(std::string_view why, std::size_t unexplainedHosts) {
  constexpr std::size_t kLines = 4;
  std::size_t at = 0;
  for (std::size_t line = 0; line < kLines; ++line) {
    at = why.find('\n', at);
    if (at == std::string::npos) return std::string(why);
    ++at;
  }
  auto rest = static_cast<std::size_t>(std::count(why.begin() + static_cast<std::ptrdiff_t>(at), why.end(), '\n')) + 1;
  if (unexplainedHosts > 0) rest += unexplainedHosts - 1;  // the last line is the count, not a host
  return fmt::format("{}  ... and {} more (`yardctl plan --explain` lists every host)", std::string(why.substr(0, at)), rest);
}

std::string describeShape(const QueuedRequest& q) {
  if (q.gpuShareMilli != 0) return fmt::format("share {}m", q.gpuShareMilli);
  if (!q.gpuInstances.empty()) return fmt::format("{} MIG instance(s)", q.gpuInstances.size());
  if (!q.devices.empty()) return fmt::format("{} named device(s)", q.devices.size());
  std::string gpus = q.gpuCount > 0 || (q.pooledMemoryGiB == 0 && q.endpoints.empty())
                         ? fmt::format("{} GPU(s){}", q.gpuCount, q.model.empty() ? "" : " " + q.model)
                         : std::string();
  auto also = [&](const std::string& part) { gpus += (gpus.empty() ? "" : ", ") + part; };
  if (q.pooledMemoryGiB > 0) also(fmt::format("{} GiB pooled memory", q.pooledMemoryGiB));
  if (!q.endpoints.empty()) also(describe(q.endpoints));
  return gpus;
}

std::optional<std::chrono::milliseconds> parseDuration(std::string_view text) {
  using std::chrono::milliseconds;
  if (text.empty() || text.size() > 32) return std::nullopt;
  constexpr std::int64_t kMax = 10LL * 365 * 24 * 3600 * 1000;
  std::int64_t total = 0;
  std::size_t i = 0;
  bool bare = true;
  while (i < text.size()) {
    std::int64_t n = 0;
    auto [end, ec] = std::from_chars(text.data() + i, text.data() + text.size(), n);
    if (ec != std::errc{} || end == text.data() + i || n < 0) return std::nullopt;
    i = static_cast<std::size_t>(end - text.data());
    std::int64_t unit = 1000;  // a bare number is seconds
    if (i < text.size()) {
      bare = false;
      const std::string_view rest = text.substr(i);
      if (rest.starts_with("ms")) {
        unit = 1;
        i += 2;
      } else {
        switch (text[i]) {
          case 's': unit = 1000; break;
          case 'm': unit = 60'000; break;
          case 'h': unit = 3'600'000; break;
          case 'd': unit = 86'400'000; break;
          default: return std::nullopt;
        }
        ++i;
      }
    } else if (!bare) {
      return std::nullopt;  // "1h30": a number without its unit after a unit
    }
    if (n > kMax / unit) return std::nullopt;
    total += n * unit;
    if (total > kMax) return std::nullopt;
  }
  if (total <= 0) return std::nullopt;
  return milliseconds(total);
}

std::string formatDuration(std::chrono::milliseconds d) {
  std::int64_t ms = d.count();
  if (ms < 1000) return fmt::format("{}ms", ms);
  std::int64_t s = ms / 1000;
  std::string out;
  if (s >= 86'400) {
    out += fmt::format("{}d", s / 86'400);
    s %= 86'400;
  }
  if (s >= 3600) {
    out += fmt::format("{}h", s / 3600);
    s %= 3600;
  }
  if (s >= 60) {
    out += fmt::format("{}m", s / 60);
    s %= 60;
  }
  if (s > 0 || out.empty()) out += fmt::format("{}s", s);
  return out;
}

}  // namespace switchyard
