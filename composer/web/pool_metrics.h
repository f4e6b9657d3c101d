// The pool's gauges, read from the engine at scrape time: devices by state, model and switch; one info
// series per device with DCGM exporter's label names (UUID, pci_bus_id, modelName, Hostname) so the two
// join; usable capacity per request shape (the number raw utilisation hides), MIG profiles and shares;
// stranded GPUs; systems and running operations.
#pragma once

#include "composer/engine/engine.h"
#include "composer/metrics/exposition.h"

namespace switchyard::web {

// The share sizes (thousandths of a GPU) whose capacity the gauges report.
inline const std::vector<int> kReportedShares{250, 500};

// Must run on the engine's control thread (inside Engine::async), where its reads answer inline.
[[nodiscard]] Result<void> writePoolMetrics(Engine& engine, metrics::ExpositionWriter& out);

}  // namespace switchyard::web
