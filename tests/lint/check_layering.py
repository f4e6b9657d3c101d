#!/usr/bin/env python3
"""Checks the layering rules of docs/architecture.md on every #include, so that the build enforces them.

Each folder may include project headers only from the folders its rule names, and none of the headers
its rule forbids (I/O libraries in the pure layers). Run from anywhere; exits 1 listing each violation.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]

IO = ["boost/asio", "boost/beast", "grpc", "grpcpp", "sqlite3.h", "google/protobuf", "switchyard/v1/"]
ENGINE_DEPS = ["composer/model/", "composer/packing/", "composer/engine/",
               "fabric/fabric_driver.h", "agent/host_agents.h", "inventory/store.h", "composer/metrics/"]

# folder -> (project include prefixes it may use, include prefixes it must not use). First match wins.
RULES = [
    ("composer/model/", (["composer/model/"], IO + ["spdlog", "nlohmann"])),
    ("composer/packing/", (["composer/model/", "composer/packing/"], IO + ["spdlog"])),
    ("composer/auth/", (["composer/model/", "composer/auth/"], IO + ["spdlog"])),
    ("composer/metrics/", (["composer/model/", "composer/metrics/", "fabric/fabric_driver.h"], IO + ["spdlog", "nlohmann"])),
    # Transport pieces every adapter shares: the HTTP server, TLS certificates, error codes onto HTTP/gRPC statuses.
    ("net/", (["composer/model/", "net/"], ["sqlite3.h", "google/protobuf", "switchyard/v1/", "composer/engine/"])),
    # The operator HTTP endpoint: metrics, dashboard, JSON; on the shared HTTP server, its event feed and authorization.
    ("composer/web/", (ENGINE_DEPS + ["composer/web/", "composer/auth/", "net/"],
                       ["grpc", "grpcpp", "sqlite3.h", "google/protobuf", "switchyard/v1/"])),
    # CoHDI's fabric-manager API (issue 64): on the shared HTTP server, with the gRPC adapter's Authenticator (the same
    # tokens and logins), never gRPC itself.
    ("composer/cohdi/", (ENGINE_DEPS + ["composer/cohdi/", "composer/auth/", "composer/api/authenticator.h", "net/"],
                         ["grpc", "grpcpp", "sqlite3.h", "google/protobuf", "switchyard/v1/"])),
    ("composer/engine/", (ENGINE_DEPS, ["grpc", "grpcpp", "sqlite3.h", "google/protobuf", "switchyard/v1/"])),
    ("composer/api/", (ENGINE_DEPS + ["composer/api/", "composer/auth/", "net/grpc_status.h", "switchyard/v1/"], ["sqlite3.h"])),
    ("composer/daemon/", (None, [])),  # the composition root may name everything
    ("fabric/", (["composer/model/", "fabric/", "net/"], ["grpc", "grpcpp", "sqlite3.h", "google/protobuf", "switchyard/v1/"])),
    # The etcd store talks HTTP to etcd's JSON gateway through the one HTTP client (net/); the rest of inventory/ stays off the network.
    ("inventory/etcd/", (["composer/model/", "inventory/", "net/"],
                         ["grpc", "grpcpp", "sqlite3.h", "google/protobuf", "switchyard/v1/", "boost/asio", "boost/beast"])),
    ("inventory/", (["composer/model/", "inventory/"], ["grpc", "grpcpp", "boost/asio", "google/protobuf", "switchyard/v1/"])),
    ("bmc/", (["composer/model/", "composer/auth/", "composer/engine/", "composer/packing/", "bmc/", "net/",
               "fabric/fabric_driver.h", "agent/host_agents.h", "inventory/store.h"], ["sqlite3.h"])),
    # The host side (ADR 0012): the HostAgents port, simulated hosts, yard-agent and yardd's client of it (PCI discovery, gRPC).
    ("agent/", (["composer/model/", "net/grpc_status.h", "inventory/pci/", "agent/", "switchyard/v1/"],
                ["sqlite3.h", "composer/engine/"])),
    # yardctl talks to yardd over gRPC only; it shares the project's version and the pure grammars both sides parse
    # (queue reasons, gRPC targets, the --affinity rule of endpoint_demand.h, usage's --by), so a flag yardctl accepts is one yardd accepts.
    ("cli/", (["cli/", "switchyard/v1/", "composer/model/version.h", "composer/model/queue.h", "composer/model/grpc_target.h",
               "composer/model/endpoint_demand.h", "composer/model/usage_grouping.h"],
              ["composer/", "fabric/", "inventory/", "sqlite3.h", "boost/asio"])),
]
PROJECT = ("composer/", "fabric/", "inventory/", "cli/", "bmc/", "agent/", "net/", "tests/")
# The adapters call the engine through its asynchronous client (composer/engine/engine_client.h, ADR 0025) and
# never reach the engine's blocking methods: neither these headers nor any header that includes them, at any depth.
ADAPTERS = ("bmc/", "composer/api/", "composer/web/", "composer/cohdi/")
ENGINE_INSIDE = ("composer/engine/engine.h", "composer/engine/engine_control.h")
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]')


def rule_for(path):
    for folder, rule in RULES:
        if path.startswith(folder):
            return folder, rule
    return None, None


def main():
    violations = []
    checked = 0
    files = sorted({f for top in ("composer", "fabric", "inventory", "bmc", "cli", "agent", "net") for f in (ROOT / top).glob("**/*")})
    for file in files:
        if file.suffix not in (".h", ".cpp") or not file.is_file():
            continue
        rel = file.relative_to(ROOT).as_posix()
        folder, rule = rule_for(rel)
        if rule is None:
            continue
        allowed, forbidden = rule
        checked += 1
        for number, line in enumerate(file.read_text(encoding="utf-8").splitlines(), 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            header = m.group(1)
            if any(header.startswith(f) for f in forbidden) and header not in (allowed or []):  # a header named exactly is allowed
                violations.append(f"{rel}:{number}: includes {header}, which {folder} must not use")
            elif allowed is not None and header.startswith(PROJECT + ("switchyard/",)) and not any(header.startswith(a) for a in allowed):
                violations.append(f"{rel}:{number}: includes {header}; {folder} may include only {', '.join(allowed)}")
    violations += adapter_violations()
    for v in violations:
        print(v)
    print(f"layering: {checked} files checked, {len(violations)} violation(s) (rules: docs/architecture.md, Layers)")
    return 1 if violations or checked == 0 else 0


def project_includes(rel, cache={}):
    if rel not in cache:
        path = ROOT / rel
        found = []
        if path.is_file():
            for line in path.read_text(encoding="utf-8").splitlines():
                m = INCLUDE.match(line)
                if m and m.group(1).startswith(PROJECT):
                    found.append(m.group(1))
        cache[rel] = found
    return cache[rel]


def adapter_violations():
    """An adapter's file that reaches engine.h through any chain of project includes, with the chain."""
    out = []
    for top in ADAPTERS:
        for file in sorted((ROOT / top).glob("**/*")):
            if file.suffix not in (".h", ".cpp"):
                continue
            rel = file.relative_to(ROOT).as_posix()
            seen, stack = {rel}, [(rel, [rel])]
            while stack:
                current, chain = stack.pop()
                for header in project_includes(current):
                    if header in ENGINE_INSIDE:
                        out.append(f"{rel}: reaches {header} ({' -> '.join(chain[1:] + [header])}); adapters use engine_client.h")
                        stack = []
                        break
                    if header not in seen:
                        seen.add(header)
                        stack.append((header, chain + [header]))
    return out


if __name__ == "__main__":
    sys.exit(main())
