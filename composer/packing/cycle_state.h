// Per-request scratch space shared by the plugins of one scheduling cycle. Keys are types, not strings:
// a plugin stores a struct it owns and reads it back with the same type. A cycle holds a handful of
// entries, so a flat vector searched linearly beats a hash map on the hot path.
#pragma once

#include <memory>
#include <utility>
#include <vector>

namespace switchyard::placement {

class CycleState {
 public:
  template <typename T, typename... Args>
  T& emplace(Args&&... args) {
    auto holder = std::make_shared<T>(std::forward<Args>(args)...);
    T& ref = *holder;
    for (auto& [k, v] : entries_)
      if (k == key<T>()) {
        v = std::move(holder);
        return ref;
      }
    entries_.emplace_back(key<T>(), std::move(holder));
    return ref;
  }

  template <typename T>
  [[nodiscard]] T* find() const {
    for (const auto& [k, v] : entries_)
      if (k == key<T>()) return static_cast<T*>(v.get());
    return nullptr;
  }

  // Whether plugins should explain themselves (format reasons) in this cycle.
  bool explain = false;

 private:
  template <typename T>
  static const void* key() {
    static const char tag = 0;
    return &tag;
  }
  std::vector<std::pair<const void*, std::shared_ptr<void>>> entries_;
};

}  // namespace switchyard::placement
