// Time-sliced GPU shares: which of a system's GPUs takes a new share.
#include "composer/packing/gpu_shares.h"

#include <gtest/gtest.h>

namespace switchyard {
namespace {

sharing::ShapeMix onlyShares(int milli) {
  sharing::ShareRequest r;
  r.gpuCount = 1;
  r.gpuMilli = milli;
  return {{r, 1.0}};
}

TEST(GpuShares, ASystemWithoutShareGpusNeedsAFreshOne) {
  auto plan = planGpuShare({}, 250, {});
  EXPECT_FALSE(plan.onBound);
  EXPECT_NE(plan.explanation.find("fresh GPU"), std::string::npos) << plan.explanation;
}

TEST(GpuShares, WithoutLearnedSizesTheFullestGpuThatFitsTakesIt) {
  const std::vector<GpuShare> bound{{1, "g0", 200}, {2, "g1", 700}, {3, "g2", 950}};
  auto plan = planGpuShare(bound, 250, {});
  ASSERT_TRUE(plan.onBound);
  EXPECT_EQ(*plan.onBound, "g1") << "g2 has 50 left (too little); g1 has 300, g0 800: best fit is g1";
}

TEST(GpuShares, NoneHasRoomThenAFreshGpu) {
  const std::vector<GpuShare> bound{{1, "g0", 800}, {2, "g1", 600}};
  EXPECT_FALSE(planGpuShare(bound, 500, {}).onBound);
}

// The case best fit gets wrong: with half-GPU shares the common size, a small share on the GPU with
// exactly half left strands that half; on the roomier GPU it keeps both able to take a half.
TEST(GpuShares, TheLearnedSizesKeepCommonSharesServable) {
  const std::vector<GpuShare> bound{{1, "g0", 400}, {2, "g1", 500}};  // 600 and 500 left
  EXPECT_EQ(*planGpuShare(bound, 100, {}).onBound, "g1") << "best fit";
  auto plan = planGpuShare(bound, 100, onlyShares(500));
  ASSERT_TRUE(plan.onBound);
  EXPECT_EQ(*plan.onBound, "g0") << plan.explanation;
  EXPECT_NE(plan.explanation.find("fragmentation"), std::string::npos) << plan.explanation;
}

TEST(GpuShares, RoomAndIds) {
  const std::vector<GpuShare> bound{{1, "g0", 250}, {4, "g1", 500}, {2, "g0", 250}};
  const auto room = shareRoom(bound);
  ASSERT_EQ(room.size(), 2u);
  EXPECT_EQ(room[0], (std::pair<DeviceId, int>{"g0", 500}));
  EXPECT_EQ(room[1], (std::pair<DeviceId, int>{"g1", 500}));
  EXPECT_EQ(nextShareId(bound), 5);
  EXPECT_EQ(nextShareId({}), 1);
  EXPECT_EQ(describe(bound[0]), "#1 25% of g0");
}

TEST(GpuShares, AShareRequestAsksForNothingElse) {
  PlacementRequest r;
  r.gpuShareMilli = 250;
  EXPECT_TRUE(validateShareRequest(r));
  for (int bad : {-1, 0, 1000, 1500}) {
    r.gpuShareMilli = bad;
    EXPECT_EQ(validateShareRequest(r).error().code, Code::kInvalidArgument) << bad;
  }
  r.gpuShareMilli = 250;
  r.gpuCount = 2;
  EXPECT_FALSE(validateShareRequest(r));
  r.gpuCount = 0;
  r.gpuInstances = {MigProfile::k1g};
  EXPECT_FALSE(validateShareRequest(r));
  auto fresh = freshGpuForShare(PlacementRequest{.model = "H100-SXM5-80GB", .gpuShareMilli = 250});
  EXPECT_EQ(fresh.gpuCount, 1);
  EXPECT_EQ(fresh.gpuShareMilli, 0);
  EXPECT_EQ(fresh.model, "H100-SXM5-80GB");
}

}  // namespace
}  // namespace switchyard
