// switchyard_packbench: packing-quality and decision-latency benchmarks on the public Alibaba openb trace.
//
//   switchyard_packbench static     --workloads default,cpu250 --seeds 42-51 --out OUT
//   switchyard_packbench latency    --gpus 1000,10000,100000 --fill 0.5,0.9
//   switchyard_packbench composable --shapes mirror,16:8:2:16 --seeds 42-51
//   switchyard_packbench dynamic    --pools static,16:8:2:16 --loads 0.7,0.9,1.0,1.1
//   switchyard_packbench loop       --pools static,16:8:2:16 --modes fifo,loop --loads 0.9,1.0,1.1,1.2
//   switchyard_packbench compaction --pools static,16:8:2:16 --load 0.8 --target 99
//   switchyard_packbench optimality --servers 8 --shapes mirror,8:2:2:8 --seeds 42-51
//
// Traces are read from --traces (default ../shared/traces/alibaba-gpu-2023); nothing is copied.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <exception>
#include <thread>

#include "composer/packing/sharing/share_policy.h"
#include "tests/bench/packing/packbench_commands.h"

using namespace switchyard::bench;

namespace {

const std::vector<std::string> kAllWorkloads{
    "default",    "cpu050",     "cpu100",     "cpu200",     "cpu250",     "gpushare100", "gpushare40", "gpushare80",
    "gpuspec10",  "gpuspec20",  "gpuspec33",  "multigpu20", "multigpu40", "multigpu50"};
const std::vector<std::string> kDefaultPolicies{"random",      "first-fit",      "best-fit",    "worst-fit", "dot-product",
                                                "gpu-packing", "gpu-clustering", "hived-buddy", "fgd",       "switchyard",
                                                "switchyard-no-frag"};

// switchyard's settings from the flags --oracle-mix, --delta-resolution / --sigmoid-bins and --own-models-only,
// which static and dynamic share.
switchyard::sharing::SharePolicyOptions oursFrom(bool oracleMix, double deltaResolution, bool ownModelsOnly) {
  using switchyard::sharing::OtherModels;
  return {.learnMix = !oracleMix,
          .deltaResolution = deltaResolution,
          .otherModels = ownModelsOnly ? OtherModels::kIgnored : OtherModels::kFragmented};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Switchyard packing benchmarks on the Alibaba openb GPU trace (see docs/benchmarks/packing.md)."};
  app.require_subcommand(1);
  std::string traces = "../shared/traces/alibaba-gpu-2023";
  app.add_option("--traces", traces, "folder with openb_*.csv and fgd-expected-results/")->capture_default_str();

  auto* st = app.add_subcommand("static", "FGD's workload-inflation protocol on the fixed openb cluster");
  std::string workloads = "default", policies = fmt::format("{}", fmt::join(kDefaultPolicies, ",")), seeds = "42-51";
  std::string out = "packbench-out";
  double ratio = 1.3;
  unsigned jobs = std::max(1u, std::thread::hardware_concurrency());
  bool oracle = false, quiet = false;
  double resolution = 100;
  st->add_option("--workloads", workloads, "comma-separated pod lists, or 'all'")->capture_default_str();
  st->add_option("--policies", policies, "comma-separated policies")->capture_default_str();
  st->add_option("--seeds", seeds, "seeds: '42-51' or '42,43'")->capture_default_str();
  st->add_option("--ratio", ratio, "inflate the workload to this multiple of GPU capacity")->capture_default_str();
  st->add_option("--out", out, "folder for CSVs and the summary")->capture_default_str();
  st->add_option("--jobs", jobs, "runs in parallel")->capture_default_str();
  const std::string oracleHelp = "give switchyard the whole workload's shape mix (as FGD has) instead of learning it";
  st->add_flag("--oracle-mix", oracle, oracleHelp);
  st->add_option("--delta-resolution", resolution, "switchyard: fragmentation changes closer than this (milli-GPU) tie")
      ->capture_default_str();
  bool sigmoidBins = false;
  const std::string sigmoidHelp = "switchyard: compare changes in FGD's 0-100 sigmoid score instead of 0.1-GPU bins";
  st->add_flag("--sigmoid-bins", sigmoidBins, sigmoidHelp);
  bool ownModelsOnly = false;
  const std::string ownModelsHelp =
      "switchyard: leave shapes that need other GPU models out of a node's fragmentation (FGD counts the node's idle GPUs for them)";
  st->add_flag("--own-models-only", ownModelsOnly, ownModelsHelp);
  st->add_flag("--quiet", quiet, "no per-run progress lines");

  auto* lat = app.add_subcommand("latency", "decision latency, placements/s and memory at 1k, 10k, 100k GPUs");
  std::vector<int> sizes{1000, 10000, 100000};
  std::vector<double> fills{0.5, 0.9};
  std::string latPolicies = "switchyard,fgd,best-fit";
  size_t decisions = 10000, naiveDecisions = 500, warmup = 5000;
  std::string latOut = "packbench-out";
  lat->add_option("--gpus", sizes, "pool sizes in GPUs (openb nodes repeated)")->delimiter(',')->capture_default_str();
  lat->add_option("--fill", fills, "fractions of GPU capacity allocated before measuring")->delimiter(',')->capture_default_str();
  lat->add_option("--policies", latPolicies, "policies to time; 'fgd' is the naive re-implementation")->capture_default_str();
  lat->add_option("--decisions", decisions, "timed decisions per policy and pool")->check(CLI::PositiveNumber)->capture_default_str();
  lat->add_option("--naive-decisions", naiveDecisions, "naive fgd decides about this many of the timed requests, evenly spread (it is slow)")->capture_default_str();
  lat->add_option("--warmup", warmup, "untimed decisions first (our learner's window is 5000 requests)")->capture_default_str();
  std::string latPool = "static";
  lat->add_option("--pool", latPool,
                  "'static' (the servers) or a K:U:P:L composable pool of them, whose host-enclosure views the policies "
                  "choose on (switchyard-pool runs there only); written to latency_K-U-P-L.csv")
      ->capture_default_str();
  lat->add_option("--out", latOut, "folder for latency.csv")->capture_default_str();

  auto* comp = app.add_subcommand("composable", "the static protocol on composable pools of switch enclosures, against an LP bound");
  std::string compWorkloads = "default", compShapes = "mirror,16:8:2:16", compPolicies = "first-fit,best-fit,fgd,switchyard";
  std::string compSeeds = "42-51", compOut = "packbench-out";
  comp->add_option("--workloads", compWorkloads, "comma-separated pod lists, or 'all'; NAME+big adds 16/32-GPU servers, NAME+mig asks shares as MIG instances")
      ->capture_default_str();
  comp->add_option("--shapes", compShapes,
                   "pools: 'mirror' (one enclosure per server, K=8 U=1: must equal static mode) or K:U:P:L "
                   "(slots per enclosure, host ports per enclosure, ports per host, device limit per host)")
      ->capture_default_str();
  comp->add_option("--policies", compPolicies,
                   "comma-separated policies; besides the static ones, switchyard-pool (ours, measuring fragmentation over the "
                   "whole pool: an enclosure's free GPUs count as lost when no cabled host could use them)")
      ->capture_default_str();
  comp->add_option("--seeds", compSeeds, "seeds: '42-51' or '42,43'")->capture_default_str();
  comp->add_option("--ratio", ratio, "inflate the workload to this multiple of GPU capacity")->capture_default_str();
  comp->add_option("--out", compOut, "folder for CSVs and the summary")->capture_default_str();
  comp->add_option("--jobs", jobs, "runs in parallel")->capture_default_str();
  comp->add_flag("--quiet", quiet, "no per-run progress lines");
  ComposableReferences compReferences;
  comp->add_flag("--server-lp", compReferences.serverLp,
                 "also bound each pool with the server LP (each request on one host, with that host's CPU and memory; "
                 "GLPK column generation, up to minutes per workload, seed and pool)");
  comp->add_flag("--offline", compReferences.offline,
                 "also run each policy offline on the GPU requests that arrived by 100 % (whole-GPU requests first): a "
                 "feasible placement, so the optimum lies between it and the bound");

  auto* dyn = app.add_subcommand("dynamic", "Poisson arrivals and trace durations at offered loads; acceptance, waiting, churn");
  std::string dynWorkloads = "default", dynPools = "static,16:8:2:16", dynPolicies = "first-fit,best-fit,fgd,switchyard";
  std::string dynSeeds = "42-44", dynOut = "packbench-out";
  std::vector<double> loads{0.7, 0.8, 0.9, 1.0, 1.1};
  DynamicOptions dynOptions;
  dyn->add_option("--workloads", dynWorkloads, "comma-separated pod lists (they need creation/deletion times)")->capture_default_str();
  dyn->add_option("--pools", dynPools, "'static', 'mirror' or K:U:P:L composable pools")->capture_default_str();
  dyn->add_option("--loads", loads, "offered loads (GPU-time demand / capacity)")->delimiter(',')->capture_default_str();
  dyn->add_option("--policies", dynPolicies, "comma-separated policies; switchyard-pool runs on the composable pools only")->capture_default_str();
  dyn->add_option("--seeds", dynSeeds, "seeds: '42-44' or '42,43'")->capture_default_str();
  dyn->add_option("--arrivals", dynOptions.arrivals, "measured arrivals per run")->capture_default_str();
  dyn->add_option("--warmup", dynOptions.warmup, "arrivals before measuring")->capture_default_str();
  dyn->add_option("--max-duration", dynOptions.maxDurationSeconds, "durations are cut at this many seconds")->capture_default_str();
  dyn->add_option("--patience", dynOptions.patienceSeconds, "seconds a request waits before giving up")->capture_default_str();
  dyn->add_option("--backfill-depth", dynOptions.backfillDepth, "waiting requests tried after each departure")->capture_default_str();
  dyn->add_option("--out", dynOut, "folder for CSVs and the summary")->capture_default_str();
  dyn->add_option("--jobs", jobs, "runs in parallel")->capture_default_str();
  dyn->add_flag("--quiet", quiet, "no per-run progress lines");
  bool dynOwnModelsOnly = false, dynOracle = false, dynSigmoidBins = false;
  dyn->add_flag("--own-models-only", dynOwnModelsOnly, ownModelsHelp);
  dyn->add_flag("--oracle-mix", dynOracle, oracleHelp);
  dyn->add_flag("--sigmoid-bins", dynSigmoidBins, sigmoidHelp);

  auto* opt = app.add_subcommand("optimality", "each policy against the exact optimum (GLPK integer program) on small sampled instances");
  std::string optWorkloads = "default", optShapes = "mirror,8:2:2:8", optPolicies = "first-fit,best-fit,fgd,switchyard";
  std::string optSeeds = "42-51", optOut = "packbench-out";
  size_t optServers = 8;
  double timeLimit = 60;
  opt->add_option("--workloads", optWorkloads, "comma-separated pod lists")->capture_default_str();
  opt->add_option("--shapes", optShapes, "pools: 'mirror' (the fixed servers) or K:U:P:L composable pools")->capture_default_str();
  opt->add_option("--policies", optPolicies, "comma-separated policies")->capture_default_str();
  opt->add_option("--seeds", optSeeds, "seeds (each samples its own servers): '42-51' or '42,43'")->capture_default_str();
  opt->add_option("--servers", optServers, "openb servers sampled per instance")->capture_default_str();
  opt->add_option("--time-limit", timeLimit, "seconds GLPK may search per instance (then: best found and a bound)")->capture_default_str();
  opt->add_option("--out", optOut, "folder for CSVs and the summary")->capture_default_str();
  opt->add_option("--jobs", jobs, "instances in parallel")->capture_default_str();
  opt->add_flag("--quiet", quiet, "no per-instance progress lines");

  auto* cmp = app.add_subcommand("compaction", "the smallest share of the servers that serves a fixed demand at a target acceptance");
  std::string cmpWorkloads = "default", cmpPools = "static,16:8:2:16", cmpPolicies = "fgd,switchyard", cmpSeeds = "42-43";
  std::string cmpOut = "packbench-out";
  CompactionOptions cmpOptions;
  DynamicOptions cmpDynamic;
  cmp->add_option("--workloads", cmpWorkloads, "comma-separated pod lists (they need creation/deletion times)")->capture_default_str();
  cmp->add_option("--pools", cmpPools, "'static', 'mirror' or K:U:P:L composable pools built from the kept servers")->capture_default_str();
  cmp->add_option("--policies", cmpPolicies, "comma-separated policies; switchyard-pool runs on the composable pools only")->capture_default_str();
  cmp->add_option("--seeds", cmpSeeds, "seeds (each samples its own servers and arrivals)")->capture_default_str();
  cmp->add_option("--load", cmpOptions.load, "offered load against the WHOLE cluster's GPU capacity")->capture_default_str();
  cmp->add_option("--target", cmpOptions.targetPercent, "acceptance % the pool must reach")->capture_default_str();
  cmp->add_option("--from", cmpOptions.fromPercent, "smallest share of servers considered, % (taken to miss the target)")
      ->capture_default_str();
  cmp->add_option("--resolution", cmpOptions.resolutionPercent, "bisection step, % of servers")->capture_default_str();
  cmp->add_option("--probe-at", cmpOptions.probeAt,
                  "also probe these shares (%, comma-separated) in every search, and show what each request kind gets there")
      ->delimiter(',')
      ->check(CLI::Range(1, 100));
  cmp->add_flag("--keep-hosts", cmpOptions.keepHosts,
                "composable pools keep every host and shrink only their GPUs (fewer enclosures); the share is then of the GPUs. "
                "Fixed servers still shrink whole");
  std::string thin;
  cmp->add_option("--thin-servers", thin,
                  "fixed servers are all kept and lose GPUs instead (the same hosts bought with fewer GPUs): 'even' takes them "
                  "from the servers with the most first, 'small-first' from those with the fewest (big servers stay whole); the "
                  "share is then of the GPUs")
      ->check(CLI::IsMember({"even", "small-first"}));
  cmp->add_option("--arrivals", cmpDynamic.arrivals, "measured arrivals per probe")->capture_default_str();
  cmp->add_option("--warmup", cmpDynamic.warmup, "arrivals before measuring")->capture_default_str();
  cmp->add_option("--patience", cmpDynamic.patienceSeconds, "seconds a request waits before giving up")->capture_default_str();
  cmp->add_option("--out", cmpOut, "folder for CSVs and the summary")->capture_default_str();
  cmp->add_option("--jobs", jobs, "searches in parallel")->capture_default_str();
  cmp->add_flag("--quiet", quiet, "no per-probe progress lines");

  auto* lp = app.add_subcommand("loop",
                                 "the utilization loop (priority classes, weighted fair share, backfill that cannot delay the head, "
                                 "spot preemption, leases, idle reclaim) against FIFO on the dynamic mode's arrivals");
  std::string lpWorkload = "default", lpPools = "static,16:8:2:16", lpModes = "fifo,loop", lpPolicies = "fgd", lpSeeds = "42";
  std::string lpOut = "packbench-out";
  std::vector<double> lpLoads{0.9, 1.0, 1.1, 1.2};
  LoopOptions lpOptions;
  bool lpNoBatchPreemption = false;
  bool lpNoShareReclaim = false;
  lp->add_option("--workload", lpWorkload, "pod list (it needs creation/deletion times)")->capture_default_str();
  lp->add_option("--pools", lpPools, "'static', 'mirror' or K:U:P:L composable pools")->capture_default_str();
  lp->add_option("--modes", lpModes, "'fifo' (the dynamic mode's queue) and/or 'loop' (the full loop)")->capture_default_str();
  lp->add_option("--policies", lpPolicies, "placement policies")->capture_default_str();
  lp->add_option("--loads", lpLoads, "offered loads (GPU-time demand / capacity)")->delimiter(',')->capture_default_str();
  lp->add_option("--seeds", lpSeeds, "seeds: '42-44' or '42,43'")->capture_default_str();
  lp->add_option("--arrivals", lpOptions.arrivals.arrivals, "measured arrivals per run")->capture_default_str();
  lp->add_option("--warmup", lpOptions.arrivals.warmup, "arrivals before measuring")->capture_default_str();
  lp->add_option("--patience", lpOptions.arrivals.patienceSeconds, "seconds a request waits before giving up")->capture_default_str();
  lp->add_option("--backfill-depth", lpOptions.arrivals.backfillDepth, "waiting requests tried per pass")->capture_default_str();
  lp->add_option("--tenant-weights", lpOptions.workload.tenantWeights, "fair-share weights, one per tenant")
      ->delimiter(',')
      ->capture_default_str();
  lp->add_option("--tenant-demand", lpOptions.workload.tenantDemand, "each tenant's share of the arrivals")
      ->delimiter(',')
      ->capture_default_str();
  lp->add_option("--overprovisioned", lpOptions.workload.overprovisionedShare, "share of systems idle at the end of their life")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  lp->add_option("--idle-share", lpOptions.workload.idleShare, "share of such a system's life spent idle")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  lp->add_option("--reclaim-after", lpOptions.rules.reclaimAfterSeconds, "seconds idle before an over-provisioned system is reclaimed")
      ->capture_default_str();
  lp->add_option("--fair-share-half-life", lpOptions.rules.fairShareHalfLifeSeconds,
                 "seconds over which a tenant's past GPU time counts half toward its fair-share charge (yardd: 24 h)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  lp->add_flag("--fair-share-lifts-spot", lpOptions.rules.fairShareLiftsSpot,
              "experiment: a tenant below the fair line has its spot requests ordered with batch (not yardd's rule)");
  lp->add_flag("--fair-share-gates-backfill", lpOptions.rules.fairShareGatesBackfill,
              "experiment: while a head waits, a tenant above the fair line does not backfill (not yardd's rule)");
  lp->add_flag("--defragment", lpOptions.rules.defragment,
               "when the head does not fit, move systems in their idle end to another enclosure their host reaches when that "
               "lets the head in (ADR 0033)");
  lp->add_option("--most-moved-gpus", lpOptions.rules.mostMovedGpus, "with --defragment: GPUs moved for one head at most")
      ->check(CLI::Range(1, 64));
  lp->add_flag("--share-first", lpOptions.rules.shareFirst,
              "fair share first (issue 59): across tenants by the fair line and the charge with the request, class and age inside a "
              "tenant; backfill capped per tenant; no preemption that inverts shares");
  lp->add_option("--backfill-per-tenant", lpOptions.rules.backfillPerTenant, "with --share-first: requests each tenant may try beside a waiting head")
      ->capture_default_str();
  lp->add_option("--backfill-gpus-above-share", lpOptions.rules.backfillGpusAboveShare,
                 "with --share-first: GPUs a tenant above the fair line may start beside a waiting head (0: no cap)")
      ->capture_default_str();
  lp->add_option("--preemption-hysteresis", lpOptions.rules.preemptionHysteresis,
                 "with --share-first: how far under the victim tenant's charge the preemptor's must stay (a share of it)")
      ->capture_default_str();
  lp->add_option("--grace", lpOptions.rules.preemptionGraceSeconds, "seconds between a preemption's notice and the detach")
      ->capture_default_str();
  lp->add_flag("--no-share-reclaim", lpNoShareReclaim,
              "reclaim idle whole-GPU systems only (yardd's rule before the fifteenth session; the loop rows before it)");
  lp->add_flag("--no-batch-preemption", lpNoBatchPreemption, "only production preempts spot (yardd's default lets batch preempt too)");
  lp->add_option("--out", lpOut, "folder for CSVs and the summary")->capture_default_str();
  lp->add_option("--jobs", jobs, "runs in parallel")->capture_default_str();
  lp->add_flag("--quiet", quiet, "no per-run progress lines");

  CLI11_PARSE(app, argc, argv);
  try {
    if (cmp->parsed()) {
      if (!thin.empty()) cmpOptions.thinServers = thin == "even" ? Thinning::kEven : Thinning::kSmallFirst;
      return runCompactionCommand(traces, splitList(cmpWorkloads), splitList(cmpPools), splitList(cmpPolicies), parseSeeds(cmpSeeds),
                                  cmpOptions, cmpDynamic, cmpOut, jobs, quiet);
    }
    if (lp->parsed()) {
      lpOptions.rules.batchPreempts = !lpNoBatchPreemption;
      lpOptions.rules.reclaimShares = !lpNoShareReclaim;
      return runLoopCommand(traces, lpWorkload, splitList(lpPools), splitList(lpModes), lpLoads, splitList(lpPolicies),
                            parseSeeds(lpSeeds), lpOptions, oursFrom(false, 100, false), lpOut, jobs, quiet);
    }
    if (opt->parsed())
      return runOptimalityCommand(traces, splitList(optWorkloads), splitList(optShapes), splitList(optPolicies), parseSeeds(optSeeds),
                                  optServers, timeLimit, optOut, jobs, quiet);
    if (dyn->parsed())
      return runDynamicCommand(
          traces, splitList(dynWorkloads), splitList(dynPools), loads, splitList(dynPolicies), parseSeeds(dynSeeds), dynOptions,
          oursFrom(dynOracle, dynSigmoidBins ? switchyard::sharing::kSigmoidBins : 100, dynOwnModelsOnly),
          dynOut, jobs, quiet);
    if (comp->parsed()) {
      auto w = compWorkloads == "all" ? kAllWorkloads : splitList(compWorkloads);
      return runComposableCommand(traces, w, splitList(compShapes), splitList(compPolicies), parseSeeds(compSeeds), ratio, compOut, jobs, quiet,
                                  compReferences);
    }
    if (lat->parsed()) return runLatencyCommand(traces, sizes, fills, splitList(latPolicies), decisions, naiveDecisions, warmup, latPool, latOut);
    if (st->parsed()) {
      auto w = workloads == "all" ? kAllWorkloads : splitList(workloads);
      return runStaticCommand(traces, w, splitList(policies), parseSeeds(seeds), ratio, out, jobs,
                              oursFrom(oracle, sigmoidBins ? switchyard::sharing::kSigmoidBins : resolution, ownModelsOnly), quiet);
    }
  } catch (const std::exception& e) {  // a run that could not go on (bad input the checks above missed)
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
  return 0;
}

