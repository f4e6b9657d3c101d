#include "composer/model/grpc_target.h"

namespace switchyard {

std::string tlsNameOfTarget(std::string_view target) {
  bool listed = target.find(',') != std::string_view::npos;
  for (std::string_view scheme : {"ipv4:", "ipv6:", "dns:///", "dns:"})
    if (target.starts_with(scheme)) {
      target.remove_prefix(scheme.size());
      listed = true;
      break;
    }
  if (!listed) return {};
  std::string_view first = target.substr(0, target.find(','));
  if (first.starts_with('[')) {  // [v6]:port
    const auto close = first.find(']');
    return close == std::string_view::npos ? std::string() : std::string(first.substr(1, close - 1));
  }
  const auto colon = first.rfind(':');
  return std::string(colon == std::string_view::npos ? first : first.substr(0, colon));
}

}  // namespace switchyard
