// Fuzz target: the small text parsers that read bytes from outside yardd and had no target of their own
// (issue "No request can stop yardd", item 2): what yard-agent reads from nvidia-smi (the CSV queries, the
// plain table's processes, `mig -lgi`), and what users type into flags and requests (label selectors,
// durations, RFC 3339 times, listen addresses). The first byte picks the parser, the rest is its input.
// Whatever the bytes, no crash, hang or leak, and what parses keeps its promise (a listen port is 0-65535, a
// duration is not negative, a selector can be matched).
//
// Built as the other targets are (tests/CMakeLists.txt): a libFuzzer binary in the fuzz build, and a replay of
// the committed corpus (tests/fuzz/corpus/text_inputs) in every build.
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>

#include "agent/gpu_activity.h"
#include "composer/model/clock.h"
#include "composer/model/label_selector.h"
#include "composer/model/listen_address.h"
#include "composer/model/queue.h"

using namespace switchyard;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 7) {
    case 0: {  // nvidia-smi --query-gpu, then --query-compute-apps, into one activity
      agent::ParsedActivity activity;
      agent::parseGpuUtilization(text, activity);
      agent::parseComputeApps(text, activity);
      for (const auto& [bus, gpu] : activity.gpus)
        if (bus.empty() || gpu.utilizationPercent < 0) std::abort();
      break;
    }
    case 1:
      (void)agent::parseMigProcesses(text);
      break;
    case 2:
      (void)agent::parseGpuInstanceStarts(text);
      break;
    case 3: {
      auto selector = LabelSelector::parse(text);
      if (selector) (void)selector->matches({{"team", "vision"}, {"gpu", ""}, {std::string(text.substr(0, 63)), "x"}});
      break;
    }
    case 4:
      if (auto d = parseDuration(text); d && d->count() < 0) std::abort();
      break;
    case 5:
      (void)parseTimestamp(text);
      break;
    case 6:
      if (auto listen = parseListenAddress(text, "--listen"); listen && (listen->port < 0 || listen->port > 65535)) std::abort();
      break;
  }
  return 0;
}
