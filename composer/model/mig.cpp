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

std::uint8_t MigLayout::maskOf(MigProfile p, int start) {
  return static_cast<std::uint8_t>(((1u << memorySlices(p)) - 1u) << start);
}

bool MigLayout::canPlace(MigProfile p, int start) const {
  const auto& starts = allowedStarts(p);
  if (std::find(starts.begin(), starts.end(), start) == starts.end()) return false;
  return (memoryUsed_ & maskOf(p, start)) == 0 && computeUsed_ + computeSlices(p) <= 7;
}

bool MigLayout::canPlace(MigProfile p) const {
  return std::any_of(allowedStarts(p).begin(), allowedStarts(p).end(), [&](int s) { return canPlace(p, s); });
}

bool MigLayout::place(MigProfile p, int start) {
  if (!canPlace(p, start)) return false;
  memoryUsed_ = static_cast<std::uint8_t>(memoryUsed_ | maskOf(p, start));
  computeUsed_ += computeSlices(p);
  instances_.push_back({p, start});
  return true;
}

std::optional<int> MigLayout::placeBest(MigProfile p, const MigDemand& demand) {
  std::optional<int> best;
  double bestUsefulness = -1;
  for (int start : allowedStarts(p)) {
    if (!canPlace(p, start)) continue;
    MigLayout trial = *this;
    trial.place(p, start);
    const double u = trial.usefulness(demand);
    if (u > bestUsefulness) {  // ties keep the lowest start: deterministic
      bestUsefulness = u;
      best = start;
    }
  }
  if (best) place(p, *best);
  return best;
}

bool MigLayout::remove(int start) {
  auto it = std::find_if(instances_.begin(), instances_.end(), [&](const MigInstance& i) { return i.start == start; });
  if (it == instances_.end()) return false;
  memoryUsed_ = static_cast<std::uint8_t>(memoryUsed_ & ~maskOf(it->profile, it->start));
  computeUsed_ -= computeSlices(it->profile);
  instances_.erase(it);
  return true;
}

int MigLayout::capacityFor(MigProfile p) const {
  // Starts of one profile never overlap each other (they are aligned to the profile's size), except
  // where compute runs out first, so a greedy pass over the allowed starts is exact.
  MigLayout trial = *this;
  int n = 0;
  for (int start : allowedStarts(p))
    if (trial.place(p, start)) ++n;
  return n;
}

double MigLayout::usefulness(const MigDemand& demand) const {
  double total = 0;
  for (std::size_t i = 0; i < kMigProfiles.size(); ++i) total += demand[i] * capacityFor(kMigProfiles[i]);
  return total;
}

}  // namespace switchyard
