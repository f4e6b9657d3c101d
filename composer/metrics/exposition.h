// The Prometheus text exposition format (version 0.0.4), written correctly: one HELP and TYPE line per
// family before its samples, label values escaped (\\, \", \n), HELP text escaped (\\, \n), +Inf/-Inf/NaN
// spelled as Prometheus reads them, histograms as cumulative _bucket{le=...} series with _sum and _count.
// Pure: it builds a string; who serves it is the HTTP layer's business.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace switchyard::metrics {

using Labels = std::vector<std::pair<std::string, std::string>>;

enum class Type { kCounter, kGauge, kHistogram };

[[nodiscard]] std::string escapeLabelValue(std::string_view value);
[[nodiscard]] std::string escapeHelp(std::string_view help);
// A sample value: integers without a fraction, "+Inf", "-Inf", "NaN".
[[nodiscard]] std::string formatValue(double value);

class ExpositionWriter {
 public:
  // Starts a family. Every family name may appear once per exposition (checked: a repeat throws
  // std::logic_error, since Prometheus rejects the whole scrape).
  void family(std::string_view name, std::string_view help, Type type);
  // A sample of the current family; `suffix` is "_bucket", "_sum", "_count" for histograms.
  void sample(const Labels& labels, double value, std::string_view suffix = {});
  // A whole histogram series: `cumulative[i]` observations <= bounds[i]; `count` of them in all (the +Inf bucket).
  void histogram(const Labels& labels, const std::vector<double>& bounds, const std::vector<std::uint64_t>& cumulative,
                 std::uint64_t count, double sum);

  // Sample lines rendered before by samplesOf(the current family's name), appended as they are: a part of a
  // large family that has not changed is rendered once and reused.
  void rendered(std::string_view lines) { out_ += lines; }
  // A writer of sample lines alone (no HELP or TYPE) for family `name`.
  [[nodiscard]] static ExpositionWriter samplesOf(std::string_view name) {
    ExpositionWriter w;
    w.current_ = name;
    return w;
  }

  [[nodiscard]] const std::string& text() const { return out_; }
  [[nodiscard]] std::string take() { return std::move(out_); }

 private:
  std::string out_;
  std::string current_;
  std::vector<std::string> seen_;
};

// The Content-Type of this format.
inline constexpr std::string_view kContentType = "text/plain; version=0.0.4; charset=utf-8";

}  // namespace switchyard::metrics
