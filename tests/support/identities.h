// Identities files for tests: passwords hashed with few PBKDF2 iterations (fast), tokens hashed.
#pragma once

#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "composer/auth/identities.h"

namespace switchyard::testing {

struct TestIdentity {
  std::string name;
  std::string role;  // viewer, tenant, operator, admin
  std::string tenant;
  std::string password;  // plain; hashed into the file
  std::string token;     // plain; its SHA-256 goes into the file
  std::string certificateCn;
};

inline std::string identitiesJson(const std::vector<TestIdentity>& ids, const nlohmann::json& tenants = nlohmann::json::object()) {
  nlohmann::json doc{{"tenants", tenants}, {"identities", nlohmann::json::array()}};
  for (const auto& id : ids) {
    nlohmann::json e{{"name", id.name}, {"role", id.role}};
    if (!id.tenant.empty()) e["tenant"] = id.tenant;
    if (!id.password.empty()) e["password"] = auth::Identities::hashPassword(id.password, 1000);
    if (!id.token.empty()) e["token_sha256"] = auth::Identities::hashToken(id.token);
    if (!id.certificateCn.empty()) e["certificate_cn"] = id.certificateCn;
    doc["identities"].push_back(e);
  }
  return doc.dump(2);
}

inline std::shared_ptr<const auth::Identities> makeIdentities(const std::vector<TestIdentity>& ids,
                                                              const nlohmann::json& tenants = nlohmann::json::object()) {
  auto parsed = auth::Identities::parse(identitiesJson(ids, tenants), "test identities");
  if (!parsed) throw std::runtime_error(parsed.error().message);
  return std::shared_ptr<const auth::Identities>(std::move(*parsed));
}

}  // namespace switchyard::testing
