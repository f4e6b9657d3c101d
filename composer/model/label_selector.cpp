#include "composer/model/label_selector.h"

#include <fmt/format.h>

#include <algorithm>

namespace switchyard {

namespace {

std::string_view trimSpaces(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

bool validKey(std::string_view key) {
  return !key.empty() && std::none_of(key.begin(), key.end(), [](char c) { return c == ' ' || c == '=' || c == '!' || c == ','; });
}

}  // namespace

Result<LabelSelector> LabelSelector::parse(std::string_view text) {
  LabelSelector selector;
  if (trimSpaces(text).empty()) return selector;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view part = trimSpaces(text.substr(start, comma - start));
    start = comma + 1;
    auto refuse = [&](std::string_view why) {
      return fail(Code::kInvalidArgument, fmt::format("label selector '{}': '{}' {} (expected key=value, key!=value, key or !key, "
                                                      "separated by commas)",
                                                      text, part, why));
    };
    if (part.empty()) return refuse("is empty");
    Requirement r;
    if (const auto ne = part.find("!="); ne != std::string_view::npos) {
      r = {std::string(trimSpaces(part.substr(0, ne))), Op::kNotEquals, std::string(trimSpaces(part.substr(ne + 2)))};
    } else if (const auto eq = part.find('='); eq != std::string_view::npos) {
      const std::size_t valueAt = part.substr(eq).starts_with("==") ? eq + 2 : eq + 1;
      r = {std::string(trimSpaces(part.substr(0, eq))), Op::kEquals, std::string(trimSpaces(part.substr(valueAt)))};
    } else if (part.front() == '!') {
      r = {std::string(trimSpaces(part.substr(1))), Op::kNotExists, {}};
    } else {
      r = {std::string(part), Op::kExists, {}};
    }
    if (!validKey(r.key)) return refuse("has no valid key");
    if (r.value.find_first_of("=!") != std::string::npos) return refuse("has more than one operator");
    selector.requirements_.push_back(std::move(r));
  }
  return selector;
}

bool LabelSelector::matches(const std::map<std::string, std::string>& labels) const {
  return std::all_of(requirements_.begin(), requirements_.end(), [&](const Requirement& r) {
    const auto it = labels.find(r.key);
    switch (r.op) {
      case Op::kEquals: return it != labels.end() && it->second == r.value;
      case Op::kNotEquals: return it == labels.end() || it->second != r.value;
      case Op::kExists: return it != labels.end();
      case Op::kNotExists: return it == labels.end();
    }
    return false;
  });
}

}  // namespace switchyard
