// The declarative route table (net/route_table.h) both HTTP services route through: what matches, what is
// captured, and the 404, 405 and Allow that follow from the table alone.
#include <gtest/gtest.h>

#include <string>

#include "net/route_table.h"

namespace switchyard::net {
namespace {

using Table = RouteTable<std::string>;

Table systems() {
  Table t;
  t.route("/redfish/v1/Systems").on("GET", "list").on("POST", "compose");
  t.route("/redfish/v1/Systems/{id}", [](const RouteParams& p) { return p[0].starts_with("sys-"); }).on("GET", "composed").on("DELETE", "decompose");
  t.route("/redfish/v1/Systems/{id}").on("GET", "physical");
  t.route("/redfish/v1/Chassis/{rest*}").on("GET", "chassis");
  return t;
}

TEST(RouteTable, FindsTheEntryAndCapturesItsSegments) {
  const Table t = systems();
  auto list = t.find("/redfish/v1/Systems", "POST");
  ASSERT_TRUE(list);
  EXPECT_EQ(*list->entry, "compose");
  EXPECT_TRUE(list->params.empty());
  EXPECT_EQ(list->allow, "GET, HEAD, POST");

  auto composed = t.find("/redfish/v1/Systems/sys-7", "DELETE");
  ASSERT_TRUE(composed);
  EXPECT_EQ(*composed->entry, "decompose");
  EXPECT_EQ(composed->params, RouteParams{"sys-7"});
  EXPECT_EQ(composed->allow, "GET, HEAD, DELETE");

  auto chassis = t.find("/redfish/v1/Chassis/sw0/PCIeDevices/gpu3", "GET");
  ASSERT_TRUE(chassis);
  EXPECT_EQ(chassis->params, RouteParams{"sw0/PCIeDevices/gpu3"}) << "a {rest*} capture keeps its slashes";
}

TEST(RouteTable, AWhenNarrowsARouteSoTheNextOnTheSamePatternAnswers) {
  const Table t = systems();
  auto host = t.find("/redfish/v1/Systems/host0", "GET");
  ASSERT_TRUE(host);
  EXPECT_EQ(*host->entry, "physical");
  auto deleteHost = t.find("/redfish/v1/Systems/host0", "DELETE");
  ASSERT_FALSE(deleteHost);
  EXPECT_TRUE(deleteHost.error().resourceExists) << "the host exists: 405, not 404";
  EXPECT_EQ(deleteHost.error().allow, "GET, HEAD") << "Allow is the matching route's, not the composed systems'";
}

TEST(RouteTable, HeadIsServedWhereGetIsAndNothingElseIsInvented) {
  const Table t = systems();
  auto head = t.find("/redfish/v1/Systems/sys-1", "HEAD");
  ASSERT_TRUE(head);
  EXPECT_EQ(*head->entry, "composed") << "HEAD by GET's entry";
  auto patch = t.find("/redfish/v1/Systems", "PATCH");
  ASSERT_FALSE(patch);
  EXPECT_TRUE(patch.error().resourceExists);
  EXPECT_EQ(patch.error().allow, "GET, HEAD, POST");
}

TEST(RouteTable, APathNoRouteMatchesIsNotFound) {
  const Table t = systems();
  for (const char* path : {"/redfish/v1/Nowhere", "/redfish/v1/Systems/sys-1/Extra", "/redfish/v1/Chassis", "/"}) {
    auto miss = t.find(path, "GET");
    ASSERT_FALSE(miss) << path;
    EXPECT_FALSE(miss.error().resourceExists) << path;
  }
  EXPECT_TRUE(t.find("/redfish/v1/Systems/", "GET")) << "a trailing slash is the same path";
}

// The operator endpoint declares its reads and the console's changes apart (issue 63): one route, both methods.
TEST(RouteTable, APatternAddedAgainIsTheSameRoute) {
  Table t;
  t.route("/api/v1/systems").on("GET", "list");
  t.route("/api/v1/systems/{name}").on("GET", "one");
  t.route("/api/v1/systems").on("POST", "compose");
  t.route("/api/v1/systems/{other}").on("DELETE", "decompose");  // a capture's name is not part of the pattern's shape
  EXPECT_EQ(*t.find("/api/v1/systems", "GET")->entry, "list");
  EXPECT_EQ(*t.find("/api/v1/systems", "POST")->entry, "compose");
  EXPECT_EQ(t.find("/api/v1/systems", "POST")->allow, "GET, HEAD, POST");
  EXPECT_EQ(*t.find("/api/v1/systems/a", "GET")->entry, "one");
  EXPECT_EQ(*t.find("/api/v1/systems/a", "DELETE")->entry, "decompose");
  EXPECT_EQ(t.find("/api/v1/systems/a", "DELETE")->params, RouteParams{"a"});
}

TEST(RouteTable, RoutesAreTriedInOrder) {
  Table t;
  t.route("/api/v1/pool").on("GET", "pool");
  t.route("/api/{rest*}").on("GET", "unknown api");
  t.route("/").on("GET", "index");
  t.route("/{file*}").on("GET", "file");
  EXPECT_EQ(*t.find("/api/v1/pool", "GET")->entry, "pool");
  EXPECT_EQ(*t.find("/api/v2/x", "GET")->entry, "unknown api");
  EXPECT_EQ(*t.find("/", "GET")->entry, "index");
  EXPECT_EQ(*t.find("/app.js", "GET")->entry, "file");
  EXPECT_EQ(t.find("/app.js", "POST").error().allow, "GET, HEAD");
}

}  // namespace
}  // namespace switchyard::net
