#include "composer/model/config_syntax.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

namespace switchyard {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool isKeyChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.'; }

// Reads one value at the front of `s` (a quoted string, a [list], or a bare word); leaves the rest in `s`.
// `more` is called for the next line while a list is open. An empty string: fine; otherwise what is wrong.
std::string readValue(std::string_view& s, const std::function<bool(std::string_view&)>& more) {
  s = trim(s);
  if (s.empty()) return "a key needs a value";
  const char first = s.front();
  if (first == '"' || first == '\'') {
    for (std::size_t i = 1; i < s.size(); ++i) {
      if (first == '"' && s[i] == '\\') {
        ++i;
        continue;
      }
      if (s[i] == first) {
        s.remove_prefix(i + 1);
        return "";
      }
    }
    return fmt::format("the string {} is not closed on its line", std::string(s.substr(0, 40)));
  }
  if (first == '[') {
    s.remove_prefix(1);
    while (true) {
      s = trim(s);
      while (s.empty() || s.front() == '#') {  // the list goes on on the next line
        if (!more(s)) return "a [list] is not closed before the end of the file";
        s = trim(s);
      }
      if (s.front() == ']') {
        s.remove_prefix(1);
        return "";
      }
      if (auto bad = readValue(s, more); !bad.empty()) return bad;
      s = trim(s);
      if (!s.empty() && s.front() == ',') s.remove_prefix(1);
      else if (!s.empty() && s.front() != ']' && s.front() != '#') return fmt::format("expected ',' or ']' in a list, found '{}'", s.front());
    }
  }
  std::size_t n = 0;
  while (n < s.size() && !std::isspace(static_cast<unsigned char>(s[n])) && s[n] != ',' && s[n] != ']' && s[n] != '#' && s[n] != '"' &&
         s[n] != '\'' && s[n] != '[' && s[n] != '=')
    ++n;
  if (n == 0) return fmt::format("unexpected '{}'", s.front());
  s.remove_prefix(n);
  return "";
}

}  // namespace

Result<void> checkConfigSyntax(std::string_view text, const std::function<bool(const std::string& key)>& known) {
  std::size_t lineNumber = 0;
  std::string section;
  auto nextLine = [&](std::string_view& line) {
    if (text.empty()) return false;
    const auto end = text.find('\n');
    line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
    ++lineNumber;
    return true;
  };
  std::string_view line;
  while (nextLine(line)) {
    const std::size_t at = lineNumber;
    auto bad = [&](const std::string& why) { return fail(Code::kInvalidArgument, fmt::format("line {}: {}", at, why)); };
    line = trim(line);
    if (line.empty() || line.front() == '#' || line.front() == ';') continue;
    if (line.front() == '[') {
      const bool array = line.starts_with("[[");
      const auto close = line.find(array ? "]]" : "]");
      if (close == std::string_view::npos) return bad("a [section] header is not closed");
      const auto name = trim(line.substr(array ? 2 : 1, close - (array ? 2 : 1)));
      if (name.empty() || !std::all_of(name.begin(), name.end(), isKeyChar)) return bad(fmt::format("'{}' is not a section name", std::string(name)));
      const auto rest = trim(line.substr(close + (array ? 2 : 1)));
      if (!rest.empty() && rest.front() != '#') return bad("text after a [section] header");
      section = std::string(name) + ".";
      continue;
    }
    const auto eq = line.find('=');
    if (eq == std::string_view::npos) return bad(fmt::format("'{}' is not `key = value`", std::string(line.substr(0, 60))));
    auto key = trim(line.substr(0, eq));
    if (key.size() >= 2 && (key.front() == '"' || key.front() == '\'') && key.back() == key.front()) key = key.substr(1, key.size() - 2);
    if (key.empty() || !std::all_of(key.begin(), key.end(), isKeyChar)) return bad(fmt::format("'{}' is not a key", std::string(key)));
    const std::string fullKey = section + std::string(key);
    if (!known(fullKey)) return bad(fmt::format("unknown key '{}' (keys are the long flag names, as in --help)", fullKey));
    std::string_view value = line.substr(eq + 1);
    if (auto why = readValue(value, nextLine); !why.empty()) return bad(why);
    value = trim(value);
    if (!value.empty() && value.front() != '#') return bad(fmt::format("unexpected '{}' after the value of '{}'", std::string(value.substr(0, 40)), fullKey));
  }
  return {};
}

std::string configArgument(int argc, const char* const* argv) {
  std::string path;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--config" && i + 1 < argc) path = argv[++i];
    else if (arg.starts_with("--config=")) path = std::string(arg.substr(std::string_view("--config=").size()));
  }
  return path;
}

Result<void> checkConfigFile(const std::filesystem::path& path, const std::function<bool(const std::string& key)>& known) {
  std::ifstream in(path);
  if (!in) return fail(Code::kInvalidArgument, fmt::format("--config {}: cannot read it", path.string()));
  std::ostringstream text;
  text << in.rdbuf();
  if (auto ok = checkConfigSyntax(text.str(), known); !ok) return fail(Code::kInvalidArgument, fmt::format("--config {}: {}", path.string(), ok.error().message));
  return {};
}

}  // namespace switchyard
