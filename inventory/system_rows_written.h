// What the SQLite store's writer last committed of each live system's child rows: its devices, MIG instances,
// shares and the identities its host saw. A system is written at every step of its operations (its state, its
// operation) while these mostly stay the same, and deleting and inserting the same rows again was most of what
// writing a system cost (issue 59). SqliteStore writes a child table only when its rows differ from what this
// says is stored.
//
// It must never say a row is stored when it is not: what a transaction writes is staged and kept only once the
// transaction commits (a rolled-back one leaves what was committed), a system is forgotten once it has ended
// (its last write), and everything is forgotten when the store claims the writer again (another writer may have
// written in between). Nothing here touches the database; the writer's thread only.
#pragma once

#include <optional>
#include <unordered_map>
#include <vector>

#include "composer/model/composition.h"

namespace switchyard {

class SystemRowsWritten {
 public:
  struct Rows {
    std::vector<Binding> bindings;
    std::vector<GpuInstance> gpuInstances;
    std::vector<GpuShare> gpuShares;
    std::vector<HostDeviceIdentity> hostDevices;
  };

  // What is stored of `system` as of the open transaction (what it wrote, else what was committed); null: not known.
  [[nodiscard]] const Rows* stored(const SystemId& system) const {
    if (auto it = staged_.find(system); it != staged_.end()) return it->second ? &*it->second : nullptr;
    auto it = committed_.find(system);
    return it == committed_.end() ? nullptr : &it->second;
  }
  // The open transaction wrote these rows of `system`.
  void wrote(const SystemId& system, Rows rows) { staged_[system] = std::move(rows); }
  // The open transaction wrote `system` for the last time (it ended): nothing is kept of it.
  void ended(const SystemId& system) { staged_[system] = std::nullopt; }

  // The open transaction committed, or rolled back.
  void committed() {
    for (auto& [system, rows] : staged_) {
      if (rows) committed_[system] = std::move(*rows);
      else committed_.erase(system);
    }
    staged_.clear();
  }
  void rolledBack() { staged_.clear(); }
  // Another writer may have written since: nothing is known any more.
  void forgetAll() {
    staged_.clear();
    committed_.clear();
  }

 private:
  std::unordered_map<SystemId, Rows> committed_;
  std::unordered_map<SystemId, std::optional<Rows>> staged_;
};

}  // namespace switchyard
