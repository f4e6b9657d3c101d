#include "cli/output.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <chrono>
#include <map>

#include "composer/model/queue.h"
#include <ostream>

namespace yardctl {

namespace pb = switchyard::v1;

void Table::print(std::ostream& out) const {
  std::vector<std::size_t> widths(headers_.size());
  for (std::size_t i = 0; i < headers_.size(); ++i) widths[i] = headers_[i].size();
  for (const auto& row : rows_)
    for (std::size_t i = 0; i < row.size() && i < widths.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  auto line = [&](const std::vector<std::string>& cells) {
    std::string s;
    for (std::size_t i = 0; i < cells.size(); ++i) {
      s += cells[i];
      if (i + 1 < cells.size()) s += std::string(widths[i] - cells[i].size() + 2, ' ');
    }
    out << s << "\n";
  };
  line(headers_);
  for (const auto& row : rows_) line(row);
}

std::string toJson(const google::protobuf::Message& message) {
  std::string json;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = true;
  (void)google::protobuf::util::MessageToJsonString(message, &json, options);
  return json;
}

namespace {

// "SYSTEM_STATE_COMPOSED" -> "composed"
std::string shortEnum(const std::string& full, std::string_view prefix) {
  std::string s = full.starts_with(prefix) ? full.substr(prefix.size()) : full;
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return c == '_' ? '-' : static_cast<char>(std::tolower(c)); });
  return s;
}

}  // namespace

std::string orDash(const std::string& s) { return s.empty() ? "-" : s; }

std::string stateName(pb::SystemState s) { return shortEnum(pb::SystemState_Name(s), "SYSTEM_STATE_"); }
std::string stateName(pb::OperationState s) { return shortEnum(pb::OperationState_Name(s), "OPERATION_STATE_"); }
std::string kindName(pb::OperationKind k) { return shortEnum(pb::OperationKind_Name(k), "OPERATION_KIND_"); }
std::string allocationName(pb::DeviceAllocation a) { return shortEnum(pb::DeviceAllocation_Name(a), "DEVICE_ALLOCATION_"); }

std::string noneMatched(std::string_view what, std::string_view command, const std::vector<std::pair<std::string, std::string>>& filters) {
  std::vector<std::string> set;
  for (const auto& [flag, value] : filters)
    if (!value.empty()) set.push_back(fmt::format("{} {}", flag, value.find_first_of(" (),!") == std::string::npos ? value : "'" + value + "'"));
  if (set.empty()) return {};
  return fmt::format("no {} matches {} (`{}` lists them all)", what, fmt::join(set, ", "), command);
}

void printSystems(const pb::ListSystemsResponse& r, std::ostream& out) {
  if (r.systems().empty()) {
    out << "no composed systems (create one with `yardctl compose NAME --gpus N`)\n";
    return;
  }
  // BOUND: devices of every kind, by kind when there are several ("6 (4 gpu, 1 nic, 1 nvme)").
  Table t({"ID", "NAME", "HOST", "STATE", "BOUND", "MIG", "SHARES", "TENANT", "DEVICES"});
  auto bound = [](const pb::System& s) {
    std::map<std::string, int> kinds;
    for (const auto& b : s.bindings()) ++kinds[b.kind().empty() ? "?" : b.kind()];
    if (kinds.size() <= 1) return std::to_string(s.bindings_size());
    std::vector<std::string> parts;
    for (const auto& [kind, n] : kinds) parts.push_back(fmt::format("{} {}", n, kind));
    return fmt::format("{} ({})", s.bindings_size(), fmt::join(parts, ", "));
  };
  for (const auto& s : r.systems()) {
    std::string devices;
    for (const auto& b : s.bindings()) devices += (devices.empty() ? "" : ",") + b.device_id();
    std::string mig;
    for (const auto& i : s.gpu_instances()) mig += (mig.empty() ? "" : ",") + i.profile();
    std::string shares;
    for (const auto& sh : s.gpu_shares()) shares += fmt::format("{}{:g}%", shares.empty() ? "" : ",", sh.milli() / 10.0);
    t.add({s.id(), s.name(), s.host_id(), s.progress().empty() ? stateName(s.state()) : fmt::format("{} ({})", stateName(s.state()), s.progress()), bound(s), orDash(mig), orDash(shares), s.tenant(),
           orDash(devices)});
  }
  t.print(out);
  for (const auto& s : r.systems())  // a degraded system says why
    if (!s.state_reason().empty()) out << fmt::format("{} {}: {}\n", stateName(s.state()), s.name(), s.state_reason());
}

std::string durationText(std::int64_t seconds) {
  if (seconds <= 0) return "-";
  return switchyard::formatDuration(std::chrono::seconds(seconds));
}

void printQueue(const pb::ListQueueResponse& r, std::ostream& out) {
  if (r.entries().empty()) {
    out << "the queue is empty (`yardctl compose NAME --gpus N --queue` waits here when it does not fit)\n";
    return;
  }
  Table t({"POS", "OPERATION", "NAME", "TENANT", "CLASS", "ASKS", "QUEUED AT", "TIMEOUT AT", "LEASE", "WAITING FOR"});
  for (const auto& e : r.entries())
    t.add({std::to_string(e.position()), e.operation_id(), e.name(), e.tenant(), e.ticket().priority_class(), e.ticket().shape(),
           e.ticket().enqueued_at(), orDash(e.ticket().deadline()), durationText(e.ticket().lease_seconds()),
           orDash(e.waiting_for().substr(0, e.waiting_for().find('\n')))});  // the first line: the rest follows the table
  t.print(out);
  // A reason of several lines (what each host lacks, a preemption it waits for) in full, under the table.
  for (const auto& e : r.entries()) {
    if (e.waiting_for().find('\n') == std::string::npos) continue;
    out << fmt::format("\n{} ({}) waits for:\n", e.name(), e.operation_id());
    std::string_view rest = e.waiting_for();
    while (!rest.empty()) {
      const auto nl = rest.find('\n');
      if (const auto line = rest.substr(0, nl); !line.empty()) out << "  " << line << "\n";
      if (nl == std::string_view::npos) break;
      rest.remove_prefix(nl + 1);
    }
  }
}

void printSystem(const pb::System& s, std::ostream& out) {
  out << fmt::format("{} ({})\n  host:    {}\n  state:   {}\n  tenant:  {}\n  created: {}\n", s.name(), s.id(), orDash(s.host_id()),
                     s.progress().empty() ? stateName(s.state()) : fmt::format("{} ({})", stateName(s.state()), s.progress()), s.tenant(),
                     s.created_at());
  if (!s.state_reason().empty()) out << fmt::format("  why:     {}\n", s.state_reason());
  if (!s.lease_expires_at().empty()) out << fmt::format("  lease:   until {} (`yardctl renew {} --lease DURATION`)\n", s.lease_expires_at(), s.name());
  if (!s.active_operation().empty()) out << "  running: " << s.active_operation() << "\n";
  for (const auto& [k, v] : std::map<std::string, std::string>(s.labels().begin(), s.labels().end()))
    out << fmt::format("  label:   {}={}\n", k, v);
  out << fmt::format("  devices: {}\n", s.bindings_size());
  for (const auto& b : s.bindings()) {
    out << fmt::format("    {}  via {}", b.device_id(), b.upstream_port_id());
    if (!b.host_pci_address().empty()) out << fmt::format("  on host at {}", b.host_pci_address());
    if (!b.uuid().empty()) out << fmt::format("  {}", b.uuid());
    out << "\n";
    for (const auto& i : s.gpu_instances())
      if (i.device_id() == b.device_id())
        out << fmt::format("      MIG {} at slice {}  (detach with -i {}@{})\n", i.profile(), i.start(), i.device_id(), i.start());
    for (const auto& sh : s.gpu_shares())
      if (sh.device_id() == b.device_id())
        out << fmt::format("      share #{}: {:g}% of its time  (detach with --share {})\n", sh.id(), sh.milli() / 10.0, sh.id());
  }
}

void printDevices(const pb::ListDevicesResponse& r, std::ostream& out) {
  // SIZE: a GPU's memory, a drive's capacity, a memory device's share; a NIC's port speed.
  Table t({"ID", "KIND", "MODEL", "SIZE", "SWITCH", "HEALTH", "STATE", "SYSTEM", "HOST"});
  auto size = [](const pb::Device& d) {
    if (d.kind() == "nic") return d.speed_gbps() > 0 ? fmt::format("{}Gb/s", d.speed_gbps()) : std::string("-");
    return fmt::format("{}G", d.memory_gib());
  };
  for (const auto& d : r.devices())
    t.add({d.id(), d.kind(), d.model(), size(d), d.switch_id(), d.health(), allocationName(d.allocation()), orDash(d.system_id()),
           orDash(d.host_id())});
  t.print(out);
  const auto free = std::count_if(r.devices().begin(), r.devices().end(), [](auto& d) { return d.allocation() == pb::DEVICE_ALLOCATION_FREE; });
  out << fmt::format("{} device(s), {} free\n", r.devices_size(), free);
  // Quarantined ones say why, and how an operator gets them back.
  for (const auto& d : r.devices())
    if (d.allocation() == pb::DEVICE_ALLOCATION_QUARANTINED)
      out << fmt::format("quarantined {}: {} (`yardctl devices release {}` once it is safe)\n", d.id(), d.owner().empty() ? "no reason recorded" : d.owner(),
                         d.id());
}

void printHosts(const pb::ListHostsResponse& r, std::ostream& out) {
  Table t({"ID", "SYSTEM", "DEVICES", "CPU", "MEMORY", "UPSTREAM PORTS", "HOST POLICY", "HOST SIDE"});
  for (const auto& h : r.hosts()) {
    std::string ports;
    for (const auto& u : h.upstream_ports())
      ports += fmt::format("{}{}@{}(numa{})", ports.empty() ? "" : " ", u.port_id(), u.switch_id(), u.numa_node());
    t.add({h.id(), orDash(h.system_id()), fmt::format("{}/{}", h.attached_devices(), h.max_devices()), std::to_string(h.cpu_cores()),
           fmt::format("{}G", h.memory_gib()), ports, orDash(h.host_policy()), orDash(h.host_side())});
  }
  t.print(out);
}

void printTopology(const pb::Topology& t, std::ostream& out) {
  std::map<std::string, const pb::Device*> devices;
  for (const auto& d : t.devices()) devices[d.id()] = &d;
  std::map<std::string, std::string> systemOfHost;
  for (const auto& h : t.hosts()) systemOfHost[h.id()] = h.system_id();
  for (const auto& sw : t.switches()) {
    out << fmt::format("{} ({}{}{})\n", sw.id(), sw.kind(), sw.model().empty() ? "" : ", " + sw.model(),
                       sw.domain().empty() || sw.domain() == "default" ? "" : ", domain " + sw.domain());
    for (int i = 0; i < sw.ports_size(); ++i) {
      const auto& p = sw.ports(i);
      const char* branch = i + 1 == sw.ports_size() ? "└─" : "├─";
      std::string what;
      if (p.kind() == "upstream") {
        what = p.host_id().empty() ? "(not cabled)" : "host " + p.host_id();
        if (!p.host_id().empty() && !systemOfHost[p.host_id()].empty()) what += " [" + systemOfHost[p.host_id()] + "]";
      } else if (p.kind() == "inter-switch") {
        what = "link to " + p.peer_port();
      } else if (auto it = devices.find(p.device_id()); it != devices.end()) {
        const pb::Device& d = *it->second;
        what = fmt::format("{} {}", d.id(), d.model());
        if (!d.upstream_port_id().empty())
          what += fmt::format("  => {} via {} [{}]", d.host_id(), d.upstream_port_id(), d.system_id());
        else if (d.allocation() != pb::DEVICE_ALLOCATION_FREE)
          what += fmt::format("  ({}{})", allocationName(d.allocation()), d.owner().empty() ? "" : ": " + d.owner());
        else
          what += "  free";
        if (d.health() != "ok") what += "  health " + d.health();
      } else {
        what = "(empty slot)";
      }
      out << fmt::format("  {} {:<10} {:<12} gen{} x{:<3} {}\n", branch, p.id(), p.kind(), p.link_generation(), p.link_width(), what);
    }
  }
}

void printOperations(const pb::ListOperationsResponse& r, std::ostream& out) {
  if (r.operations().empty()) {
    out << "no operations yet\n";
    return;
  }
  Table t({"ID", "KIND", "SYSTEM", "HOST", "STATE", "STEPS", "UPDATED", "ERROR"});
  for (const auto& op : r.operations()) {
    const auto done = std::count_if(op.steps().begin(), op.steps().end(), [](auto& s) { return s.state() == "done"; });
    t.add({op.id(), kindName(op.kind()), op.system_id(), op.host_id(), stateName(op.state()), fmt::format("{}/{}", done, op.steps_size()),
           op.updated_at(), orDash(op.error())});
  }
  t.print(out);
}

void printOperation(const pb::Operation& op, std::ostream& out) {
  out << fmt::format("{} {} of {} on {}: {}\n", op.id(), kindName(op.kind()), op.system_id(), op.host_id(), stateName(op.state()));
  if (!op.requested_by().identity().empty()) out << "  by:    " << op.requested_by().identity() << "\n";
  if (!op.explanation().empty()) out << "  why:   " << op.explanation() << "\n";
  if (!op.error().empty()) out << "  error: " << op.error() << "\n";
  if (op.replaces_size() > 0) out << "  then:  detaches " << fmt::format("{}", fmt::join(op.replaces(), ", ")) << " (a move)\n";
  if (!op.requeues_as().empty()) out << "  then:  queues " << op.requeues_as() << " again (preempted)\n";
  for (const auto& i : op.gpu_instances())
    out << fmt::format("  MIG:   {} on {} at slice {}\n", i.profile(), i.device_id(), i.start());
  for (const auto& sh : op.gpu_shares()) out << fmt::format("  share: #{} {:g}% of {}\n", sh.id(), sh.milli() / 10.0, sh.device_id());
  for (int i = 0; i < op.steps_size(); ++i) {
    const auto& s = op.steps(i);
    out << fmt::format("  {:>2}. {:<42} {}{}{}\n", i + 1, s.description().empty() ? s.kind() : s.description(), s.state(),
                       s.compensation() ? " (undo)" : "", s.message().empty() ? "" : "  " + s.message());
  }
}

void printPlan(const pb::PlanResponse& p, bool explain, std::ostream& out) {
  if (p.fits()) {
    out << "fits: " << p.explanation() << "\n";
    for (const auto& d : p.devices()) out << fmt::format("  {}  on {}  via {}\n", d.device_id(), d.switch_id(), d.upstream_port_id());
    for (const auto& i : p.gpu_instances()) out << fmt::format("  MIG {} on {} at slice {}\n", i.profile(), i.device_id(), i.start());
  } else {
    out << "does not fit: " << p.explanation() << "\n";
    if (p.would_move_size() > 0) {
      int gpus = 0;
      for (const auto& m : p.would_move()) gpus += m.gpus();
      out << fmt::format("moving {} idle GPU(s) of {} system(s) labelled movable=true would make room on {}:\n", gpus, p.would_move_size(),
                         p.host_after_moves());
      for (const auto& m : p.would_move())
        out << fmt::format("  {:<20} {:<10} {}\n", m.name().empty() ? "(another tenant's)" : m.name(), m.tenant().empty() ? "-" : m.tenant(),
                           m.from_device_ids().empty() ? fmt::format("{} GPU(s)", m.gpus())
                                                       : fmt::format("{} -> {}", fmt::join(m.from_device_ids(), ","),
                                                                     fmt::join(m.to_device_ids(), ",")));
    }
    if (p.would_preempt_size() > 0) {
      out << fmt::format("preemption would take back {} system(s) and place it on {}:\n", p.would_preempt_size(), p.host_after_preemption());
      for (const auto& v : p.would_preempt())
        out << fmt::format("  {:<20} {:<10} {:<12} {} GPU(s){}\n", v.name().empty() ? "(another tenant's)" : v.name(),
                           v.tenant().empty() ? "-" : v.tenant(), v.priority_class(), v.gpus(), v.requeued() ? ", queued again" : "");
    }
  }
  if (explain && p.fits()) {
    out << "candidates:\n";
    for (const auto& c : p.candidates()) out << fmt::format("  {:<10} {:<10} {}\n", c.host_id(), c.feasible() ? "feasible" : "rejected", c.reason());
  }
}

void printCapacity(const pb::Capacity& c, std::ostream& out) {
  Table t({"REQUEST", "P2P", "MODEL", "PLACEABLE NOW"});
  for (const auto& s : c.shapes())
    t.add({fmt::format("{} GPU{}", s.gpus(), s.gpus() == 1 ? "" : "s"), shortEnum(pb::PeerToPeer_Name(s.peer_to_peer()), "PEER_TO_PEER_"),
           s.model().empty() ? "any" : s.model(), std::to_string(s.placeable())});
  t.print(out);
  out << fmt::format("{} free GPU(s), {} stranded (free, but no host that could take a new system reaches them)\n", c.free_gpus(),
                     c.stranded_gpus());
  if (c.domains_size() > 1) {  // one row per fabric domain; placements never cross one, so the rows add up
    std::vector<std::string> header{"DOMAIN", "FREE", "STRANDED"};
    for (const auto& s : c.shapes()) header.push_back(fmt::format("{} GPU{}", s.gpus(), s.gpus() == 1 ? "" : "s"));
    Table d(header);
    for (const auto& dc : c.domains()) {
      std::vector<std::string> row{dc.domain(), std::to_string(dc.free_gpus()), std::to_string(dc.stranded_gpus())};
      for (const auto& s : dc.shapes()) row.push_back(std::to_string(s.placeable()));
      d.add(row);
    }
    out << "\n";
    d.print(out);
    out << "(placeable now per fabric domain: no system spans two domains)\n";
  }
  if (c.pooled_memory_size() > 0) {
    Table pm({"POOLED MEMORY", "DOMAIN", "FREE", "FREE LDS", "TOTAL", "LDS"});
    for (const auto& m : c.pooled_memory())
      pm.add({m.switch_id(), m.domain(), fmt::format("{} GiB", m.free_gib()), std::to_string(m.free_devices()), fmt::format("{} GiB", m.total_gib()),
              std::to_string(m.total_devices())});
    out << "\n";
    pm.print(out);
    out << fmt::format("{} GiB of pooled memory free (compose --memory takes whole logical devices from the host's own switches)\n",
                       c.free_pooled_memory_gib());
  }
  if (c.endpoints_size() > 0) {
    Table e({"DRIVES AND NICS", "MODEL", "FREE", "OF", "BESIDE A FREE GPU"});
    for (const auto& k : c.endpoints())
      e.add({k.kind(), k.model(), std::to_string(k.free()), std::to_string(k.total()), std::to_string(k.beside_free_gpus())});
    out << "\n";
    e.print(out);
    out << "(beside a free GPU: under a switch that still has one, so a request with it beside its GPUs can have it)\n";
  }
  if (c.templates_size() > 0) {
    Table fit({"TEMPLATE", "FIT NOW"});
    for (const auto& n : c.templates()) fit.add({n.name(), n.fits() >= 100 ? "100+" : std::to_string(n.fits())});
    out << "\n";
    fit.print(out);
    out << "(whole systems of each machine template, one after another: `yardctl templates` says what each asks for)\n";
  }
  if (!c.demand().empty()) {
    Table d({"RECENT DEMAND", "SAME SWITCH", "MODEL", "SHARE"});
    for (const auto& s : c.demand())
      d.add({fmt::format("{} GPU{}", s.gpus(), s.gpus() == 1 ? "" : "s"), s.same_switch() ? "yes" : "no", s.model().empty() ? "any" : s.model(),
             fmt::format("{:.0f}%", s.share() * 100)});
    out << "\n";
    d.print(out);
    out << "(learned from recent compose requests; switchyard-v2 places so that these stay servable)\n";
  }
  if (!c.shares().empty()) {
    Table sh({"GPU SHARE", "ON PARTLY USED GPUS", "ON FREE GPUS"});
    for (const auto& p : c.shares())
      sh.add({fmt::format("{:g}%", p.milli() / 10.0), std::to_string(p.on_partly_used_gpus()), std::to_string(p.on_free_gpus())});
    out << "\n";
    sh.print(out);
    out << fmt::format("{} free GPU(s) can still be attached for shares; a partly shared GPU serves only its own system\n",
                       c.attachable_gpus());
  }
  if (c.mig().empty()) return;
  Table m({"MIG PROFILE", "ON PARTLY USED GPUS", "ON FREE GPUS"});
  for (const auto& p : c.mig())
    m.add({p.profile(), std::to_string(p.on_partly_used_gpus()), std::to_string(p.on_free_gpus())});
  out << "\n";
  m.print(out);
  out << fmt::format("{} free MIG-capable GPU(s) can still be attached; a partly used GPU serves only its own system\n",
                     c.attachable_mig_gpus());
}

void printEvent(const pb::Event& e, std::ostream& out) {
  out << fmt::format("{} #{:<6} {:<24} {:<12} {:<10} {}\n", e.at(), e.sequence(), e.type(), e.subject(), orDash(e.actor()), e.message())
      << std::flush;
}

}  // namespace yardctl
