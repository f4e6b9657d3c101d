#include "composer/daemon/secret_files.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <fstream>

namespace switchyard {

Result<std::string> readPasswordFile(const std::filesystem::path& file, std::string_view flag) {
  std::ifstream in(file);
  std::string password;
  if (!std::getline(in, password) || password.empty())
    return fail(Code::kInvalidArgument, fmt::format("{} {}: cannot read a password from it (the first line)", flag, file.string()));
  return password;
}

Result<void> refuseIfOthersMayRead(const std::filesystem::path& file, std::string_view flag) {
  struct stat st {};
  if (::stat(file.c_str(), &st) == 0 && (st.st_mode & (S_IROTH | S_IWOTH)) != 0)
    return fail(Code::kFailedPrecondition, fmt::format("{} {}: others may read it (mode {:04o}); yardd refuses it: chmod 600 {} (or 640 for a group)",
                                                       flag, file.string(), st.st_mode & 07777, file.string()));
  return {};
}

}  // namespace switchyard
