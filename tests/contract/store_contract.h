// The store contract's fixture (store_contract_test.cpp instantiates it for every backend; the history reads are in
// store_history_contract_test.cpp): each test opens the backend under its own directory, as two yardd would.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "inventory/store.h"
#include "tests/support/etcd_cluster.h"
#include "tests/support/temp_dir.h"

namespace switchyard::store_contract {

struct StoreFactory {
  std::string name;
  // Opens (a new connection to) the store that lives under `dir`.
  std::function<Result<std::unique_ptr<Store>>(const std::filesystem::path& dir)> open;
};

inline std::ostream& operator<<(std::ostream& os, const StoreFactory& f) { return os << f.name; }

inline System system(int n, SystemState state = SystemState::kComposed) {
  System s;
  s.id = fmt::format("sys-{:06}", n);
  s.name = fmt::format("s{}", n);
  s.hostId = "host0";
  s.state = state;
  s.bindings = {{"sw0-gpu0", "sw0-usp0"}};
  s.gpuShares = {{1, "sw0-gpu0", 250}, {2, "sw0-gpu0", 500}};
  return s;
}

inline Operation operation(int n, OperationState state) {
  Operation op;
  op.id = fmt::format("op-{:06}", n);
  op.systemId = "sys-000001";
  op.hostId = "host0";
  op.state = state;
  op.steps = {{"reserve", {}, StepState::kDone}, {"bind", {{"sw0-gpu0", "sw0-usp0"}, {"sw0-gpu1", "sw0-usp0"}}}, {"commit"}};
  op.gpuShares = {{3, "sw0-gpu1", 100}};
  op.requestedBy = {"alice", Role::kOperator, "team-a"};
  return op;
}

// Finished history: operations op-1..n with event i each, and decomposed systems sys-1..n when asked.
inline std::vector<StoreWrite> finishedHistory(int n, bool withSystems) {
  std::vector<StoreWrite> batch;
  for (int i = 1; i <= n; ++i) {
    if (withSystems) batch.push_back(PutSystem{system(i, SystemState::kDecomposed)});
    batch.push_back(PutOperation{operation(i, OperationState::kSucceeded)});
    batch.push_back(PutEvent{{static_cast<std::uint64_t>(i), i, "t", "s", fmt::format("m{}", i)}});
  }
  return batch;
}

class StoreContract : public ::testing::TestWithParam<StoreFactory> {
 protected:
  void SetUp() override {
    if (GetParam().name.starts_with("etcd") && !testing::EtcdCluster::available()) {
      if (testing::EtcdCluster::required()) FAIL() << "etcd is not installed; run ./setup.sh";
      GTEST_SKIP() << "needs Debian's etcd-server (./setup.sh installs it)";
    }
  }
  std::unique_ptr<Store> open() {
    auto s = GetParam().open(dir_.path());
    EXPECT_TRUE(s) << s.error().message;
    return s ? std::move(*s) : nullptr;
  }
  testing::TempDir dir_;
};

}  // namespace switchyard::store_contract
