#include "composer/model/config_syntax.h"

#include <gtest/gtest.h>

#include <set>

namespace switchyard {
namespace {

const std::set<std::string> kKeys{"listen", "state-dir", "port", "durability", "sim-host-agents"};
bool known(const std::string& key) { return kKeys.contains(key); }

std::string problem(std::string_view text) {
  auto r = checkConfigSyntax(text, known);
  return r ? "" : r.error().message;
}

TEST(ConfigSyntax, AcceptsWhatCli11Reads) {
  EXPECT_EQ(problem(""), "");
  EXPECT_EQ(problem("# yardd.conf\n; ini comment\n\nlisten = \"0.0.0.0:7390\"   # where\nstate-dir='/var/lib/s'\ndurability = full\n"
                    "sim-host-agents = false\nport = [\"sw0-usp0=0000:00:01.0\", 'b' ]\n"),
            "");
  EXPECT_EQ(problem("port = [\n  \"a\",  # first\n  \"b\"\n]\n"), "") << "a list may span lines";
  EXPECT_EQ(problem("listen = \"say \\\"hi\\\"\"\n"), "") << "escaped quotes";
}

TEST(ConfigSyntax, RefusesWhatCli11WouldSkipOrMisreadNamingTheLine) {
  EXPECT_EQ(problem("listen = \"a\"\nlisten_typo = 1\n"), "line 2: unknown key 'listen_typo' (keys are the long flag names, as in --help)");
  EXPECT_EQ(problem("\nlisten = \"0.0.0.0:7390\n"), "line 2: the string \"0.0.0.0:7390 is not closed on its line");
  EXPECT_EQ(problem("listen = 'x' y\n"), "line 1: unexpected 'y' after the value of 'listen'");
  EXPECT_EQ(problem("durability\n"), "line 1: 'durability' is not `key = value`");
  EXPECT_EQ(problem("listen =\n"), "line 1: a key needs a value");
  EXPECT_EQ(problem("port = [\"a\", \"b\"\n"), "line 1: a [list] is not closed before the end of the file");
  EXPECT_EQ(problem("port = [\"a\" \"b\"]\n"), "line 1: expected ',' or ']' in a list, found '\"'");
  EXPECT_EQ(problem("[yardd\nlisten = \"x\"\n"), "line 1: a [section] header is not closed");
  EXPECT_EQ(problem("[yardd]\nlisten = \"x\"\n"), "line 2: unknown key 'yardd.listen' (keys are the long flag names, as in --help)")
      << "yardd has no subcommands: a section's keys are unknown";
  EXPECT_EQ(problem("li sten = 1\n"), "line 1: 'li sten' is not a key");
}

TEST(ConfigSyntax, FindsTheConfigArgument) {
  const char* spaced[] = {"yardd", "--listen", "x", "--config", "/etc/s.conf"};
  EXPECT_EQ(configArgument(5, spaced), "/etc/s.conf");
  const char* joined[] = {"yardd", "--config=/etc/t.conf"};
  EXPECT_EQ(configArgument(2, joined), "/etc/t.conf");
  const char* none[] = {"yardd", "--config"};
  EXPECT_EQ(configArgument(2, none), "");
}

}  // namespace
}  // namespace switchyard
