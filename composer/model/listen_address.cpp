#include "composer/model/listen_address.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace switchyard {

Result<ListenAddress> parseListenAddress(std::string_view text, std::string_view flag) {
  const auto colon = text.rfind(':');
  if (colon == std::string_view::npos) return fail(Code::kInvalidArgument, fmt::format("{} {}: expected HOST:PORT", flag, text));
  const std::string_view port = text.substr(colon + 1);
  const bool digits = !port.empty() && std::all_of(port.begin(), port.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
  // More than five digits is out of range whatever they are (and cannot overflow the sum below).
  if (!digits || port.size() > 5)
    return fail(Code::kInvalidArgument, fmt::format("{} {}: the port must be a number from 0 (any free port) to 65535", flag, text));
  int number = 0;
  for (const char c : port) number = number * 10 + (c - '0');
  if (number > 65535)
    return fail(Code::kInvalidArgument, fmt::format("{} {}: port {} is out of range: 0 (any free port) to 65535", flag, text, number));
  return ListenAddress{std::string(text.substr(0, colon)), number};
}

}  // namespace switchyard
