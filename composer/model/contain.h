// Containment at a thread root (docs/reliability.md, "No request can stop yardd"): work dispatched onto a
// thread (an HTTP request, a control task, a switch call, an engine reply) runs inside one of these, so a
// throw ends that one piece of work, never the thread (and with it the process, through std::terminate).
// What a contained throw means is the dispatcher's to say: an HTTP request answers 500, a switch call fails
// with kInternal (its outcome unknown, so its step is undone), a control task halts the engine.
#pragma once

#include <exception>
#include <string>
#include <string_view>
#include <type_traits>

#include <fmt/format.h>

#include "composer/model/error.h"

namespace switchyard {

// What a caught exception says: its what(), or that it was not a std::exception.
[[nodiscard]] inline std::string describeCurrentException() {
  try {
    throw;
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "an exception that is not a std::exception";
  }
}

// Runs `work`; a throw is handed to `onThrow` as text. True when `work` returned normally.
template <typename Work, typename OnThrow>
bool runContained(Work&& work, OnThrow&& onThrow) noexcept {
  try {
    std::forward<Work>(work)();
    return true;
  } catch (...) {
    onThrow(describeCurrentException());
    return false;
  }
}

// Runs a call that returns a Result; a throw becomes kInternal naming `what` ("bind on sw0 threw: ...").
template <typename Call>
auto resultContained(std::string_view what, Call&& call) noexcept -> std::invoke_result_t<Call> {
  try {
    return std::forward<Call>(call)();
  } catch (...) {
    return fail(Code::kInternal, fmt::format("{} threw: {}", what, describeCurrentException()));
  }
}

}  // namespace switchyard
