// Do reads stall writes? Compose latency on a large pool, idle and while readers fetch /metrics and the
// dashboard's endpoints in a loop, plus what each read costs and weighs, and a full device listing through
// gRPC pages (what `yardctl devices` does).
//   switchyard_bench reads --gpus 100000 --seconds 10 --readers 2
#pragma once

#include <string>
#include <vector>

namespace switchyard::bench {

struct ReadLoadOptions {
  int gpus = 100'000;
  double seconds = 10;  // per phase (idle, loaded)
  int readers = 2;      // threads, each fetching every path in `paths` in turn
  std::vector<std::string> paths{"/metrics", "/api/v1/pool"};
  int composed = 200;   // systems composed before measuring, so the pool is not empty
  std::string deviceSeries = "auto";  // /metrics' per-device family: auto, all, none (yardd's --metrics-device-series)
};

int benchReadLoad(const ReadLoadOptions& options);

}  // namespace switchyard::bench
