// How fast does freed capacity reach the queue? A pool filled with 8-GPU systems (one per host), a queue of
// waiting requests of 1, 2, 4 and 8 GPUs in three priority classes, then rounds of: decompose one system,
// and time from that decompose's end to the bind of the request the queue admitted on what it freed
// (switch latency zero: what the engine itself costs), plus each admission pass alone.
//   switchyard_bench queue --gpus 10000 --queued 1000 --rounds 300
#pragma once

namespace switchyard::bench {

struct QueueBenchOptions {
  int gpus = 10'000;
  int queued = 1'000;  // kept topped up: each admission is followed by a new queued request
  int rounds = 300;
};

int benchQueueAdmission(const QueueBenchOptions& options);

}  // namespace switchyard::bench
