// application/x-www-form-urlencoded, as HTML forms, OAuth token requests and URL queries carry it: pairs split
// on '&', name from value on the first '=', '+' for a space, %XX for a byte (RFC 1866 8.2.1, WHATWG URL).
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace switchyard::net {

// The pairs of a form or query, decoded; a name given twice keeps both (in order). Malformed escapes ("%G1",
// a lone '%') are taken literally, as browsers do.
[[nodiscard]] std::multimap<std::string, std::string> parseForm(std::string_view text);
// The first value of `name`, or empty.
[[nodiscard]] std::string formValue(const std::multimap<std::string, std::string>& form, const std::string& name);
[[nodiscard]] std::string decodeFormComponent(std::string_view text);

}  // namespace switchyard::net
