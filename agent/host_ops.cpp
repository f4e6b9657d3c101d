#include "agent/host_ops.h"

#include "agent/gpu_activity.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cctype>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

extern char** environ;

namespace switchyard::agent {

namespace {

std::string readFile(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  std::size_t start = 0;
  while (start < s.size() && std::isspace(static_cast<unsigned char>(s[start]))) ++start;
  return s.substr(start);
}

// "Device Minor:    0" and "GPU UUID:    GPU-..." from the NVIDIA driver's per-GPU information file.
std::string nvidiaInformation(const std::filesystem::path& procRoot, const std::string& address, std::string_view key) {
  std::istringstream lines(readFile(procRoot / "driver/nvidia/gpus" / address / "information"));
  std::string line;
  while (std::getline(lines, line))
    if (line.starts_with(key)) return trim(line.substr(line.find(':') + 1));
  return "";
}

// Fills a command template's {name} placeholders.
std::string expand(std::string command, const std::map<std::string, std::string>& values) {
  for (const auto& [name, value] : values) {
    const std::string key = "{" + name + "}";
    for (auto at = command.find(key); at != std::string::npos; at = command.find(key, at + value.size())) command.replace(at, key.size(), value);
  }
  return command;
}

int memorySlicesOf(const std::string& profile) {
  if (profile == "1g") return 1;
  if (profile == "2g") return 2;
  if (profile == "3g" || profile == "4g") return 4;
  if (profile == "7g") return 8;
  return 0;
}

const PciFunction* bySerial(const std::vector<PciFunction>& functions, const std::string& serial) {
  auto it = std::find_if(functions.begin(), functions.end(),
                         [&](const PciFunction& f) { return !f.bridge && f.hasSerial(serial); });
  return it == functions.end() ? nullptr : &*it;
}

bool under(const PciFunction& f, const PciAddress& rootPort) {
  return std::find(f.parents.begin(), f.parents.end(), rootPort) != f.parents.end();
}

}  // namespace

Result<std::string> runShell(const std::string& command, const std::map<std::string, std::string>& env, std::chrono::milliseconds timeout) {
  std::vector<std::string> entries;
  for (char** e = environ; *e != nullptr; ++e) entries.emplace_back(*e);
  for (const auto& [k, v] : env) entries.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& e : entries) envp.push_back(e.data());
  envp.push_back(nullptr);

  int pipeFds[2];
  if (::pipe2(pipeFds, O_CLOEXEC) != 0) return fail(Code::kInternal, "cannot create a pipe for a hook");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipeFds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, pipeFds[1], STDERR_FILENO);
  // Its own process group: at the deadline the shell and whatever it started are killed together.
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attributes, 0);
  std::string shell = "/bin/sh", dashC = "-c", cmd = command;
  char* argv[] = {shell.data(), dashC.data(), cmd.data(), nullptr};
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, "/bin/sh", &actions, &attributes, argv, envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  ::close(pipeFds[1]);
  if (spawned != 0) {
    ::close(pipeFds[0]);
    return fail(Code::kInternal, fmt::format("cannot start `{}`", command));
  }
  std::string output;
  char buffer[4096];
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  bool timedOut = false;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timedOut = true;
      break;
    }
    pollfd readable{pipeFds[0], POLLIN, 0};
    const int ready = ::poll(&readable, 1, static_cast<int>(std::min<std::int64_t>(left.count(), 1'000'000)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;  // the loop checks the deadline
    const ssize_t n = ::read(pipeFds[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // end of output: the command (and whatever kept the pipe open) is done with it
    output.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(pipeFds[0]);
  if (timedOut) ::kill(-pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (timedOut)
    return fail(Code::kDeadlineExceeded, fmt::format("`{}` did not finish within {} s and was killed", command,
                                                     std::chrono::duration<double>(timeout).count()));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    const std::string tail = output.size() > 400 ? output.substr(output.size() - 400) : output;
    return fail(Code::kFailedPrecondition, fmt::format("`{}` exited with status {}: {}", command, WIFEXITED(status) ? WEXITSTATUS(status) : -1, trim(tail)));
  }
  return output;
}

HostOps::HostOps(HostOpsOptions options) : options_(std::move(options)), scanner_(PciSource{.sysfsRoot = options_.sysfsRoot}) {}

std::map<std::string, std::string> HostOps::gpuUuids() const {
  std::map<std::string, std::string> out;
  if (!options_.gpuUuidCommand.empty()) {
    if (auto printed = runShell(options_.gpuUuidCommand + " 2>/dev/null", {}, options_.commandTimeout)) {
      std::istringstream lines(*printed);
      std::string line;
      while (std::getline(lines, line)) {
        const auto comma = line.find(',');
        if (comma == std::string::npos) continue;
        const std::string uuid = trim(line.substr(comma + 1));
        if (uuid.starts_with("GPU-") || uuid.starts_with("MIG-")) out[normalizeBusId(line.substr(0, comma))] = uuid;
      }
    }
  }
  return out;
}

Result<std::vector<HostFunction>> HostOps::inventory() const {
  SY_ASSIGN(auto functions, scanner_.scan());
  const auto uuids = gpuUuids();
  std::vector<HostFunction> out;
  out.reserve(functions.size());
  for (auto& f : functions) {
    HostFunction h{std::move(f), ""};
    if (h.pci.isGpu()) {
      const auto address = toString(h.pci.address);
      if (auto it = uuids.find(address); it != uuids.end())
        h.gpuUuid = it->second;
      else
        h.gpuUuid = nvidiaInformation(options_.procRoot, address, "GPU UUID");
    }
    out.push_back(std::move(h));
  }
  return out;
}

Result<void> HostOps::writeSysfs(const std::filesystem::path& file, const std::string& value) const {
  std::ofstream out(file);
  if (!out) return fail(Code::kFailedPrecondition, fmt::format("cannot open {} for writing (is yard-agent running as root?)", file.string()));
  out << value;
  out.flush();
  if (!out) return fail(Code::kFailedPrecondition, fmt::format("the kernel refused `{}` written to {}", value, file.string()));
  return {};
}

Result<std::vector<std::string>> HostOps::rescan(bool dryRun) const {
  const auto file = options_.sysfsRoot / "bus/pci/rescan";
  std::vector<std::string> actions{fmt::format("{}echo 1 > {}", dryRun ? "would run: " : "", file.string())};
  if (!dryRun) SY_TRY(writeSysfs(file, "1"));
  return actions;
}

Result<void> HostOps::createMig(const std::vector<MigRequest>& mig, const std::vector<PciFunction>& functions, bool dryRun,
                                std::vector<std::string>& actions) const {
  std::vector<MigRequest> made;
  for (const auto& m : mig) {
    const PciFunction* gpu = bySerial(functions, m.serialNumber);
    Result<void> outcome;
    if (!gpu) {
      outcome = fail(Code::kFailedPrecondition, fmt::format("MIG {} on {}: the GPU (serial {}) is not on this host", m.profile, m.deviceId, m.serialNumber));
    } else if (memorySlicesOf(m.profile) == 0) {
      outcome = fail(Code::kInvalidArgument, fmt::format("MIG profile '{}' of {} is not one of 1g, 2g, 3g, 4g, 7g", m.profile, m.deviceId));
    } else {
      const auto command = expand(options_.migCreateCommand, {{"pci", toString(gpu->address)}, {"profile", m.profile}, {"start", std::to_string(m.start)},
                                                              {"memory_gib", std::to_string(memorySlicesOf(m.profile) * options_.migSliceGiB)}});
      actions.push_back(fmt::format("{}{}", dryRun ? "would run: " : "ran: ", command));
      if (!dryRun) {
        if (auto ran = runShell(command, {}, options_.commandTimeout); !ran) outcome = fail(Code::kFailedPrecondition, fmt::format("MIG {}@{} on {}: {}", m.profile, m.start, m.deviceId, ran.error().message));
      }
    }
    if (!outcome) {
      std::vector<std::string> undo;
      (void)destroyMig(made, functions, dryRun, undo);  // best effort: what this call made goes again
      actions.insert(actions.end(), undo.begin(), undo.end());
      return outcome;
    }
    made.push_back(m);
  }
  return {};
}

Result<void> HostOps::destroyMig(const std::vector<MigRequest>& mig, const std::vector<PciFunction>& functions, bool dryRun,
                                 std::vector<std::string>& actions) const {
  for (const auto& m : mig) {
    const PciFunction* gpu = bySerial(functions, m.serialNumber);
    if (!gpu) continue;  // the GPU is gone, and its instances with it
    const std::string pci = toString(gpu->address);
    // The GPU instance at this placement start: "MIG 1g.10gb  19  9  2:1" (profile name, profile id, instance id, start:size).
    SY_ASSIGN(const std::string listed, runShell(expand(options_.migListCommand, {{"pci", pci}}), {}, options_.commandTimeout));
    std::string gi;
    for (const auto& [id, start] : parseGpuInstanceStarts(listed))
      if (start == m.start) gi = std::to_string(id);
    if (gi.empty()) {
      actions.push_back(fmt::format("MIG {}@{} on {}: no GPU instance at slice {} (already gone)", m.profile, m.start, m.deviceId, m.start));
      continue;
    }
    const auto command = expand(options_.migDestroyCommand, {{"pci", pci}, {"gi", gi}, {"profile", m.profile}, {"start", std::to_string(m.start)}});
    actions.push_back(fmt::format("{}{}", dryRun ? "would run: " : "ran: ", command));
    if (!dryRun) {
      if (auto ran = runShell(command, {}, options_.commandTimeout); !ran)
        return fail(Code::kFailedPrecondition, fmt::format("MIG {}@{} on {}: {}", m.profile, m.start, m.deviceId, ran.error().message));
    }
  }
  return {};
}

Result<void> HostOps::runHooks(const std::vector<std::string>& hooks, const std::vector<FoundDevice>& devices, bool dryRun,
                               std::vector<std::string>& actions, const std::string& reason) const {
  std::vector<std::string> addresses, ids, uuids;
  for (const auto& d : devices) {
    addresses.push_back(d.pciAddress);
    ids.push_back(d.deviceId);
    if (!d.gpuUuid.empty()) uuids.push_back(d.gpuUuid);
  }
  std::map<std::string, std::string> env{{"YARD_PCI_ADDRESSES", fmt::format("{}", fmt::join(addresses, " "))},
                                         {"YARD_DEVICE_IDS", fmt::format("{}", fmt::join(ids, " "))},
                                         {"YARD_GPU_UUIDS", fmt::format("{}", fmt::join(uuids, " "))}};
  if (!reason.empty()) env["YARD_DETACH_REASON"] = reason;
  for (const auto& hook : hooks) {
    actions.push_back(fmt::format("{}hook: {}", dryRun ? "would run " : "ran ", hook));
    if (!dryRun) SY_TRY(runShell(hook, env, options_.commandTimeout));
  }
  return {};
}

Result<VerifyOutcome> HostOps::verifyPresent(const std::vector<ExpectedDevice>& expected, std::chrono::milliseconds deadline,
                                             bool dryRun, const std::vector<MigRequest>& mig) const {
  if (deadline.count() <= 0) deadline = options_.defaultDeadline;
  for (const auto& e : expected)
    if (!e.upstreamPortId.empty() && !options_.upstreamPorts.empty() && !options_.upstreamPorts.contains(e.upstreamPortId))
      return fail(Code::kInvalidArgument, fmt::format("{} is bound to {}, which this agent has no --port mapping for", e.deviceId, e.upstreamPortId));
  VerifyOutcome outcome;
  const auto giveUp = std::chrono::steady_clock::now() + deadline;
  bool rescanned = false;
  while (true) {
    if (!rescanned || !dryRun) {
      SY_ASSIGN(auto actions, rescan(dryRun));
      if (!rescanned) outcome.actions.insert(outcome.actions.end(), actions.begin(), actions.end());
      rescanned = true;
    }
    SY_ASSIGN(auto functions, scanner_.scan());
    outcome.found.clear();
    std::vector<std::string> missing, wrong;
    for (const auto& e : expected) {
      const PciAddress* rootPort = nullptr;
      if (auto it = options_.upstreamPorts.find(e.upstreamPortId); it != options_.upstreamPorts.end()) rootPort = &it->second;
      const PciFunction* match = nullptr;
      for (const auto& f : functions) {
        if (f.portType == PciePortType::kSwitchUpstream || f.portType == PciePortType::kSwitchDownstream || f.bridge) continue;
        const bool serialOk = e.serialNumber.empty() || f.hasSerial(e.serialNumber);
        const bool vendorOk = e.vendorId == 0 || f.vendorId == e.vendorId;
        if (serialOk && vendorOk) {
          if (rootPort && !under(f, *rootPort)) {
            wrong.push_back(fmt::format("{} (serial {}) is at {} but not behind {} (root port {})", e.deviceId, e.serialNumber,
                                        toString(f.address), e.upstreamPortId, toString(*rootPort)));
            continue;
          }
          match = &f;
          break;
        }
      }
      if (!match) {
        missing.push_back(fmt::format("{} (serial {})", e.deviceId, e.serialNumber.empty() ? "not checked" : e.serialNumber));
        continue;
      }
      // BARs the kernel could not place read back as all zero in the resource file.
      const auto resource = readFile(options_.sysfsRoot / "bus/pci/devices" / toString(match->address) / "resource");
      if (!resource.empty() && resource.find_first_not_of("0x \n") == std::string::npos)
        return fail(Code::kFailedPrecondition,
                    fmt::format("{} appeared at {} but its BARs could not be assigned (no space for BAR): reserve hot-plug padding in the "
                                "BIOS or boot the host with pci=realloc",
                                e.deviceId, toString(match->address)));
      outcome.found.push_back({e.deviceId, toString(match->address), "", match->driver});
    }
    if (!wrong.empty()) return fail(Code::kFailedPrecondition, fmt::format("wrong place: {}", fmt::join(wrong, "; ")));
    if (missing.empty()) {
      if (!dryRun) {  // back on a host (after an operator's reset and release): no longer the unreset one
        std::lock_guard lock(unresetMutex_);
        for (const auto& e : expected) unreset_.erase(e.serialNumber);
      }
      break;
    }
    if (std::chrono::steady_clock::now() >= giveUp)
      return fail(Code::kDeadlineExceeded,
                  fmt::format("not present after {} ms of rescanning: {}", deadline.count(), fmt::join(missing, ", ")));
    std::this_thread::sleep_for(options_.pollInterval);
  }
  const auto uuids = gpuUuids();
  for (auto& found : outcome.found) {
    if (auto it = uuids.find(found.pciAddress); it != uuids.end())
      found.gpuUuid = it->second;
    else
      found.gpuUuid = nvidiaInformation(options_.procRoot, found.pciAddress, "GPU UUID");
  }
  if (!mig.empty()) {
    SY_ASSIGN(auto functions, scanner_.scan());
    SY_TRY(createMig(mig, functions, dryRun, outcome.actions));
  }
  SY_TRY(runHooks(options_.afterAttach, outcome.found, dryRun, outcome.actions));
  return outcome;
}

std::vector<DeviceUser> HostOps::usersOf(const PciFunction& function) const {
  const auto address = toString(function.address);
  std::set<std::string> held;
  if (const auto minor = nvidiaInformation(options_.procRoot, address, "Device Minor"); !minor.empty()) held.insert("/dev/nvidia" + minor);
  // An NVMe controller's character device (/dev/nvme0) and its namespaces and partitions (/dev/nvme0n1p2).
  std::vector<std::string> heldPrefixes;
  std::error_code nvmeError;
  for (const auto& c : std::filesystem::directory_iterator(options_.sysfsRoot / "bus/pci/devices" / address / "nvme", nvmeError)) {
    const auto controller = c.path().filename().string();
    held.insert("/dev/" + controller);
    heldPrefixes.push_back("/dev/" + controller + "n");
  }
  const std::string sysfsMarker = "/" + address + "/";
  std::vector<DeviceUser> out;
  std::error_code ec;
  for (const auto& proc : std::filesystem::directory_iterator(options_.procRoot, ec)) {
    const auto name = proc.path().filename().string();
    if (name.empty() || !std::all_of(name.begin(), name.end(), [](unsigned char c) { return std::isdigit(c); })) continue;
    std::error_code fdError;
    for (const auto& fd : std::filesystem::directory_iterator(proc.path() / "fd", fdError)) {
      std::error_code linkError;
      const auto target = std::filesystem::read_symlink(fd.path(), linkError).string();
      if (linkError) continue;
      const bool prefixed = std::any_of(heldPrefixes.begin(), heldPrefixes.end(), [&](const std::string& p) { return target.starts_with(p); });
      if (held.contains(target) || prefixed || target.find(sysfsMarker) != std::string::npos) {
        out.push_back({std::stoi(name), trim(readFile(proc.path() / "comm")), target});
        break;
      }
    }
  }
  std::sort(out.begin(), out.end(), [](const DeviceUser& a, const DeviceUser& b) { return a.pid < b.pid; });
  return out;
}

std::vector<std::string> HostOps::kernelHoldsOf(const PciFunction& function) const {
  const auto dir = options_.sysfsRoot / "bus/pci/devices" / toString(function.address);
  std::vector<std::string> out;
  // The function's block devices: an NVMe controller's namespaces (nvme/nvme0 -> /dev/nvme0n..., partitions begin
  // so too), and a block device one level down (virtio0/block/vda, as a virtio disk has it, recorded on the lent GPU
  // machine) with its partitions (/dev/vda1).
  std::vector<std::string> prefixes, disks;
  std::error_code ec;
  for (const auto& c : std::filesystem::directory_iterator(dir / "nvme", ec)) prefixes.push_back("/dev/" + c.path().filename().string() + "n");
  // Interfaces likewise: net/IF on the function itself (mlx5, ice), or one level down (virtio2/net/eth0).
  std::vector<std::filesystem::path> netDirs{dir / "net"};
  for (const auto& child : std::filesystem::directory_iterator(dir, ec)) {
    if (!child.is_directory(ec) || child.is_symlink(ec)) continue;
    for (const auto& b : std::filesystem::directory_iterator(child.path() / "block", ec)) disks.push_back("/dev/" + b.path().filename().string());
    if (std::filesystem::is_directory(child.path() / "net", ec)) netDirs.push_back(child.path() / "net");
  }
  auto onDrive = [&](const std::string& source) {
    return std::any_of(prefixes.begin(), prefixes.end(), [&](const std::string& n) { return source.starts_with(n); }) ||
           std::any_of(disks.begin(), disks.end(), [&](const std::string& d) {
             return source.starts_with(d) && std::all_of(source.begin() + static_cast<std::ptrdiff_t>(d.size()), source.end(),
                                                         [](char c) { return std::isdigit(static_cast<unsigned char>(c)) || c == 'p'; });
           });
  };
  const bool hasDrive = !prefixes.empty() || !disks.empty();
  if (hasDrive) {
    std::istringstream mounts(readFile(options_.procRoot / "mounts"));
    for (std::string line; std::getline(mounts, line);) {
      std::istringstream fields(line);
      std::string source, target;
      if (fields >> source >> target && onDrive(source)) out.push_back(fmt::format("{} is mounted at {}", source, target));
    }
    std::istringstream swaps(readFile(options_.procRoot / "swaps"));
    for (std::string line; std::getline(swaps, line);) {
      std::istringstream fields(line);
      std::string source;
      if (fields >> source && onDrive(source)) out.push_back(fmt::format("{} is in use as swap", source));
    }
  }
  for (const auto& net : netDirs)
    for (const auto& i : std::filesystem::directory_iterator(net, ec)) {
      const auto name = i.path().filename().string();
      if (trim(readFile(i.path() / "operstate")) == "up") out.push_back(fmt::format("its network interface {} is up (take it down first)", name));
    }
  return out;
}

Result<DetachOutcome> HostOps::prepareDetach(const std::vector<ExpectedDevice>& expected, bool dryRun, const std::vector<MigRequest>& mig,
                                             const std::string& reason) const {
  SY_ASSIGN(auto functions, scanner_.scan());
  std::vector<std::pair<const ExpectedDevice*, const PciFunction*>> present;
  DetachOutcome outcome;
  auto& actions = outcome.actions;
  std::vector<std::string> busy;
  for (const auto& e : expected) {
    auto it = std::find_if(functions.begin(), functions.end(), [&](const PciFunction& f) {
      return !f.bridge && f.hasSerial(e.serialNumber);
    });
    if (it == functions.end()) {
      actions.push_back(fmt::format("{} (serial {}) is not on this host: nothing to do", e.deviceId, e.serialNumber));
      std::lock_guard lock(unresetMutex_);
      if (auto u = unreset_.find(e.serialNumber); u != unreset_.end() && !e.serialNumber.empty()) outcome.notReset.push_back(u->second);
      continue;
    }
    present.emplace_back(&e, &*it);
    for (const auto& user : usersOf(*it))
      busy.push_back(fmt::format("{} at {} is in use by pid {} ({}) holding {}", e.deviceId, toString(it->address), user.pid, user.command, user.path));
    for (const auto& hold : kernelHoldsOf(*it)) busy.push_back(fmt::format("{} at {}: {}", e.deviceId, toString(it->address), hold));
  }
  // Checked whole before anything changes: one busy device refuses the release of all.
  if (!busy.empty()) return fail(Code::kFailedPrecondition, fmt::format("{}", fmt::join(busy, "; ")));
  // MIG instances first: nvidia-smi refuses to destroy one a process uses, and then nothing else changes.
  SY_TRY(destroyMig(mig, functions, dryRun, actions));

  // Secure release: checked whole first, so that a device the kernel cannot reset refuses the release before
  // anything changes.
  const std::string& reset = options_.deviceReset;
  if (reset != "sysfs" && reset != "none" && reset.find("{pci}") == std::string::npos)
    return fail(Code::kInvalidArgument, fmt::format("--device-reset '{}': expected sysfs, none or a shell command with {{pci}}", reset));
  if (reset == "sysfs")
    for (const auto& [e, f] : present)
      if (const auto file = options_.sysfsRoot / "bus/pci/devices" / toString(f->address) / "reset"; !std::filesystem::exists(file))
        return fail(Code::kFailedPrecondition,
                    fmt::format("{} at {} cannot be reset: the kernel offers no reset method for it ({} is missing), so the next tenant "
                                "could read what this one left in it; it stays on this host (yard-agent --device-reset names another "
                                "way, or none at that risk)",
                                e->deviceId, toString(f->address), file.string()));

  std::vector<FoundDevice> leaving;
  for (const auto& [e, f] : present) leaving.push_back({e->deviceId, toString(f->address), "", f->driver});
  if (reason == "reclaim") SY_TRY(runHooks(options_.beforeReclaim, leaving, dryRun, actions, reason));
  if (reason == "preemption") SY_TRY(runHooks(options_.beforePreempt, leaving, dryRun, actions, reason));
  SY_TRY(runHooks(options_.beforeDetach, leaving, dryRun, actions, reason));
  // A failed reset does not keep the device here: the previous tenant is leaving this host, and the device
  // is no use to it. It goes, named, and yardd quarantines it so that no other tenant gets it unreset.
  auto notReset = [&](const std::string& device, const std::string& serial, const std::string& address, const std::string& how,
                      const Error& error) {
    auto why = fmt::format("resetting {} at {} ({}) failed: {}", device, address, how, error.message);
    actions.push_back(fmt::format("{} (removed all the same; yardd quarantines it)", why));
    outcome.notReset.push_back({device, why});
    std::lock_guard lock(unresetMutex_);
    if (!serial.empty()) unreset_[serial] = {device, std::move(why)};
  };
  for (const auto& [e, f] : present) {
    const auto address = toString(f->address);
    const auto dir = options_.sysfsRoot / "bus/pci/devices" / address;
    if (reset != "sysfs" && reset != "none") {  // the vendor's reset wants its driver bound
      std::string command = reset;
      for (auto at = command.find("{pci}"); at != std::string::npos; at = command.find("{pci}", at + address.size()))
        command.replace(at, 5, address);
      actions.push_back(fmt::format("{}{}", dryRun ? "would run: " : "", command));
      if (!dryRun)
        if (auto r = runShell(command, {}, options_.commandTimeout); !r) notReset(e->deviceId, e->serialNumber, address, command, r.error());
    }
    if (!f->driver.empty()) {
      actions.push_back(fmt::format("{}echo {} > {}", dryRun ? "would run: " : "", address, (dir / "driver/unbind").string()));
      if (!dryRun) SY_TRY(writeSysfs(dir / "driver/unbind", address));
    }
    if (reset == "sysfs") {
      actions.push_back(fmt::format("{}echo 1 > {}", dryRun ? "would run: " : "", (dir / "reset").string()));
      if (!dryRun)
        if (auto r = writeSysfs(dir / "reset", "1"); !r)
          notReset(e->deviceId, e->serialNumber, address, "echo 1 > " + (dir / "reset").string(), r.error());
    }
    actions.push_back(fmt::format("{}echo 1 > {}", dryRun ? "would run: " : "", (dir / "remove").string()));
    if (!dryRun) SY_TRY(writeSysfs(dir / "remove", "1"));
  }
  return outcome;
}

Result<std::vector<GpuActivity>> HostOps::activity(const std::vector<ExpectedDevice>& expected) const {
  SY_ASSIGN(auto functions, scanner_.scan());
  std::vector<std::pair<const ExpectedDevice*, const PciFunction*>> present;
  for (const auto& e : expected) {
    auto it = std::find_if(functions.begin(), functions.end(), [&](const PciFunction& f) {
      return !f.bridge && f.hasSerial(e.serialNumber);
    });
    if (it != functions.end()) present.emplace_back(&e, &*it);
  }
  if (present.empty()) return std::vector<GpuActivity>{};
  std::vector<PciFunction> gpus;
  for (const auto& [e, f] : present) gpus.push_back(*f);
  SY_ASSIGN(auto byAddress, activityOf(gpus));
  std::vector<GpuActivity> out;
  for (const auto& [e, f] : present) {
    auto a = byAddress.find(toString(f->address));
    if (a == byAddress.end()) continue;  // not a GPU nvidia-smi reports
    a->second.deviceId = e->deviceId;
    out.push_back(std::move(a->second));
  }
  return out;
}

Result<std::map<std::string, GpuActivity>> HostOps::activityOf(const std::vector<PciFunction>& functions) const {
  std::map<std::string, GpuActivity> out;
  if (functions.empty() || options_.gpuActivityCommand.empty()) return out;
  ParsedActivity parsed;
  SY_ASSIGN(auto gpus, runShell(options_.gpuActivityCommand, {}, options_.commandTimeout));
  parseGpuUtilization(gpus, parsed);
  if (!options_.gpuProcessesCommand.empty()) {
    SY_ASSIGN(auto apps, runShell(options_.gpuProcessesCommand, {}, options_.commandTimeout));
    parseComputeApps(apps, parsed);
  }
  std::optional<MigProcesses> migProcesses;  // the plain table, read once and only for a GPU in MIG mode
  for (const auto& f : functions) {
    const auto bus = toString(f.address);
    GpuActivity a{bus, 0, 0, {}, {}};
    if (auto gpu = parsed.gpus.find(bus); gpu != parsed.gpus.end()) {
      a.utilizationPercent = gpu->second.utilizationPercent;
      a.memoryUsedMiB = gpu->second.memoryUsedMiB;
    } else if (auto unread = parsed.utilizationUnread.find(bus); unread != parsed.utilizationUnread.end()) {
      // No utilization: in MIG mode the driver reads none, and what runs in each GPU instance says what is idle.
      // Anything else (not in MIG mode, a tool that fails) leaves the GPU out: unknown is not idle.
      if (options_.gpuMigProcessesCommand.empty()) continue;
      auto listed = runShell(expand(options_.migListCommand, {{"pci", bus}}), {}, options_.commandTimeout);
      if (!listed) continue;
      const auto starts = parseGpuInstanceStarts(*listed);
      if (starts.empty()) continue;
      if (!migProcesses) {
        auto table = runShell(options_.gpuMigProcessesCommand, {}, options_.commandTimeout);
        if (!table) continue;
        migProcesses = parseMigProcesses(*table);
      }
      a.memoryUsedMiB = unread->second;
      const auto& byInstance = (*migProcesses)[bus];
      for (const auto& [gi, start] : starts) {
        auto in = byInstance.find(gi);
        a.instances.push_back({start, in == byInstance.end() ? std::vector<GpuProcess>{} : in->second});
      }
      std::sort(a.instances.begin(), a.instances.end(), [](const auto& x, const auto& y) { return x.start < y.start; });
    } else {
      continue;  // not a GPU nvidia-smi reports
    }
    if (auto apps = parsed.processes.find(bus); apps != parsed.processes.end()) a.processes = apps->second;
    for (const auto& user : usersOf(f))
      if (std::none_of(a.processes.begin(), a.processes.end(), [&](const GpuProcess& p) { return p.pid == user.pid; }))
        a.processes.push_back({user.pid, user.command, 0});
    // A process of the GPU that no instance names (another PID namespace, a table that did not list it) may run
    // in any of them: each counts it.
    for (const auto& p : a.processes) {
      const auto named = [&](const MigInstanceActivity& i) {
        return std::any_of(i.processes.begin(), i.processes.end(), [&](const GpuProcess& q) { return q.pid == p.pid; });
      };
      if (!a.instances.empty() && std::none_of(a.instances.begin(), a.instances.end(), named))
        for (auto& i : a.instances) i.processes.push_back(p);
    }
    for (const auto& i : a.instances)  // and the GPU's list holds every instance's
      for (const auto& p : i.processes)
        if (std::none_of(a.processes.begin(), a.processes.end(), [&](const GpuProcess& q) { return q.pid == p.pid; })) a.processes.push_back(p);
    out.emplace(bus, std::move(a));
  }
  return out;
}

}  // namespace switchyard::agent
