// The pool's gauges, read from the engine at scrape time: devices by state, model and switch; one info
// series per device with DCGM exporter's label names (UUID, pci_bus_id, modelName, Hostname) so the two
// join; usable capacity per request shape (the number raw utilisation hides), MIG profiles and shares;
// stranded GPUs; systems and running operations.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "composer/engine/engine_client.h"
#include "composer/metrics/exposition.h"
#include "composer/web/capacity_cache.h"

namespace switchyard::web {

// switchyard_device_info lines rendered per chunk of the view's devices (pool_view.h): a chunk no change
// touched since the last scrape is the same object and is not rendered again. Holds the last scrape's
// chunks (so their addresses cannot be reused) and their text. Thread-safe; scrapes take turns.
class DeviceSeriesCache {
 public:
  // Appends the chunk's lines to `out`, rendering them with `render` when the chunk is new.
  void append(const std::shared_ptr<const std::vector<DeviceView>>& chunk, metrics::ExpositionWriter& out,
              const std::function<void(const DeviceView&, metrics::ExpositionWriter&)>& render);
  // Forgets chunks not seen since the last call.
  void endScrape();
  std::mutex& mutex() { return mutex_; }

 private:
  struct Entry {
    std::shared_ptr<const std::vector<DeviceView>> chunk;
    std::string lines;
    bool seen = false;
  };
  std::mutex mutex_;
  std::unordered_map<const void*, Entry> entries_;
};

// Whether a scrape writes switchyard_device_info, one series per device (about 150 bytes each: 15 MB at
// 100,000 GPUs). Like exporters with a family of high cardinality, it can be turned off; kAuto writes it
// for pools of up to kAutoDeviceSeriesLimit devices. switchyard_device_series_written says which.
enum class DeviceSeries { kAuto, kAll, kNone };
inline constexpr std::size_t kAutoDeviceSeriesLimit = 10'000;
[[nodiscard]] std::optional<DeviceSeries> parseDeviceSeries(std::string_view text);  // auto, all, none

// The share sizes (thousandths of a GPU) whose capacity the gauges report.
inline const std::vector<int> kReportedShares{250, 500};

// Runs on the caller's thread, from the engine's published view (never on the control thread: it would
// hold it for the whole scrape).
// With caches, unchanged parts of the per-device family are not rendered again, and capacity comes from a
// CapacityCache (capacity_cache.h: never older than the pool when cheap to make, else stale while a newer
// one is made); without, everything is made afresh.
[[nodiscard]] Result<void> writePoolMetrics(const EngineClient& engine, metrics::ExpositionWriter& out, DeviceSeriesCache* devices = nullptr,
                                            CapacityCache* capacity = nullptr, DeviceSeries series = DeviceSeries::kAuto);

}  // namespace switchyard::web
