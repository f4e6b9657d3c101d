#include "composer/engine/reservation_book.h"

#include <fmt/format.h>

namespace switchyard {

std::string ReservationBook::nextId() const { return fmt::format("rsv-{:06}", lastNumber_ + 1); }

void ReservationBook::add(Reservation r) {
  ++lastNumber_;
  std::string id = r.id;
  reservations_.insert_or_assign(std::move(id), std::move(r));
}

const Reservation* ReservationBook::find(std::string_view id) const {
  auto it = reservations_.find(id);
  return it == reservations_.end() ? nullptr : &it->second;
}

bool ReservationBook::erase(std::string_view id) {
  auto it = reservations_.find(id);
  if (it == reservations_.end()) return false;
  reservations_.erase(it);
  return true;
}

std::vector<Reservation> ReservationBook::takeExpired(Timestamp now) {
  std::vector<Reservation> out;
  for (auto it = reservations_.begin(); it != reservations_.end();) {
    if (it->second.expiresAt > now) {
      ++it;
      continue;
    }
    out.push_back(std::move(it->second));
    it = reservations_.erase(it);
  }
  return out;
}

const Reservation* ReservationBook::holdingName(std::string_view name) const {
  for (const auto& [id, r] : reservations_)
    for (const auto& s : r.systems)
      if (s.name == name) return &r;
  return nullptr;
}

std::string ReservationBook::holderOfHost(std::string_view host) const {
  for (const auto& [id, r] : reservations_)
    for (const auto& s : r.systems)
      if (s.placement.hostId == host) return id;
  return {};
}

std::vector<std::pair<HostId, std::string>> ReservationBook::heldHosts() const {
  std::vector<std::pair<HostId, std::string>> out;
  for (const auto& [id, r] : reservations_)
    for (const auto& s : r.systems) out.emplace_back(s.placement.hostId, id);
  return out;
}

std::vector<const HeldSystem*> ReservationBook::heldFor(std::string_view tenant, std::string_view except) const {
  std::vector<const HeldSystem*> out;
  for (const auto& [id, r] : reservations_)
    if (r.tenant == tenant && id != except)
      for (const auto& s : r.systems) out.push_back(&s);
  return out;
}

std::vector<Reservation> ReservationBook::live(Timestamp now) const {
  std::vector<Reservation> out;
  for (const auto& [id, r] : reservations_)
    if (r.expiresAt > now) out.push_back(r);
  return out;
}

}  // namespace switchyard
