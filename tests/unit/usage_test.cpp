// Usage accounting (composer/engine/usage.h): GPU-hours from the operation log, per tenant, system and
// model; whole GPUs, MIG instances by their memory slices, time-sliced shares by their fraction.
#include <gtest/gtest.h>

#include "composer/engine/usage.h"
#include "tests/unit/engine_fixture.h"

namespace switchyard {
namespace {

constexpr Timestamp kHour = 3'600'000'000'000LL;

Operation op(OperationKind kind, const std::string& system, const std::string& tenant, Timestamp at, std::string stepKind,
             std::vector<Binding> bindings) {
  Operation o;
  o.kind = kind;
  o.systemId = system;
  o.tenant = tenant;
  o.state = OperationState::kSucceeded;
  o.createdAt = at;
  o.updatedAt = at;
  Step s;
  s.kind = std::move(stepKind);
  s.bindings = std::move(bindings);
  s.state = StepState::kDone;
  o.steps.push_back(s);
  return o;
}

std::string model(const DeviceId& d) { return d.rfind("nic", 0) == 0 ? "" : (d.rfind("a", 0) == 0 ? "A100" : "H100"); }

double hoursOf(const UsageReport& r, const std::string& system) {
  double s = 0;
  for (const auto& row : r.rows)
    if (row.systemId == system) s += row.gpuSeconds;
  return s / 3600.0;
}

TEST(Usage, WholeGpusAreChargedFromTheirBindToTheirUnbind) {
  std::vector<Operation> log{
      op(OperationKind::kCompose, "sys-1", "team-a", 0, "bind", {{"h0", "p"}, {"h1", "p"}, {"nic0", "p"}}),
      op(OperationKind::kAttach, "sys-1", "team-a", 1 * kHour, "bind", {{"a0", "p"}}),
      op(OperationKind::kDetach, "sys-1", "team-a", 2 * kHour, "unbind", {{"h1", "p"}}),
      op(OperationKind::kDecompose, "sys-1", "team-a", 3 * kHour, "unbind", {{"h0", "p"}, {"a0", "p"}, {"nic0", "p"}}),
  };
  Operation failed = op(OperationKind::kCompose, "sys-2", "team-b", 0, "bind", {{"h9", "p"}});
  failed.state = OperationState::kFailed;  // rolled back: held nothing
  log.push_back(failed);
  const UsageReport all = computeUsage(log, model, 0, 10 * kHour, 10 * kHour);
  // h0: 3 h, h1: 2 h, a0: 2 h; the NIC is not a GPU.
  EXPECT_DOUBLE_EQ(hoursOf(all, "sys-1"), 7.0);
  EXPECT_DOUBLE_EQ(hoursOf(all, "sys-2"), 0.0);
  double a100 = 0;
  for (const auto& r : all.rows)
    if (r.model == "A100") a100 += r.gpuSeconds / 3600;
  EXPECT_DOUBLE_EQ(a100, 2.0);
  // A window clips: 1h30 to 2h30 holds h0 (1 h), h1 (0.5 h), a0 (1 h).
  const UsageReport window = computeUsage(log, model, kHour + kHour / 2, 2 * kHour + kHour / 2, 10 * kHour);
  EXPECT_DOUBLE_EQ(hoursOf(window, "sys-1"), 2.5);
  // Still held at `now`: charged up to now.
  std::vector<Operation> open{log[0]};
  EXPECT_DOUBLE_EQ(hoursOf(computeUsage(open, model, 0, 100 * kHour, 4 * kHour), "sys-1"), 8.0);
}

TEST(Usage, IdleStretchesAreCountedApartClippedToTheWindowAndNeverAboveWhatWasHeld) {
  const std::vector<Operation> log{op(OperationKind::kCompose, "sys-1", "team-a", 0, "bind", {{"h0", "p"}, {"h1", "p"}}),
                                   op(OperationKind::kDecompose, "sys-1", "team-a", 3 * kHour, "unbind", {{"h0", "p"}, {"h1", "p"}})};
  const std::vector<IdleStretch> idle{{"h0", "sys-1", "team-a", kHour, 2 * kHour},
                                      // seen idle until the round after the decompose: clipped to what was held
                                      {"h1", "sys-1", "team-a", 0, 4 * kHour}};
  auto idleHours = [](const UsageReport& r) {
    double sum = 0;
    for (const auto& row : r.rows) sum += row.idleGpuSeconds / 3600;
    return sum;
  };
  const UsageReport all = computeUsage(log, model, 0, 10 * kHour, 10 * kHour, idle);
  EXPECT_DOUBLE_EQ(hoursOf(all, "sys-1"), 6.0);
  EXPECT_DOUBLE_EQ(idleHours(all), 4.0) << "h0 1 h; h1 only the 3 h it was held, though its stretch ran on";
  const UsageReport window = computeUsage(log, model, kHour + kHour / 2, 2 * kHour + kHour / 2, 10 * kHour, idle);
  EXPECT_DOUBLE_EQ(idleHours(window), 1.5) << "h0 0.5 h, h1 1 h";
  EXPECT_DOUBLE_EQ(idleHours(computeUsage(log, model, 0, 10 * kHour, 10 * kHour)), 0.0) << "no stretches, nothing idle";
}

TEST(Usage, MigInstancesCountTheirSlicesAndSharesTheirFraction) {
  Operation mig = op(OperationKind::kCompose, "sys-m", "t", 0, "bind", {{"h0", "p"}});
  mig.gpuInstances = {{"h0", MigProfile::k3g, 0}, {"h0", MigProfile::k1g, 4}};
  Operation more = op(OperationKind::kAttach, "sys-m", "t", kHour, "commit", {});
  more.gpuInstances = {{"h0", MigProfile::k1g, 5}};  // onto the GPU it has: no bind
  Operation share = op(OperationKind::kCompose, "sys-s", "t", 0, "bind", {{"h1", "p"}});
  share.gpuShares = {{1, "h1", 250}};
  const UsageReport r = computeUsage({mig, share, more}, model, 0, 2 * kHour, 2 * kHour);
  const double third = memorySlices(MigProfile::k3g) / 8.0, first = memorySlices(MigProfile::k1g) / 8.0;
  EXPECT_NEAR(hoursOf(r, "sys-m"), (third + first) * 2 + first * 1, 1e-9);
  EXPECT_NEAR(hoursOf(r, "sys-s"), 0.25 * 2, 1e-9);
}

TEST(Usage, AnIdleGpuHeldInPartsCountsThePartTheSystemIsCharged) {
  Operation mig = op(OperationKind::kCompose, "sys-m", "t", 0, "bind", {{"h0", "p"}});
  mig.gpuInstances = {{"h0", MigProfile::k3g, 0}};
  Operation more = op(OperationKind::kAttach, "sys-m", "t", kHour, "commit", {});
  more.gpuInstances = {{"h0", MigProfile::k1g, 4}};
  Operation share = op(OperationKind::kCompose, "sys-s", "t", 0, "bind", {{"h1", "p"}});
  share.gpuShares = {{1, "h1", 250}};
  // The MIG GPU idle for 2 h (its 3g alone for the first, then both); the shared GPU idle 1 h.
  const std::vector<IdleStretch> idle{{"h0", "sys-m", "t", 0, 2 * kHour}, {"h1", "sys-s", "t", kHour, 2 * kHour}};
  const UsageReport r = computeUsage({mig, share, more}, model, 0, 2 * kHour, 2 * kHour, idle);
  const double third = memorySlices(MigProfile::k3g) / 8.0, first = memorySlices(MigProfile::k1g) / 8.0;
  double migIdle = 0, shareIdle = 0;
  for (const auto& row : r.rows) (row.systemId == "sys-m" ? migIdle : shareIdle) += row.idleGpuSeconds / 3600;
  EXPECT_NEAR(migIdle, third * 2 + first * 1, 1e-9) << "all it held, idle all along";
  EXPECT_NEAR(shareIdle, 0.25 * 1, 1e-9);
}

TEST(Usage, AnIdleMigInstanceCountsItsOwnPartWhileItsSiblingWorks) {
  Operation mig = op(OperationKind::kCompose, "sys-m", "t", 0, "bind", {{"h0", "p"}});
  mig.gpuInstances = {{"h0", MigProfile::k3g, 0}, {"h0", MigProfile::k1g, 4}};
  // The 1g at slice 4 idles for 2 h (its sibling works); then it is detached, and its stretch, seen ending a
  // round later, counts only while it was held. A stretch of an instance the system never had counts nothing.
  Operation drop = op(OperationKind::kDetach, "sys-m", "t", 2 * kHour, "commit", {});
  drop.gpuInstances = {{"h0", MigProfile::k1g, 4}};
  const std::vector<IdleStretch> idle{{"h0@4", "sys-m", "t", 0, 3 * kHour}, {"h0@6", "sys-m", "t", 0, 3 * kHour}};
  const UsageReport r = computeUsage({mig, drop}, model, 0, 4 * kHour, 4 * kHour, idle);
  ASSERT_EQ(r.rows.size(), 1u);
  const double first = memorySlices(MigProfile::k1g) / 8.0, third = memorySlices(MigProfile::k3g) / 8.0;
  EXPECT_NEAR(r.rows[0].gpuSeconds / 3600, (third + first) * 2 + third * 2, 1e-9);
  EXPECT_NEAR(r.rows[0].idleGpuSeconds / 3600, first * 2, 1e-9) << "its 1 of 8 slices for the 2 h it was held";
}

class EngineUsageTest : public EngineTest {};

TEST_F(EngineUsageTest, UsageComesFromTheLogAndIsTheSameAfterARestart) {
  start();
  ComposeRequest r{"train", {}, {}};
  r.placement.gpuCount = 4;
  r.placement.tenant = "team-a";
  run(engine_->blocking().compose(Caller::local(), r));
  const Timestamp begin = clock_.now() - 1;
  clock_.advance(std::chrono::hours(2));
  run(engine_->blocking().decompose(Caller::local(), "train"));
  clock_.advance(std::chrono::hours(1));
  auto before = engine_->history().usage(Caller::local(), begin, 0);
  ASSERT_TRUE(before) << before.error().message;
  double hours = 0;
  for (const auto& row : before->rows) hours += row.gpuSeconds / 3600;
  EXPECT_NEAR(hours, 8.0, 0.01);
  start();  // a restart over the same store
  auto after = engine_->history().usage(Caller::local(), begin, 0);
  ASSERT_TRUE(after);
  double again = 0;
  for (const auto& row : after->rows) again += row.gpuSeconds / 3600;
  EXPECT_DOUBLE_EQ(again, hours);
  auto theirs = engine_->history().usage({"bob", Role::kTenant, "team-b"}, begin, 0);
  ASSERT_TRUE(theirs);
  EXPECT_TRUE(theirs->rows.empty()) << "a tenant sees its own usage only";
  EXPECT_FALSE(engine_->history().usage(Caller::local(), 10, 5)) << "since after until";
  // Issue 63: the decomposed system keeps its name, and with no start given the period starts at the log's
  // oldest operation, not at 1970.
  ASSERT_FALSE(after->rows.empty());
  for (const auto& row : after->rows) EXPECT_EQ(row.systemName, "train");
  auto everything = engine_->history().usage(Caller::local(), 0, 0);
  ASSERT_TRUE(everything);
  EXPECT_EQ(everything->since, everything->historyFrom);
  EXPECT_GT(everything->since, 0);
}

TEST(Usage, PooledMemoryIsChargedInGiBHoursInRowsOfItsOwn) {
  // A system with a GPU and two 64 GiB logical devices; one LD detached after an hour, the rest after three.
  const std::vector<Operation> log{
      op(OperationKind::kCompose, "sys-1", "team-a", 0, "bind", {{"h0", "p"}, {"mem0", "p"}, {"mem1", "p"}}),
      op(OperationKind::kDetach, "sys-1", "team-a", 1 * kHour, "unbind", {{"mem1", "p"}}),
      op(OperationKind::kDecompose, "sys-1", "team-a", 3 * kHour, "unbind", {{"h0", "p"}, {"mem0", "p"}}),
  };
  auto gpuModel = [](const DeviceId& d) { return d.rfind("mem", 0) == 0 ? std::string() : std::string("H100"); };
  auto memory = [](const DeviceId& d) { return d.rfind("mem", 0) == 0 ? 64 : 0; };
  const UsageReport r = computeUsage(log, gpuModel, 0, 10 * kHour, 10 * kHour, {}, memory);
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_EQ(r.rows[0].model, "H100");
  EXPECT_DOUBLE_EQ(r.rows[0].gpuSeconds / 3600.0, 3.0);
  EXPECT_EQ(r.rows[1].model, std::string(kPooledMemoryModel));
  EXPECT_DOUBLE_EQ(r.rows[1].gpuSeconds, 0.0);
  EXPECT_DOUBLE_EQ(r.rows[1].memoryGiBSeconds / 3600.0, 64 * 3.0 + 64 * 1.0);
  // Without a memory callback, memory counts nothing (and no row).
  EXPECT_EQ(computeUsage(log, gpuModel, 0, 10 * kHour, 10 * kHour).rows.size(), 1u);
}

TEST(Usage, DrivesAndNicsAreChargedInDeviceHoursInRowsOfTheirKind) {
  // A GPU, two drives and a NIC for four hours; one drive detached after one.
  const std::vector<Operation> log{
      op(OperationKind::kCompose, "sys-1", "team-a", 0, "bind", {{"g0", "p"}, {"nvme0", "p"}, {"nvme1", "p"}, {"nic0", "p"}}),
      op(OperationKind::kDetach, "sys-1", "team-a", 1 * kHour, "unbind", {{"nvme1", "p"}}),
      op(OperationKind::kDecompose, "sys-1", "team-a", 4 * kHour, "unbind", {{"g0", "p"}, {"nvme0", "p"}, {"nic0", "p"}}),
  };
  auto gpuModel = [](const DeviceId& d) { return d.rfind("g", 0) == 0 ? std::string("H100") : std::string(); };
  auto kind = [](const DeviceId& d) { return d.rfind("nvme", 0) == 0 ? std::string("nvme") : d.rfind("nic", 0) == 0 ? std::string("nic") : std::string(); };
  const UsageReport r = computeUsage(log, gpuModel, 0, 10 * kHour, 10 * kHour, {}, {}, kind);
  ASSERT_EQ(r.rows.size(), 3u);
  EXPECT_EQ(r.rows[0].model, "H100");
  EXPECT_DOUBLE_EQ(r.rows[0].gpuSeconds / 3600.0, 4.0);
  EXPECT_EQ(r.rows[1].model, "nic");
  EXPECT_DOUBLE_EQ(r.rows[1].deviceSeconds / 3600.0, 4.0);
  EXPECT_EQ(r.rows[2].model, "nvme");
  EXPECT_DOUBLE_EQ(r.rows[2].deviceSeconds / 3600.0, 4.0 + 1.0);
  EXPECT_DOUBLE_EQ(r.rows[2].gpuSeconds, 0.0);
}

}  // namespace
}  // namespace switchyard
