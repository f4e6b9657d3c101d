#include "composer/model/mig.h"

#include <algorithm>

namespace switchyard {

namespace {

struct Geometry {
  MigProfile profile;
  std::string_view name;
  int compute;
  int memory;
  std::vector<int> starts;
};

const std::vector<Geometry>& geometry() {
  static const std::vector<Geometry> kGeometry{
      {MigProfile::k1g, "1g", 1, 1, {0, 1, 2, 3, 4, 5, 6}},
      {MigProfile::k2g, "2g", 2, 2, {0, 2, 4}},
      {MigProfile::k3g, "3g", 3, 4, {0, 4}},
      {MigProfile::k4g, "4g", 4, 4, {0}},
      {MigProfile::k7g, "7g", 7, 8, {0}},
  };
  return kGeometry;
}

const Geometry& of(MigProfile p) { return geometry()[static_cast<std::size_t>(p)]; }

}  // namespace

int computeSlices(MigProfile p) { return of(p).compute; }
int memorySlices(MigProfile p) { return of(p).memory; }
const std::vector<int>& allowedStarts(MigProfile p) { return of(p).starts; }
std::string_view toString(MigProfile p) { return of(p).name; }

std::optional<MigProfile> parseMigProfile(std::string_view s) {
  for (const auto& g : geometry())
    if (g.name == s) return g.profile;
  return std::nullopt;
}

std::uint8_t memoryMask(MigProfile p, int start) {
  return static_cast<std::uint8_t>(((1u << memorySlices(p)) - 1u) << start);
}

bool fitsAt(std::uint8_t taken, MigProfile p, int start) {
  const auto& starts = allowedStarts(p);
  return std::find(starts.begin(), starts.end(), start) != starts.end() && (taken & memoryMask(p, start)) == 0;
}

bool fitsAnywhere(std::uint8_t taken, MigProfile p) {
  return std::any_of(allowedStarts(p).begin(), allowedStarts(p).end(), [&](int s) { return (taken & memoryMask(p, s)) == 0; });
}

int capacityFor(std::uint8_t taken, MigProfile p) {
  // Starts of one profile are aligned to its size and never overlap each other, so a greedy pass is exact.
  int n = 0;
  for (int start : allowedStarts(p))
    if ((taken & memoryMask(p, start)) == 0) {
      taken = static_cast<std::uint8_t>(taken | memoryMask(p, start));
      ++n;
    }
  return n;
}

double usefulness(std::uint8_t taken, const MigDemand& demand) {
  double total = 0;
  for (std::size_t i = 0; i < kMigProfiles.size(); ++i) total += demand[i] * capacityFor(taken, kMigProfiles[i]);
  return total;
}

std::optional<int> bestStart(std::uint8_t taken, MigProfile p, const MigDemand& demand) {
  std::optional<int> best;
  double bestUsefulness = -1;
  for (int start : allowedStarts(p)) {
    if ((taken & memoryMask(p, start)) != 0) continue;
    const double u = usefulness(static_cast<std::uint8_t>(taken | memoryMask(p, start)), demand);
    if (u > bestUsefulness) {  // ties keep the lowest start: deterministic
      bestUsefulness = u;
      best = start;
    }
  }
  return best;
}

bool MigLayout::canPlace(MigProfile p, int start) const { return fitsAt(memoryUsed_, p, start); }

bool MigLayout::canPlace(MigProfile p) const { return fitsAnywhere(memoryUsed_, p); }

bool MigLayout::place(MigProfile p, int start) {
  if (!canPlace(p, start)) return false;
  memoryUsed_ = static_cast<std::uint8_t>(memoryUsed_ | memoryMask(p, start));
  computeUsed_ += computeSlices(p);
  instances_.push_back({p, start});
  return true;
}

std::optional<int> MigLayout::placeBest(MigProfile p, const MigDemand& demand) {
  const std::optional<int> start = bestStart(memoryUsed_, p, demand);
  if (start) place(p, *start);
  return start;
}

bool MigLayout::remove(int start) {
  auto it = std::find_if(instances_.begin(), instances_.end(), [&](const MigInstance& i) { return i.start == start; });
  if (it == instances_.end()) return false;
  memoryUsed_ = static_cast<std::uint8_t>(memoryUsed_ & ~memoryMask(it->profile, it->start));
  computeUsed_ -= computeSlices(it->profile);
  instances_.erase(it);
  return true;
}

}  // namespace switchyard
