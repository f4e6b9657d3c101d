#include "composer/model/label_selector.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <regex>

namespace switchyard {

namespace {

std::string_view trimSpaces(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

bool validKey(std::string_view key) {
  return !key.empty() &&
         std::none_of(key.begin(), key.end(), [](char c) { return c == ' ' || c == '=' || c == '!' || c == ',' || c == '(' || c == ')'; });
}

// The requirements of a selector: split at the commas outside parentheses. nullopt: a parenthesis is unbalanced.
std::optional<std::vector<std::string_view>> splitRequirements(std::string_view text) {
  std::vector<std::string_view> parts;
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '(' && ++depth > 1) return std::nullopt;
    if (text[i] == ')' && --depth < 0) return std::nullopt;
    if (text[i] == ',' && depth == 0) {
      parts.push_back(trimSpaces(text.substr(start, i - start)));
      start = i + 1;
    }
  }
  if (depth != 0) return std::nullopt;
  parts.push_back(trimSpaces(text.substr(start)));
  return parts;
}

}  // namespace

Result<LabelSelector> LabelSelector::parse(std::string_view text) {
  LabelSelector selector;
  if (trimSpaces(text).empty()) return selector;
  auto invalid = [&](std::string_view part, std::string_view why) {
    return fail(Code::kInvalidArgument, fmt::format("label selector '{}': '{}' {} (expected key=value, key!=value, key, !key, "
                                                    "key in (v1,v2) or key notin (v1,v2), separated by commas)",
                                                    text, part, why));
  };
  auto parts = splitRequirements(text);
  if (!parts) return invalid(text, "has a parenthesis that is not closed or not opened");
  for (const std::string_view part : *parts) {
    if (part.empty()) return invalid(part, "is empty");
    Requirement r;
    const auto space = part.find(' ');
    const auto open = part.find('(');
    if (open != std::string_view::npos) {
      // key in (a,b) | key notin (a,b)
      const std::string_view head = trimSpaces(part.substr(0, open));
      const auto split = head.rfind(' ');
      const std::string_view word = split == std::string_view::npos ? std::string_view{} : head.substr(split + 1);
      if (word != "in" && word != "notin") return invalid(part, "has a value set without `in` or `notin` before it");
      if (part.back() != ')') return invalid(part, "has text after its value set");
      r.key = std::string(trimSpaces(head.substr(0, split)));
      r.op = word == "in" ? Op::kIn : Op::kNotIn;
      const std::string_view set = part.substr(open + 1, part.size() - open - 2);
      std::size_t from = 0;
      while (from <= set.size()) {
        const std::size_t comma = std::min(set.find(',', from), set.size());
        const std::string_view value = trimSpaces(set.substr(from, comma - from));
        from = comma + 1;
        if (value.empty()) return invalid(part, "has an empty value in its set");
        if (value.find_first_of("=! ") != std::string_view::npos) return invalid(part, "has a value with '=', '!' or a space");
        r.values.emplace_back(value);
      }
    } else if (const auto ne = part.find("!="); ne != std::string_view::npos) {
      r = {std::string(trimSpaces(part.substr(0, ne))), Op::kNotEquals, {std::string(trimSpaces(part.substr(ne + 2)))}};
    } else if (const auto eq = part.find('='); eq != std::string_view::npos) {
      const std::size_t valueAt = part.substr(eq).starts_with("==") ? eq + 2 : eq + 1;
      r = {std::string(trimSpaces(part.substr(0, eq))), Op::kEquals, {std::string(trimSpaces(part.substr(valueAt)))}};
    } else if (part.front() == '!') {
      r = {std::string(trimSpaces(part.substr(1))), Op::kNotExists, {}};
    } else if (space != std::string_view::npos) {
      return invalid(part, "has a space in its key (a set needs parentheses: key in (v1,v2))");
    } else {
      r = {std::string(part), Op::kExists, {}};
    }
    if (!validKey(r.key)) return invalid(part, "has no valid key");
    if ((r.op == Op::kEquals || r.op == Op::kNotEquals) && r.values.front().find_first_of("=!") != std::string::npos)
      return invalid(part, "has more than one operator");
    selector.requirements_.push_back(std::move(r));
  }
  return selector;
}

bool LabelSelector::matches(const std::map<std::string, std::string>& labels) const {
  return std::all_of(requirements_.begin(), requirements_.end(), [&](const Requirement& r) {
    const auto it = labels.find(r.key);
    const bool inSet = it != labels.end() && std::find(r.values.begin(), r.values.end(), it->second) != r.values.end();
    switch (r.op) {
      case Op::kEquals: return it != labels.end() && it->second == r.values.front();
      case Op::kNotEquals: return it == labels.end() || it->second != r.values.front();
      case Op::kExists: return it != labels.end();
      case Op::kNotExists: return it == labels.end();
      case Op::kIn: return inSet;
      case Op::kNotIn: return !inSet;
    }
    return false;
  });
}

bool isLabelKey(std::string_view key) {
  static const std::regex kLabelKey("[A-Za-z0-9][A-Za-z0-9._/-]{0,62}");
  return std::regex_match(key.begin(), key.end(), kLabelKey);
}

}  // namespace switchyard
