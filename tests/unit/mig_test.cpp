#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>

#include "composer/model/mig.h"

namespace switchyard {
namespace {

TEST(Mig, SevenOneSliceInstancesFillAGpu) {
  MigLayout gpu;
  for (int s = 0; s < 7; ++s) EXPECT_TRUE(gpu.place(MigProfile::k1g, s)) << s;
  EXPECT_EQ(gpu.freeComputeSlices(), 0);
  EXPECT_FALSE(gpu.canPlace(MigProfile::k1g)) << "memory slice 7 is not a 1g start";
}

TEST(Mig, OnlyNvidiaStartOffsetsAreAllowed) {
  MigLayout gpu;
  EXPECT_FALSE(gpu.canPlace(MigProfile::k2g, 1));
  EXPECT_FALSE(gpu.canPlace(MigProfile::k2g, 6));
  EXPECT_FALSE(gpu.canPlace(MigProfile::k3g, 2));
  EXPECT_FALSE(gpu.canPlace(MigProfile::k4g, 4));
  EXPECT_FALSE(gpu.canPlace(MigProfile::k7g, 1));
  EXPECT_TRUE(gpu.canPlace(MigProfile::k3g, 4));
}

TEST(Mig, RealCombinations) {
  MigLayout a;  // 4g + 3g = 7 compute slices, 8 memory slices
  EXPECT_TRUE(a.place(MigProfile::k4g, 0));
  EXPECT_TRUE(a.place(MigProfile::k3g, 4));
  EXPECT_EQ(a.freeComputeSlices(), 0);

  MigLayout b;  // 3g + 3g leaves one compute slice but no memory slice
  EXPECT_TRUE(b.place(MigProfile::k3g, 0));
  EXPECT_TRUE(b.place(MigProfile::k3g, 4));
  EXPECT_FALSE(b.canPlace(MigProfile::k1g));

  MigLayout c;  // 3g@4 + 2g@0 + 1g@2 + 1g@3
  EXPECT_TRUE(c.place(MigProfile::k3g, 4));
  EXPECT_TRUE(c.place(MigProfile::k2g, 0));
  EXPECT_TRUE(c.place(MigProfile::k1g, 2));
  EXPECT_TRUE(c.place(MigProfile::k1g, 3));
  EXPECT_FALSE(c.canPlace(MigProfile::k1g));

  MigLayout d;
  EXPECT_TRUE(d.place(MigProfile::k1g, 0));
  EXPECT_FALSE(d.canPlace(MigProfile::k7g));
  EXPECT_FALSE(d.canPlace(MigProfile::k4g));
  EXPECT_TRUE(d.canPlace(MigProfile::k3g, 4));
  EXPECT_FALSE(d.place(MigProfile::k2g, 0)) << "overlaps the 1g instance";
  EXPECT_EQ(d.instances().size(), 1u);
}

TEST(Mig, RemoveFreesTheSlices) {
  MigLayout gpu;
  ASSERT_TRUE(gpu.place(MigProfile::k4g, 0));
  EXPECT_FALSE(gpu.canPlace(MigProfile::k7g));
  EXPECT_FALSE(gpu.remove(2));
  EXPECT_TRUE(gpu.remove(0));
  EXPECT_TRUE(gpu.empty());
  EXPECT_TRUE(gpu.canPlace(MigProfile::k7g));
}

TEST(Mig, CapacityPerProfile) {
  MigLayout gpu;
  EXPECT_EQ(gpu.capacityFor(MigProfile::k1g), 7);
  EXPECT_EQ(gpu.capacityFor(MigProfile::k2g), 3);
  EXPECT_EQ(gpu.capacityFor(MigProfile::k3g), 2);
  EXPECT_EQ(gpu.capacityFor(MigProfile::k4g), 1);
  EXPECT_EQ(gpu.capacityFor(MigProfile::k7g), 1);
  gpu.place(MigProfile::k2g, 2);
  EXPECT_EQ(gpu.capacityFor(MigProfile::k3g), 1);
  EXPECT_EQ(gpu.capacityFor(MigProfile::k1g), 5);
}

TEST(Mig, BestStartKeepsTheLargeProfilesPossible) {
  // A 1g instance at 4..6 keeps 4g@0 (and 3g@0) possible; at 0..3 it would block both.
  MigLayout gpu;
  auto start = gpu.placeBest(MigProfile::k1g);
  ASSERT_TRUE(start);
  EXPECT_GE(*start, 4);
  EXPECT_TRUE(gpu.canPlace(MigProfile::k4g, 0));

  // With demand for 3g only, a 2g goes where it leaves one 3g placement.
  MigLayout g2;
  MigDemand only3g{0, 0, 1, 0, 0};
  auto s2 = g2.placeBest(MigProfile::k2g, only3g);
  ASSERT_TRUE(s2);
  EXPECT_EQ(g2.capacityFor(MigProfile::k3g), 1);

  MigLayout full;
  full.place(MigProfile::k7g, 0);
  EXPECT_FALSE(full.placeBest(MigProfile::k1g));
}

TEST(Mig, ProfileNamesRoundTrip) {
  for (auto p : kMigProfiles) EXPECT_EQ(parseMigProfile(toString(p)), p);
  EXPECT_FALSE(parseMigProfile("5g"));
}

// The geometry against a real GPU: `nvidia-smi mig -lgip` recorded on the lent H200 (MIG off; listing the
// profiles changes nothing; tests/data/nvidia-smi/README.md). Each profile Switchyard places must be one the GPU
// offers, with as many instances as the GPU allows and the same share of its memory (an eighth is one slice).
TEST(Mig, TheGeometryIsTheRecordedH200s) {
  std::ifstream in(std::filesystem::path(SWITCHYARD_SOURCE_DIR) / "tests/data/nvidia-smi/h200-141gb/mig-lgip.txt");
  ASSERT_TRUE(in);
  struct Offered {
    int compute;
    double memoryGiB;
    int instances;
  };
  std::map<std::string, Offered> offered;
  const std::regex row(R"(MIG (([0-9])g\.[0-9]+gb(\+me)?)\s+[0-9]+\s+[0-9]+/([0-9]+)\s+([0-9.]+))");
  std::smatch m;
  double wholeGiB = 0;
  for (std::string line; std::getline(in, line);)
    if (std::regex_search(line, m, row) && !m[3].matched) {
      offered[m[1]] = {std::stoi(m[2]), std::stod(m[5]), std::stoi(m[4])};
      wholeGiB = std::max(wholeGiB, std::stod(m[5]));
    }
  ASSERT_EQ(offered.size(), 6u) << "1g.18gb 1g.35gb 2g.35gb 3g.71gb 4g.71gb 7g.141gb";
  for (const MigProfile p : {MigProfile::k1g, MigProfile::k2g, MigProfile::k3g, MigProfile::k4g, MigProfile::k7g}) {
    const auto match = std::find_if(offered.begin(), offered.end(), [&](const auto& o) {
      return o.second.compute == computeSlices(p) && std::lround(o.second.memoryGiB * 8 / wholeGiB) == memorySlices(p);
    });
    ASSERT_NE(match, offered.end()) << toString(p) << " is not a profile the H200 offers";
    EXPECT_EQ(static_cast<std::size_t>(match->second.instances), allowedStarts(p).size()) << match->first;
  }
}

}  // namespace
}  // namespace switchyard
