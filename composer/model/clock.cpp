#include "composer/model/clock.h"

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

}  // namespace switchyard
