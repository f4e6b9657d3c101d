#include "composer/metrics/exposition.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace switchyard::metrics {

std::string escapeLabelValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string escapeHelp(std::string_view help) {
  std::string out;
  out.reserve(help.size());
  for (char c : help) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string formatValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  if (value == std::floor(value) && std::fabs(value) < 1e15) return fmt::format("{}", static_cast<long long>(value));
  return fmt::format("{}", value);  // shortest round-trip form
}

namespace {
std::string_view typeName(Type type) {
  switch (type) {
    case Type::kCounter: return "counter";
    case Type::kGauge: return "gauge";
    case Type::kHistogram: return "histogram";
  }
  return "untyped";
}

void appendLabels(std::string& out, const Labels& labels, const std::pair<std::string, std::string>* extra) {
  if (labels.empty() && extra == nullptr) return;
  out += '{';
  bool first = true;
  auto one = [&](const std::string& name, const std::string& value) {
    if (!first) out += ',';
    first = false;
    out += name;
    out += "=\"";
    out += escapeLabelValue(value);
    out += '"';
  };
  for (const auto& [name, value] : labels) one(name, value);
  if (extra != nullptr) one(extra->first, extra->second);
  out += '}';
}
}  // namespace

void ExpositionWriter::family(std::string_view name, std::string_view help, Type type) {
  if (std::find(seen_.begin(), seen_.end(), name) != seen_.end())
    throw std::logic_error(fmt::format("metric family {} written twice in one exposition", name));
  seen_.emplace_back(name);
  current_ = name;
  fmt::format_to(std::back_inserter(out_), "# HELP {} {}\n# TYPE {} {}\n", name, escapeHelp(help), name, typeName(type));
}

void ExpositionWriter::sample(const Labels& labels, double value, std::string_view suffix) {
  out_ += current_;
  out_ += suffix;
  appendLabels(out_, labels, nullptr);
  out_ += ' ';
  out_ += formatValue(value);
  out_ += '\n';
}

void ExpositionWriter::histogram(const Labels& labels, const std::vector<double>& bounds, const std::vector<std::uint64_t>& cumulative,
                                 std::uint64_t count, double sum) {
  for (std::size_t i = 0; i < bounds.size(); ++i) {
    const std::pair<std::string, std::string> le{"le", formatValue(bounds[i])};
    out_ += current_;
    out_ += "_bucket";
    appendLabels(out_, labels, &le);
    out_ += ' ';
    out_ += formatValue(static_cast<double>(cumulative[i]));
    out_ += '\n';
  }
  const std::pair<std::string, std::string> inf{"le", "+Inf"};
  out_ += current_;
  out_ += "_bucket";
  appendLabels(out_, labels, &inf);
  out_ += ' ';
  out_ += formatValue(static_cast<double>(count));
  out_ += '\n';
  sample(labels, sum, "_sum");
  sample(labels, static_cast<double>(count), "_count");
}

}  // namespace switchyard::metrics
