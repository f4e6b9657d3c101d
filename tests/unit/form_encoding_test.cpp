// application/x-www-form-urlencoded as OAuth token requests and URL queries carry it (net/form_encoding.h).
#include "net/form_encoding.h"

#include <gtest/gtest.h>

namespace switchyard::net {
namespace {

TEST(FormEncoding, DecodesPlusAsSpaceAndPercentEscapesAsBytes) {
  // What Go's url.Values.Encode writes for CoHDI's DRA driver's condition (a JSON object in a query).
  const auto form = parseForm("condition=%7B%22column%22%3A%22model%22%2C%22value%22%3A%22H100+SXM%22%7D&res_type=gpu&tenant_uuid=abc");
  EXPECT_EQ(formValue(form, "condition"), R"({"column":"model","value":"H100 SXM"})");
  EXPECT_EQ(formValue(form, "res_type"), "gpu");
  EXPECT_EQ(formValue(form, "tenant_uuid"), "abc");
  EXPECT_EQ(formValue(form, "absent"), "");
}

TEST(FormEncoding, TakesUnencodedFormsAsTheyCome) {
  // CoHDI's DRA driver writes its token request with fmt.Sprintf, unencoded: a raw space, and '=' or '%' as they are.
  const auto form = parseForm("username=u&password=p=q%&response=id_token token&grant_type=password&flag&=x");
  EXPECT_EQ(formValue(form, "password"), "p=q%");
  EXPECT_EQ(formValue(form, "response"), "id_token token");
  EXPECT_EQ(formValue(form, "flag"), "");
  EXPECT_EQ(form.count(""), 1u);
  EXPECT_EQ(decodeFormComponent("%G1%4"), "%G1%4") << "malformed escapes are taken literally";
  EXPECT_EQ(decodeFormComponent("%e2%82%ac"), "\xe2\x82\xac");
}

TEST(FormEncoding, KeepsEveryValueOfANameGivenTwice) {
  const auto form = parseForm("a=1&&a=2&b=");
  EXPECT_EQ(form.count("a"), 2u);
  EXPECT_EQ(formValue(form, "a"), "1");
  EXPECT_EQ(formValue(form, "b"), "");
}

}  // namespace
}  // namespace switchyard::net
