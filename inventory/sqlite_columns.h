// Reading a SQLite store's text columns back into domain values (sqlite_store.cpp, sqlite_history.cpp): a
// value the store holds but this build does not know is a damaged row, reported as such, never a crash.
#pragma once

#include <fmt/format.h>

#include <string>
#include <string_view>

#include "composer/model/error.h"

namespace switchyard {

template <typename E, typename Parse>
Result<E> parseColumn(const std::string& text, Parse parse, std::string_view what) {
  if (auto v = parse(text)) return *v;
  return fail(Code::kInternal, fmt::format("store holds an unknown {} '{}'", what, text));
}

}  // namespace switchyard
