// Reading a SQLite store's text columns back into domain values (sqlite_store.cpp, sqlite_history.cpp): a
// value the store holds but this build does not know is a damaged row, reported as such, never a crash.
#pragma once

#include <fmt/format.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "composer/model/error.h"

namespace switchyard {

template <typename E, typename Parse>
Result<E> parseColumn(const std::string& text, Parse parse, std::string_view what) {
  if (auto v = parse(text)) return *v;
  return fail(Code::kInternal, fmt::format("store holds an unknown {} '{}'", what, text));
}

// A system's labels column: a JSON object of strings. Anything else is a damaged row, reported as such.
inline Result<std::map<std::string, std::string>> parseSystemLabels(const std::string& systemId, const std::string& text) {
  try {
    return nlohmann::json::parse(text).get<std::map<std::string, std::string>>();
  } catch (const nlohmann::json::exception& e) {
    return fail(Code::kInternal, fmt::format("systems row {}: column labels is not a JSON object of strings ({}): {}", systemId, e.what(), text));
  }
}

}  // namespace switchyard
