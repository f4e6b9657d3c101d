// The Prometheus text format as written by composer/metrics: escaping, value spelling, histograms, and
// the counters the engine keeps as it works.
#include <gtest/gtest.h>

#include "composer/metrics/engine_metrics.h"
#include "composer/metrics/exposition.h"
#include "composer/metrics/instrumented_fabric.h"
#include "tests/unit/engine_fixture.h"

namespace switchyard {
using namespace metrics;
namespace {

TEST(Exposition, EscapesLabelValuesAndHelpAsTheFormatSays) {
  EXPECT_EQ(escapeLabelValue(R"(a\b"c)" "\n" "d"), R"(a\\b\"c\nd)");
  EXPECT_EQ(escapeHelp("back\\slash \"quoted\"\nnext"), "back\\\\slash \"quoted\"\\nnext");
  ExpositionWriter out;
  out.family("x_total", "Line one\nline two", Type::kCounter);
  out.sample({{"path", "C:\\dir"}, {"say", "\"hi\""}}, 3);
  EXPECT_EQ(out.text(), "# HELP x_total Line one\\nline two\n# TYPE x_total counter\nx_total{path=\"C:\\\\dir\",say=\"\\\"hi\\\"\"} 3\n");
}

TEST(Exposition, SpellsSpecialValuesAsPrometheusReadsThem) {
  EXPECT_EQ(formatValue(2), "2");
  EXPECT_EQ(formatValue(0.25), "0.25");
  EXPECT_EQ(formatValue(1e300 * 1e300), "+Inf");
  EXPECT_EQ(formatValue(-1e300 * 1e300), "-Inf");
  EXPECT_EQ(formatValue(std::nan("")), "NaN");
}

TEST(Exposition, AFamilyWrittenTwiceIsABugNotAScrape) {
  ExpositionWriter out;
  out.family("a", "x", Type::kGauge);
  EXPECT_THROW(out.family("a", "x", Type::kGauge), std::logic_error);
}

TEST(Registry, HistogramsAreCumulativeWithSumAndCount) {
  Registry registry;
  auto& h = registry.histogram("op_seconds", "Time.", {"kind"}, {0.1, 1});
  h.observe({"compose"}, 0.05);
  h.observe({"compose"}, 0.1);  // on a bound: counts in that bucket (le is "less or equal")
  h.observe({"compose"}, 0.5);
  h.observe({"compose"}, 7);
  ExpositionWriter out;
  registry.write(out);
  EXPECT_EQ(out.text(),
            "# HELP op_seconds Time.\n# TYPE op_seconds histogram\n"
            "op_seconds_bucket{kind=\"compose\",le=\"0.1\"} 2\n"
            "op_seconds_bucket{kind=\"compose\",le=\"1\"} 3\n"
            "op_seconds_bucket{kind=\"compose\",le=\"+Inf\"} 4\n"
            "op_seconds_sum{kind=\"compose\"} 7.65\n"
            "op_seconds_count{kind=\"compose\"} 4\n");
  EXPECT_THROW(h.observe({}, 1), std::logic_error) << "label values must match the family's labels";
}

class EngineMetricsTest : public EngineTest {};

TEST_F(EngineMetricsTest, TheEngineCountsOperationsStepsRefusalsSwitchCallsAndStoreWrites) {
  auto counted = std::make_shared<EngineMetrics>();
  InstrumentedFabric fabric(*fabric_, *counted);
  auto store = SqliteStore::open(dir_ / "metrics.db");
  ASSERT_TRUE(store);
  EngineOptions options{.fabricPollInterval = 0ms, .reconcileInterval = 0ms, .pruneInterval = 0ms};
  options.metrics = counted;
  Engine engine(fabric, **store, clock_, options);
  ASSERT_TRUE(engine.start());
  ComposeRequest two{"train", {}, {}};
  two.placement.gpuCount = 2;
  auto op = engine.blocking().compose(Caller::local(), two);
  ASSERT_TRUE(op) << op.error().message;
  ASSERT_TRUE(engine.waitOperation(op->id, std::chrono::seconds(5)));
  auto refused = engine.blocking().compose(Caller::local(), two);
  ASSERT_FALSE(refused);
  EXPECT_EQ(counted->operations.value({"compose", "succeeded"}), 1);
  EXPECT_EQ(counted->operationSeconds.count({"compose"}), 1u);
  EXPECT_EQ(counted->stepSeconds.count({"bind", "ok"}), 1u);
  EXPECT_EQ(counted->refusals.value({"compose", "ALREADY_EXISTS"}), 1);
  EXPECT_EQ(counted->switchCalls.value({"bind", "ok"}), 1);
  EXPECT_GE(counted->switchCalls.value({"discover", "ok"}), 1);
  EXPECT_GE(counted->storeWriteSeconds.count({}), 3u);

  fabric_->setFaults({.failNext = 1});
  ComposeRequest other{"other", {}, {}};
  other.placement.gpuCount = 1;
  auto failing = engine.blocking().compose(Caller::local(), other);
  ASSERT_TRUE(failing);
  auto ended = engine.waitOperation(failing->id, std::chrono::seconds(5));
  ASSERT_TRUE(ended);
  EXPECT_EQ(ended->state, OperationState::kFailed);
  EXPECT_EQ(counted->operations.value({"compose", "failed"}), 1);
  EXPECT_EQ(counted->switchCalls.value({"bind", "UNAVAILABLE"}), 1);
  engine.stop(std::chrono::seconds(1));
}

}  // namespace
}  // namespace switchyard
