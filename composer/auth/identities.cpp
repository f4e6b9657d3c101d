#include "composer/auth/identities.h"
#include "composer/model/queue.h"
#include "composer/model/topology.h"

#include <fmt/format.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace switchyard::auth {

namespace {

using nlohmann::json;

std::string hex(const unsigned char* data, std::size_t size) {
  std::string out;
  out.reserve(size * 2);
  for (std::size_t i = 0; i < size; ++i) out += fmt::format("{:02x}", data[i]);
  return out;
}

std::optional<std::vector<unsigned char>> unhex(std::string_view s) {
  if (s.size() % 2 != 0) return std::nullopt;
  std::vector<unsigned char> out;
  for (std::size_t i = 0; i < s.size(); i += 2) {
    unsigned value = 0;
    for (char c : s.substr(i, 2)) {
      value <<= 4;
      if (c >= '0' && c <= '9') value |= static_cast<unsigned>(c - '0');
      else if (c >= 'a' && c <= 'f') value |= static_cast<unsigned>(c - 'a' + 10);
      else return std::nullopt;
    }
    out.push_back(static_cast<unsigned char>(value));
  }
  return out;
}

std::string sha256Hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_Digest(data.data(), data.size(), digest, &size, EVP_sha256(), nullptr);
  return hex(digest, size);
}

bool sameBytes(std::string_view a, std::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

struct PasswordHash {
  int iterations = 0;
  std::vector<unsigned char> salt;
  std::vector<unsigned char> hash;
};

std::optional<PasswordHash> parsePasswordHash(std::string_view s) {
  const std::string_view prefix = "pbkdf2-sha256$";
  if (s.substr(0, prefix.size()) != prefix) return std::nullopt;
  s.remove_prefix(prefix.size());
  const auto first = s.find('$');
  const auto second = first == std::string_view::npos ? first : s.find('$', first + 1);
  if (second == std::string_view::npos) return std::nullopt;
  PasswordHash h;
  try {
    std::size_t used = 0;
    h.iterations = std::stoi(std::string(s.substr(0, first)), &used);
    if (used != first || h.iterations < 1000 || h.iterations > 10'000'000) return std::nullopt;
  } catch (const std::exception&) {
    return std::nullopt;
  }
  auto salt = unhex(s.substr(first + 1, second - first - 1));
  auto hash = unhex(s.substr(second + 1));
  if (!salt || !hash || salt->size() < 8 || hash->size() != 32) return std::nullopt;
  h.salt = std::move(*salt);
  h.hash = std::move(*hash);
  return h;
}

std::vector<unsigned char> pbkdf2(std::string_view password, const std::vector<unsigned char>& salt, int iterations) {
  std::vector<unsigned char> out(32);
  PKCS5_PBKDF2_HMAC(password.data(), static_cast<int>(password.size()), salt.data(), static_cast<int>(salt.size()), iterations,
                    EVP_sha256(), static_cast<int>(out.size()), out.data());
  return out;
}

bool printableName(const std::string& s) {
  return !s.empty() && s.size() <= 128 && std::all_of(s.begin(), s.end(), [](char c) { return c > 0x20 && c < 0x7f && c != ':'; });
}

Result<std::optional<int>> limit(const json& quota, const char* key, const std::string& where) {
  if (!quota.contains(key)) return std::optional<int>{};
  const json& v = quota.at(key);
  if (!v.is_number_integer() || v.get<long long>() < 0 || v.get<long long>() > 1'000'000)
    return fail(Code::kInvalidArgument, fmt::format("{}: {} must be a whole number from 0 up", where, key));
  return std::optional<int>(v.get<int>());
}

}  // namespace

namespace {
// Every identity parsed in this process gets a generation of its own (Identity::generation).
std::uint64_t nextGeneration() {
  static std::atomic<std::uint64_t> last{0};
  return ++last;
}
}  // namespace

Result<std::unique_ptr<Identities>> Identities::parse(std::string_view text, std::string_view source) {
  json doc = json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) return fail(Code::kInvalidArgument, fmt::format("{}: not a JSON object", source));
  for (const auto& [key, value] : doc.items())
    if (key != "tenants" && key != "identities")
      return fail(Code::kInvalidArgument, fmt::format("{}: unknown key '{}' (expected tenants, identities)", source, key));
  std::unique_ptr<Identities> out(new Identities());
  if (doc.contains("tenants")) {
    if (!doc["tenants"].is_object()) return fail(Code::kInvalidArgument, fmt::format("{}: tenants must be an object", source));
    for (const auto& [tenant, quota] : doc["tenants"].items()) {
      const std::string where = fmt::format("{}: tenant '{}'", source, tenant);
      if (!printableName(tenant)) return fail(Code::kInvalidArgument, fmt::format("{}: 1-128 printable characters", where));
      if (!quota.is_object()) return fail(Code::kInvalidArgument, fmt::format("{}: expected an object of limits", where));
      static const std::set<std::string> kKeys{"max_gpus",      "max_systems", "max_memory_gib", "max_nvme", "max_nics", "max_endpoints", "share",
                                               "max_queued",    "default_lease", "max_lease",
                                               "reclaim_idle_after", "reclaim_mode", "max_preempted_gpus_per_day",
                                               "priority_classes"};
      for (const auto& [key, v] : quota.items())
        if (!kKeys.contains(key))
          return fail(Code::kInvalidArgument,
                      fmt::format("{}: unknown limit '{}' (expected max_gpus, max_systems, max_memory_gib, max_nvme, max_nics, max_endpoints, share, max_queued, default_lease, max_lease, "
                                  "reclaim_idle_after, reclaim_mode, max_preempted_gpus_per_day, priority_classes)",
                                  where, key));
      TenantQuota q;
      SY_ASSIGN(q.maxGpus, limit(quota, "max_gpus", where));
      SY_ASSIGN(q.maxSystems, limit(quota, "max_systems", where));
      SY_ASSIGN(q.maxMemoryGiB, limit(quota, "max_memory_gib", where));
      SY_ASSIGN(q.maxDrives, limit(quota, "max_nvme", where));
      SY_ASSIGN(q.maxNics, limit(quota, "max_nics", where));
      if (quota.contains("max_endpoints")) {
        const json& classes = quota.at("max_endpoints");
        if (!classes.is_object())
          return fail(Code::kInvalidArgument, fmt::format("{}: max_endpoints must be an object of counts by device class, e.g. {{\"fpga\": 2}}", where));
        for (const auto& [deviceClass, n] : classes.items()) {
          if (!isClassName(deviceClass))
            return fail(Code::kInvalidArgument,
                        fmt::format("{}: max_endpoints: '{}' is not another device class (a-z, then a-z, 0-9 or -; at most 32; GPUs, pooled memory, drives and "
                                    "NICs have max_gpus, max_memory_gib, max_nvme and max_nics)",
                                    where, deviceClass));
          SY_ASSIGN(auto count, limit(classes, deviceClass.c_str(), fmt::format("{}: max_endpoints", where)));
          q.maxEndpoints.emplace(deviceClass, *count);
        }
      }
      SY_ASSIGN(q.maxQueued, limit(quota, "max_queued", where));
      SY_ASSIGN(q.maxPreemptedGpusPerDay, limit(quota, "max_preempted_gpus_per_day", where));
      if (quota.contains("share")) {
        const json& v = quota.at("share");
        if (!v.is_number() || !(v.get<double>() > 0) || v.get<double>() > 1e6)
          return fail(Code::kInvalidArgument, fmt::format("{}: share must be a positive number (a fair-share weight; 1 when unset)", where));
        q.share = v.get<double>();
      }
      for (auto [key, field] : {std::pair{"default_lease", &q.defaultLease}, std::pair{"max_lease", &q.maxLease}}) {
        if (!quota.contains(key)) continue;
        const json& v = quota.at(key);
        const auto d = v.is_string() ? parseDuration(v.get<std::string>()) : std::nullopt;
        if (!d) return fail(Code::kInvalidArgument, fmt::format("{}: {} must be a duration such as \"8h\" or \"2d\"", where, key));
        *field = *d;
      }
      if (quota.contains("reclaim_idle_after")) {
        const json& v = quota.at("reclaim_idle_after");
        const bool never = v.is_string() && (v.get<std::string>() == "never" || v.get<std::string>() == "off");
        const auto d = v.is_string() && !never ? parseDuration(v.get<std::string>()) : std::nullopt;
        if (!never && (!d || d->count() < 60'000))
          return fail(Code::kInvalidArgument, fmt::format("{}: reclaim_idle_after must be a duration of at least 1m (\"30m\", \"2h\") or \"never\"", where));
        q.reclaimIdleAfter = never ? std::chrono::milliseconds(0) : *d;
      }
      if (quota.contains("reclaim_mode")) {
        const json& v = quota.at("reclaim_mode");
        if (!v.is_string() || (v.get<std::string>() != "dry-run" && v.get<std::string>() != "detach"))
          return fail(Code::kInvalidArgument, fmt::format("{}: reclaim_mode must be \"dry-run\" or \"detach\"", where));
        q.reclaimDryRun = v.get<std::string>() == "dry-run";
      }
      if (quota.contains("priority_classes")) {
        const json& v = quota.at("priority_classes");
        const bool names = v.is_array() && !v.empty() && std::all_of(v.begin(), v.end(), [](const json& c) {
          return c.is_string() && !c.get<std::string>().empty() && c.get<std::string>().size() <= 63;
        });
        if (!names)
          return fail(Code::kInvalidArgument,
                      fmt::format("{}: priority_classes must be a non-empty list of class names, e.g. [\"batch\", \"spot\"]", where));
        q.priorityClasses = v.get<std::vector<std::string>>();
      }
      if (q.defaultLease && q.maxLease && *q.defaultLease > *q.maxLease)
        return fail(Code::kInvalidArgument, fmt::format("{}: default_lease is longer than max_lease", where));
      out->quotas_.emplace(tenant, q);
    }
  }
  if (!doc.contains("identities") || !doc["identities"].is_array() || doc["identities"].empty())
    return fail(Code::kInvalidArgument, fmt::format("{}: identities must be a non-empty array", source));
  std::set<std::string> names, tokens, certificates;
  for (std::size_t i = 0; i < doc["identities"].size(); ++i) {
    const json& e = doc["identities"][i];
    const std::string where = fmt::format("{}: identities[{}]", source, i);
    if (!e.is_object()) return fail(Code::kInvalidArgument, fmt::format("{}: expected an object", where));
    for (const auto& [key, v] : e.items()) {
      static const std::set<std::string> kKeys{"name", "role", "tenant", "password", "token_sha256", "certificate_cn"};
      if (!kKeys.contains(key))
        return fail(Code::kInvalidArgument,
                    fmt::format("{}: unknown key '{}' (expected name, role, tenant, password, token_sha256, certificate_cn)", where, key));
      if (!v.is_string()) return fail(Code::kInvalidArgument, fmt::format("{}: {} must be a string", where, key));
    }
    Identity id;
    id.name = e.value("name", "");
    if (!printableName(id.name))
      return fail(Code::kInvalidArgument, fmt::format("{}: name must be 1-128 printable characters without spaces or ':'", where));
    const std::string role = e.value("role", "");
    auto parsed = parseRole(role);
    if (!parsed) return fail(Code::kInvalidArgument, fmt::format("{} ({}): role '{}' is not one of viewer, tenant, operator, admin", where, id.name, role));
    id.role = *parsed;
    id.tenant = e.value("tenant", "");
    if (id.role == Role::kTenant && !printableName(id.tenant))
      return fail(Code::kInvalidArgument, fmt::format("{} ({}): the tenant role needs a tenant", where, id.name));
    if (id.role != Role::kTenant && !id.tenant.empty())
      return fail(Code::kInvalidArgument,
                  fmt::format("{} ({}): only the tenant role acts for one tenant; {} acts for all", where, id.name, role));
    id.passwordHash = e.value("password", "");
    if (!id.passwordHash.empty() && !parsePasswordHash(id.passwordHash))
      return fail(Code::kInvalidArgument,
                  fmt::format("{} ({}): password must be a hash from `yardd --hash-password` (pbkdf2-sha256$ITERATIONS$SALT$HASH)", where, id.name));
    id.tokenSha256 = e.value("token_sha256", "");
    if (!id.tokenSha256.empty() && (id.tokenSha256.size() != 64 || !unhex(id.tokenSha256)))
      return fail(Code::kInvalidArgument, fmt::format("{} ({}): token_sha256 must be 64 lower-case hex digits (`yardd --new-token`)", where, id.name));
    id.certificateCn = e.value("certificate_cn", "");
    if (id.passwordHash.empty() && id.tokenSha256.empty() && id.certificateCn.empty())
      return fail(Code::kInvalidArgument, fmt::format("{} ({}): no credential (password, token_sha256 or certificate_cn)", where, id.name));
    if (!names.insert(id.name).second) return fail(Code::kInvalidArgument, fmt::format("{}: name '{}' appears twice", where, id.name));
    if (!id.tokenSha256.empty() && !tokens.insert(id.tokenSha256).second)
      return fail(Code::kInvalidArgument, fmt::format("{} ({}): the same token is given to another identity", where, id.name));
    if (!id.certificateCn.empty() && !certificates.insert(id.certificateCn).second)
      return fail(Code::kInvalidArgument, fmt::format("{} ({}): certificate_cn '{}' is given to another identity", where, id.name, id.certificateCn));
    id.generation = nextGeneration();
    out->identities_.push_back(std::move(id));
  }
  return out;
}

Result<std::unique_ptr<Identities>> Identities::load(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) return fail(Code::kInvalidArgument, fmt::format("{}: cannot read the identities file", file.string()));
  std::stringstream text;
  text << in.rdbuf();
  return parse(text.str(), file.string());
}

std::vector<Identity> Identities::identities() const {
  std::shared_lock lock(data_);
  return identities_;
}

TenantQuotas Identities::quotas() const {
  std::shared_lock lock(data_);
  return quotas_;
}

void Identities::replaceWith(const Identities& fresh) {
  if (&fresh == this) return;
  std::shared_lock from(fresh.data_);
  std::unique_lock to(data_);
  std::vector<Identity> next = fresh.identities_;  // each with a generation of its own, from parse()
  for (auto& id : next)
    for (const auto& old : identities_)
      if (old.name == id.name && old.passwordHash == id.passwordHash && old.tokenSha256 == id.tokenSha256 &&
          old.certificateCn == id.certificateCn && old.role == id.role && old.tenant == id.tenant)
        id.generation = old.generation;  // unchanged: its logins go on
  identities_ = std::move(next);
  quotas_ = fresh.quotas_;
}

const Clock& Identities::defaultClock() {
  static const SystemClock clock;
  return clock;
}

std::optional<std::chrono::seconds> Identities::lockedIn(const FailureCounts& counts, std::string_view key) const {
  auto f = counts.find(key);
  if (f == counts.end() || f->second.lockedUntil <= clock_->now()) return std::nullopt;
  return std::chrono::ceil<std::chrono::seconds>(std::chrono::nanoseconds(f->second.lockedUntil - clock_->now()));
}

std::optional<std::chrono::seconds> Identities::lockedFor(std::string_view name) const {
  std::lock_guard lock(mutex_);
  return lockedIn(failures_, name);
}

std::optional<std::chrono::seconds> Identities::sourceLockedFor(std::string_view source) const {
  if (source.empty()) return std::nullopt;
  std::lock_guard lock(mutex_);
  return lockedIn(sourceFailures_, source);
}

void Identities::onLockout(LockoutObserver observer) {
  std::lock_guard lock(mutex_);
  lockoutObserver_ = std::move(observer);
}

void Identities::recordFailure(const std::string& name, std::string_view source) const {
  LockoutObserver observer;
  std::vector<Lockout> locked;
  {
    std::lock_guard lock(mutex_);
    const Timestamp now = clock_->now();
    // One more failure for `key`: past `free` in a row it locks for 1 s, doubling with each further one.
    const auto count = [&](FailureCounts& counts, std::string_view key, int free, Lockout::Of of) {
      if (counts.size() > 10'000)  // names nobody has, sources gone: forget those not locked now
        std::erase_if(counts, [now](const auto& f) { return f.second.lockedUntil <= now; });
      Failures& f = counts[std::string(key)];
      // Quiet for as long as the longest lockout, counted from the last failure or the end of the last lock,
      // whichever is later: the count starts again (only a match ends a name's count sooner). A guesser that
      // comes back as a lock ends keeps its count.
      const Timestamp quietSince = std::max(f.lastFailure, f.lockedUntil);
      if (f.count > 0 && now - quietSince > std::chrono::duration_cast<std::chrono::nanoseconds>(kMaxLockout).count()) f.count = 0;
      f.lastFailure = now;
      if (++f.count < free) return;
      const int doublings = std::min(f.count - free, 10);
      const auto wait = std::min<std::chrono::nanoseconds>(std::chrono::seconds(1) * (1 << doublings), kMaxLockout);
      f.lockedUntil = now + wait.count();
      locked.push_back({of, std::string(key), std::chrono::ceil<std::chrono::seconds>(wait), f.count});
    };
    count(failures_, name, kFreePasswordAttempts, Lockout::Of::kName);
    if (!source.empty()) count(sourceFailures_, source, kFreeSourceAttempts, Lockout::Of::kSource);
    if (!locked.empty()) observer = lockoutObserver_;
  }
  if (observer)
    for (const auto& l : locked) observer(l);
}

// What verified_ remembers of a password that matched: its SHA-256 with the identity's name and stored hash.
std::string Identities::rememberedKey(const Identity& id, std::string_view password) {
  return sha256Hex(fmt::format("{}\n{}\n{}", id.name, id.passwordHash, password));
}

void Identities::forgetFailures(const std::string& name, std::string_view source) const {
  (void)source;  // a source's count is not reset by a match (issue "No request can stop yardd", N7)
  failures_.erase(name);
}

bool Identities::suspect(std::string_view name) const {
  {
    std::shared_lock data(data_);
    if (std::none_of(identities_.begin(), identities_.end(), [&](const Identity& id) { return id.name == name && !id.passwordHash.empty(); }))
      return true;
  }
  std::lock_guard lock(mutex_);
  auto f = failures_.find(name);
  return f != failures_.end() && f->second.count > 0;
}

bool Identities::checkIsSlow(std::string_view name, std::string_view password, std::string_view source) const {
  if (lockedFor(name) || sourceLockedFor(source)) return false;  // refused unchecked
  std::shared_lock data(data_);
  for (const auto& id : identities_)
    if (id.name == name && !id.passwordHash.empty()) {
      const std::string remembered = rememberedKey(id, password);
      std::lock_guard lock(mutex_);
      return !verified_.contains(remembered);
    }
  return true;  // a name nobody has costs a real check's work
}

std::optional<Caller> Identities::byPassword(std::string_view name, std::string_view password, std::string_view source,
                                             std::uint64_t* generation) const {
  // Not even checked: a locked name or source costs a guesser nothing to learn.
  if (lockedFor(name) || sourceLockedFor(source)) return std::nullopt;
  std::shared_lock data(data_);
  const Identity* found = nullptr;
  for (const auto& id : identities_)
    if (id.name == name && !id.passwordHash.empty()) found = &id;
  if (found == nullptr) {
    // The same work as a real account's check, so that the time does not tell which names exist.
    for (const auto& id : identities_)
      if (auto stored = parsePasswordHash(id.passwordHash)) {
        (void)pbkdf2(password, stored->salt, stored->iterations);
        break;
      }
    data.unlock();
    recordFailure(std::string(name), source);
    return std::nullopt;
  }
  const Identity& id = *found;
  const std::string remembered = rememberedKey(id, password);
  {
    std::lock_guard lock(mutex_);
    if (verified_.contains(remembered)) {  // a match like any other: it starts the name's count again
      forgetFailures(id.name, source);
      if (generation) *generation = id.generation;
      return id.caller();
    }
  }
  const auto stored = parsePasswordHash(id.passwordHash);
  const auto computed = pbkdf2(password, stored->salt, stored->iterations);
  const Caller caller = id.caller();
  const std::uint64_t matchedGeneration = id.generation;
  data.unlock();
  if (CRYPTO_memcmp(computed.data(), stored->hash.data(), computed.size()) != 0) {
    recordFailure(caller.identity, source);
    return std::nullopt;
  }
  std::lock_guard lock(mutex_);
  forgetFailures(caller.identity, source);
  if (verified_.size() > 4096) verified_.clear();
  verified_.insert(remembered);
  if (generation) *generation = matchedGeneration;
  return caller;
}

std::optional<Caller> Identities::byToken(std::string_view token) const {
  if (token.empty()) return std::nullopt;
  const std::string hash = sha256Hex(token);
  std::optional<Caller> found;
  std::shared_lock data(data_);
  for (const auto& id : identities_)  // every entry compared, so the time does not tell which one matched
    if (!id.tokenSha256.empty() && sameBytes(id.tokenSha256, hash)) found = id.caller();
  return found;
}

std::optional<Caller> Identities::byCertificate(std::string_view commonName) const {
  if (commonName.empty()) return std::nullopt;
  std::shared_lock data(data_);
  for (const auto& id : identities_)
    if (id.certificateCn == commonName) return id.caller();
  return std::nullopt;
}

std::optional<Caller> Identities::current(std::string_view name, std::uint64_t generation) const {
  std::shared_lock data(data_);
  for (const auto& id : identities_)
    if (id.name == name) return id.generation == generation ? std::optional<Caller>(id.caller()) : std::nullopt;
  return std::nullopt;
}

std::optional<Caller> Identities::byName(std::string_view name) const {
  std::shared_lock data(data_);
  for (const auto& id : identities_)
    if (id.name == name) return id.caller();
  return std::nullopt;
}

std::string Identities::hashPassword(std::string_view password, int iterations) {
  std::vector<unsigned char> salt(16);
  RAND_bytes(salt.data(), static_cast<int>(salt.size()));
  const auto hash = pbkdf2(password, salt, iterations);
  return fmt::format("pbkdf2-sha256${}${}${}", iterations, hex(salt.data(), salt.size()), hex(hash.data(), hash.size()));
}

std::string Identities::hashToken(std::string_view token) { return sha256Hex(token); }

std::string Identities::newToken() {
  unsigned char bytes[32];
  RAND_bytes(bytes, sizeof bytes);
  return "syt_" + hex(bytes, sizeof bytes);
}

}  // namespace switchyard::auth
