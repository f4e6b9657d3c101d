#include "composer/model/clock.h"

#include <limits>

#include <ctime>
#include <fmt/format.h>

namespace switchyard {

std::string formatTimestamp(Timestamp t) {
  const std::time_t seconds = static_cast<std::time_t>(t / 1'000'000'000);
  const auto millis = (t / 1'000'000) % 1000;
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", utc.tm_year + 1900, utc.tm_mon + 1,
                     utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec, millis);
}

std::optional<Timestamp> parseTimestamp(std::string_view text) {
  auto digits = [&](std::size_t at, std::size_t n) -> std::optional<int> {
    if (at + n > text.size()) return std::nullopt;
    int v = 0;
    for (std::size_t i = at; i < at + n; ++i) {
      if (text[i] < '0' || text[i] > '9') return std::nullopt;
      v = v * 10 + (text[i] - '0');
    }
    return v;
  };
  std::tm utc{};
  auto year = digits(0, 4), month = digits(5, 2), day = digits(8, 2);
  if (!year || !month || !day || text.size() < 10 || text[4] != '-' || text[7] != '-' || *month < 1 || *month > 12 || *day < 1 ||
      *day > 31)
    return std::nullopt;
  utc.tm_year = *year - 1900;
  utc.tm_mon = *month - 1;
  utc.tm_mday = *day;
  Timestamp fraction = 0;
  if (text.size() > 10) {
    auto hour = digits(11, 2), minute = digits(14, 2), second = digits(17, 2);
    if (text[10] != 'T' || !hour || !minute || !second || text[13] != ':' || text[16] != ':' || *hour > 23 || *minute > 59 || *second > 60)
      return std::nullopt;
    utc.tm_hour = *hour;
    utc.tm_min = *minute;
    utc.tm_sec = *second;
    std::size_t at = 19;
    if (at < text.size() && text[at] == '.') {
      Timestamp scale = 100'000'000;
      for (++at; at < text.size() && text[at] >= '0' && text[at] <= '9'; ++at, scale /= 10) fraction += (text[at] - '0') * scale;
    }
    if (at + 1 != text.size() || text[at] != 'Z') return std::nullopt;
  }
  // Nanoseconds since 1970 in 64 bits reach from 1677 to 2262: a time outside is not one yardd can hold (the
  // multiplication would overflow; text_inputs_fuzz found the year 1013).
  const auto seconds = static_cast<Timestamp>(timegm(&utc));
  constexpr Timestamp kLimit = std::numeric_limits<Timestamp>::max() / 1'000'000'000 - 1;
  if (seconds < -kLimit || seconds > kLimit) return std::nullopt;
  return seconds * 1'000'000'000 + fraction;
}

}  // namespace switchyard
