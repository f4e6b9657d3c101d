// What idle reclaim's activity sampling costs (issue 40 part 4, ADR 0019): a pool filled with 8-GPU systems
// on simulated hosts (half their GPUs busy), then rounds of Engine::sampleActivity() (ask every composed
// host, record every GPU's sample, publish the view), and a compose/decompose probe on the one host left
// free, timed alone and while sampling runs back to back: does sampling stall composes?
//   switchyard_bench idle --gpus 10000 --rounds 20 --seconds 10
#pragma once

namespace switchyard::bench {

struct IdleBenchOptions {
  int gpus = 10'000;
  int rounds = 20;     // timed sampling rounds
  double seconds = 5;  // each phase of the compose probe (alone, then while sampling)
};

int benchIdleSampling(const IdleBenchOptions& options);

}  // namespace switchyard::bench
