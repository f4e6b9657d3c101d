// One control-thread change to the pool as it is written: the store writes of one transaction and the events it
// publishes once written (Engine::persist). Every part that changes the pool hands one to the engine.
#pragma once

#include <vector>

#include "composer/model/composition.h"
#include "inventory/store.h"

namespace switchyard {

struct Mutation {
  std::vector<StoreWrite> writes;
  std::vector<Event> events;
};

}  // namespace switchyard
