// EngineCore: each call is the engine's own, made on the control thread, where it answers inline. The calls that
// change the pool or read what is in flight are defined beside the engine's part they belong to (engine_core.h);
// the view's reads are here.
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

Result<System> EngineCore::getSystem(const std::string& idOrName) {
  if (!inTask()) return answerFromTask("read a system", [&](EngineCore& core) { return core.getSystem(idOrName); });
  return engine_.getSystem(idOrName);
}
Result<std::vector<System>> EngineCore::listSystems() {
  if (!inTask()) return answerFromTask("list systems", [&](EngineCore& core) { return core.listSystems(); });
  return engine_.listSystems();
}
Result<DeviceView> EngineCore::getDevice(const DeviceId& id) {
  if (!inTask()) return answerFromTask("read a device", [&](EngineCore& core) { return core.getDevice(id); });
  return engine_.getDevice(id);
}
Result<std::vector<HostView>> EngineCore::listHosts() {
  if (!inTask()) return answerFromTask("list hosts", [&](EngineCore& core) { return core.listHosts(); });
  return engine_.listHosts();
}

}  // namespace switchyard
