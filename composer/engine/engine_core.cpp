// EngineCore: each call is the engine's own, made on the control thread, where it answers inline. The calls are
// defined beside the engine's part they belong to (engine_core.h); here is where a call that is not made there goes.
#include "composer/engine/engine_core.h"

#include <spdlog/spdlog.h>

#include "composer/engine/engine.h"

namespace switchyard {

bool EngineCore::inTask() const { return !blocking_ && engine_.onControlThread(); }

Result<void> EngineCore::runInTask(std::string_view what, const std::function<void(EngineCore&)>& call) {
  if (blocking_) return engine_.runCore(call);
  spdlog::error("an engine call ({}) was made off the control thread: refused; this is a bug in yardd", what);
  return fail(Code::kInternal, "an engine call was made off the control thread (a bug in yardd): refused");
}

}  // namespace switchyard
