#include "cli/release_command.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>

namespace yardctl {

namespace pb = switchyard::v1;

void addReleaseCommand(CLI::App& devices, std::function<int(const pb::ReleaseDeviceRequest&, pb::Device&)> call,
                       std::function<Format()> format, int& rc) {
  auto* release = devices.add_subcommand(
      "release",
      "Put a quarantined device back in the pool (operators and admins; audited). yardd quarantines a device whose undo "
      "failed, that it found bound outside any system, or whose host could not reset it as it left (secure release). "
      "Reconcile frees the first two by itself once the switch shows them unbound; a device that was not reset waits "
      "for this, once you have reset it. This looks at the switch now: an unbound device is freed; a bound one is "
      "refused unless --unbind");
  auto request = std::make_shared<pb::ReleaseDeviceRequest>();
  release->add_option_function<std::string>("device", [request](const std::string& v) { request->set_device_id(v); }, "The quarantined device")
      ->required();
  release->add_flag_callback("--unbind", [request] { request->set_unbind(true); },
                             "Unbind it in the switch first if it is still bound. yardd first asks the host behind its port (one with "
                             "yard-agent) and refuses while that host still has it enumerated or does not answer (see --host-is-down); "
                             "a host without an agent cannot be asked, so there you vouch that no host uses it (it would lose it from "
                             "under its driver)");
  release
      ->add_flag_callback("--host-is-down", [request] { request->set_host_is_down(true); },
                          "With --unbind: the host behind its port is down for good, so its agent not answering does not stop the "
                          "unbind (you vouch for it; the audit record says so). A host that answers is still asked")
      ->needs("--unbind");
  release->callback([request, call = std::move(call), format = std::move(format), &rc] {
    pb::Device d;
    if ((rc = call(*request, d)) != 0) return;
    if (format() == Format::kJson)
      std::cout << toJson(d) << "\n";
    else
      std::cout << fmt::format("{} is back in the pool ({})\n", d.id(), allocationName(d.allocation()));
  });
}

}  // namespace yardctl
