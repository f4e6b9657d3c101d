// Which Switchyard this is: the project's version (CMakeLists.txt) and, when built from a git checkout,
// the commit (with "-dirty" when the tree had changes at configure time). Every binary's --version, the
// switchyard_build_info metric and the version yardd sends with each gRPC answer come from here.
#pragma once

#include <string>
#include <string_view>

namespace switchyard {

[[nodiscard]] std::string_view projectVersion();  // "0.1.0"
[[nodiscard]] std::string_view gitCommit();       // "3f2a9c1", "3f2a9c1-dirty", or "" outside a checkout
// "yardd 0.1.0 (commit 3f2a9c1)"
[[nodiscard]] std::string versionLine(std::string_view program);
// The major version of a "MAJOR.MINOR.PATCH" text; -1 when it has none.
[[nodiscard]] int majorVersionOf(std::string_view version);

}  // namespace switchyard
