// The composition reservations the engine holds (Redfish's PreviewReserve, reservation.h): one of the engine's
// parts (issue 59). It owns the reservations and their numbering and answers what a request must respect (a name
// or a host a reservation holds, a tenant's held systems for its quota); the engine holds and lets go of the
// devices in the pool. Memory only, like the reservations themselves; control thread only.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "composer/engine/reservation.h"

namespace switchyard {

class ReservationBook {
 public:
  // The id the next reservation gets ("rsv-000001", ...); taken by add().
  [[nodiscard]] std::string nextId() const;
  // Keeps `r` (its id from nextId()) until it is taken out.
  void add(Reservation r);
  [[nodiscard]] const Reservation* find(std::string_view id) const;
  // Takes it out; answers whether it was there.
  bool erase(std::string_view id);
  // Takes out every reservation whose time ended at `now`, oldest id first.
  [[nodiscard]] std::vector<Reservation> takeExpired(Timestamp now);
  // The reservation that holds the system name, if any.
  [[nodiscard]] const Reservation* holdingName(std::string_view name) const;
  // The reservation that holds the host (empty if none).
  [[nodiscard]] std::string holderOfHost(std::string_view host) const;
  // Every host a reservation holds, with its reservation's id.
  [[nodiscard]] std::vector<std::pair<HostId, std::string>> heldHosts() const;
  // The systems a tenant's reservations hold (but reservation `except`'s): they count towards its quota as if composed.
  [[nodiscard]] std::vector<const HeldSystem*> heldFor(std::string_view tenant, std::string_view except = {}) const;
  // Every reservation still in time at `now`, by id (a read: one past its time is left out, not taken out).
  [[nodiscard]] std::vector<Reservation> live(Timestamp now) const;
  [[nodiscard]] bool empty() const { return reservations_.empty(); }

 private:
  std::map<std::string, Reservation, std::less<>> reservations_;
  std::uint64_t lastNumber_ = 0;
};

}  // namespace switchyard
