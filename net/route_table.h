// A service's routes as one declarative table, as bmcweb declares its: each route a path pattern and, per
// method, an entry (what the method needs and what handles it). What the table answers by itself follows from
// it: no route (404), a route without the method (405, with Allow listing what the route serves), and the
// Allow header of every answer. HEAD is served wherever GET is, by GET's entry.
//
// Patterns: literal segments, "{name}" for one segment, and "{name*}" as the last segment for one or more.
// Routes are tried in the order they were added; a route's optional `when` narrows it by the captured segments
// (a composed system may be deleted, a physical one may not: two routes on one pattern).
#pragma once

#include <algorithm>
#include <array>
#include <deque>
#include <expected>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace switchyard::net {

// The captured segments of a matched pattern, in order ("{rest*}" as one string with its slashes).
using RouteParams = std::vector<std::string>;

template <typename Entry>
class RouteTable {
 public:
  using When = std::function<bool(const RouteParams&)>;

  class Route {
   public:
    // This route serves `method` with `entry`.
    Route& on(std::string method, Entry entry) {
      methods_[std::move(method)] = std::move(entry);
      return *this;
    }

   private:
    friend class RouteTable;
    std::vector<std::string> segments_;
    When when_;
    std::map<std::string, Entry> methods_;
  };

  // A new route; add its methods with on(). Patterns start with '/'. A pattern added again without a `when` is the
  // same route (its methods are added to the first's): a service may declare its reads and its changes apart.
  Route& route(std::string_view pattern, When when = {}) {
    if (!when)
      for (Route& existing : routes_)
        if (!existing.when_ && sameShape(existing.segments_, split(pattern))) return existing;
    auto& r = routes_.emplace_back();
    r.segments_ = split(pattern);
    r.when_ = std::move(when);
    return r;
  }

  struct Found {
    const Entry* entry = nullptr;
    RouteParams params;
    std::string allow;  // the route's methods, for the answer's Allow header
  };
  struct Miss {
    bool resourceExists = false;  // false: 404; true: the route does not serve the method (405 with `allow`)
    std::string allow;
  };

  // The entry that serves `method` on `path` (with the captured segments), or why there is none.
  [[nodiscard]] std::expected<Found, Miss> find(std::string_view path, std::string_view method) const {
    const std::vector<std::string> parts = split(path);
    for (const Route& r : routes_) {
      RouteParams params;
      if (!match(r, parts, params)) continue;
      const std::string allow = allowOf(r);
      auto it = r.methods_.find(std::string(method == "HEAD" && !r.methods_.contains("HEAD") ? "GET" : method));
      if (it == r.methods_.end()) return std::unexpected(Miss{true, allow});
      return Found{&it->second, std::move(params), allow};
    }
    return std::unexpected(Miss{});
  }

 private:
  static std::vector<std::string> split(std::string_view path) {
    std::vector<std::string> out;
    std::size_t at = 0;
    while (at < path.size()) {
      const std::size_t slash = path.find('/', at);
      const std::size_t end = slash == std::string_view::npos ? path.size() : slash;
      if (end > at) out.emplace_back(path.substr(at, end - at));
      at = end + 1;
    }
    return out;
  }

  // Two patterns match the same paths: equal literals, and captures of the same kind whatever their names.
  static bool sameShape(const std::vector<std::string>& a, const std::vector<std::string>& b) {
    auto kind = [](const std::string& s) {
      const bool capture = s.size() > 2 && s.front() == '{' && s.back() == '}';
      return !capture ? s : s[s.size() - 2] == '*' ? std::string("{*}") : std::string("{}");
    };
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [&](const std::string& x, const std::string& y) { return kind(x) == kind(y); });
  }

  static bool match(const Route& r, const std::vector<std::string>& parts, RouteParams& params) {
    const auto& segs = r.segments_;
    for (std::size_t i = 0; i < segs.size(); ++i) {
      const std::string& s = segs[i];
      const bool capture = s.size() > 2 && s.front() == '{' && s.back() == '}';
      if (capture && s[s.size() - 2] == '*') {  // the rest, one segment or more
        if (i >= parts.size()) return false;
        std::string rest = parts[i];
        for (std::size_t j = i + 1; j < parts.size(); ++j) rest += "/" + parts[j];
        params.push_back(std::move(rest));
        return !r.when_ || r.when_(params);
      }
      if (i >= parts.size()) return false;
      if (capture)
        params.push_back(parts[i]);
      else if (s != parts[i])
        return false;
    }
    return parts.size() == segs.size() && (!r.when_ || r.when_(params));
  }

  static std::string allowOf(const Route& r) {
    static constexpr std::array<std::string_view, 6> kOrder{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"};
    std::string out;
    for (std::string_view m : kOrder) {
      const bool served = r.methods_.contains(std::string(m)) || (m == "HEAD" && r.methods_.contains("GET"));
      if (!served) continue;
      if (!out.empty()) out += ", ";
      out += m;
    }
    return out;
  }

  std::deque<Route> routes_;  // a deque: a Route& stays valid while more are added
};

}  // namespace switchyard::net
