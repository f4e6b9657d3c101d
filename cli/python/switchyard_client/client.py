"""The client: one channel to yardd, TLS by default, a bearer token when given."""
import os
import time
from typing import Iterator, List, Mapping, Optional, Sequence, Tuple

import grpc

try:
    from switchyard.v1 import provider_pb2, provider_pb2_grpc, switchyard_pb2, switchyard_pb2_grpc
except ImportError as error:  # pragma: no cover - a setup mistake, explained
    raise ImportError(
        "switchyard_client needs the generated switchyard.v1 modules: install it with pip (`pip install ./cli/python`, "
        "which generates them) or the python3-switchyard package, or put <build>/python on PYTHONPATH") from error

ResourceStatus = provider_pb2.ResourceStatus
_DONE_STATES = (switchyard_pb2.OPERATION_STATE_SUCCEEDED, switchyard_pb2.OPERATION_STATE_FAILED)


_PEER_TO_PEER = {"": switchyard_pb2.PEER_TO_PEER_UNSPECIFIED, "required": switchyard_pb2.PEER_TO_PEER_REQUIRED,
                 "preferred": switchyard_pb2.PEER_TO_PEER_PREFERRED, "none": switchyard_pb2.PEER_TO_PEER_NONE}


def tls_name_of_target(target: str) -> str:
    """The host TLS verifies for a target that lists several yardd (ipv4:A:P,B:P) or names a scheme: its first
    address's host; "" for a plain HOST:PORT (gRPC's own rule). As composer/model/grpc_target.h."""
    listed = "," in target
    for scheme in ("ipv4:", "ipv6:", "dns:///", "dns:"):
        if target.startswith(scheme):
            target, listed = target[len(scheme):], True
            break
    if not listed:
        return ""
    first = target.split(",")[0]
    if first.startswith("["):
        return first[1:first.find("]")] if "]" in first else ""
    return first.rsplit(":", 1)[0] if ":" in first else first


def peer_to_peer_value(value) -> int:
    """"required", "preferred", "none" (or "": yardd's default) as the PeerToPeer enum; an enum value as it is."""
    if isinstance(value, int):
        return value
    try:
        return _PEER_TO_PEER[value]
    except KeyError:
        raise ValueError(f"peer_to_peer {value!r}: expected one of required, preferred, none") from None


def gpu_request(count: int = 1, *, model: str = "", min_memory_gib: int = 0, peer_to_peer="", host: str = "",
                device_ids: Sequence[str] = (), mig_profiles: Sequence[str] = (), share_milli: int = 0) -> "switchyard_pb2.GpuRequest":
    """What to place: `count` whole GPUs, or MIG instances, or a share of one GPU, or explicit devices. Only
    one kind: the count is left out when another is given."""
    fractional = bool(mig_profiles) or share_milli or bool(device_ids)
    return switchyard_pb2.GpuRequest(count=0 if fractional else count, model=model, min_memory_gib=min_memory_gib,
                                     peer_to_peer=peer_to_peer_value(peer_to_peer), host=host, device_ids=list(device_ids),
                                     mig_profiles=list(mig_profiles), share_milli=share_milli)


def endpoint_request(kind: str, count: int, *, model: str = "", min_capacity_gib: int = 0,
                     affinity: str = "", min_speed_gbps: int = 0) -> "switchyard_pb2.EndpointRequest":
    """`count` devices of another kind ("nvme", "nic", or any other class by name such as "fpga") besides the GPUs;
    affinity "switch" puts them under the GPUs' switches or fails, "domain" (the default) anywhere the host
    reaches, near the GPUs first.
    `min_capacity_gib`: drives of at least that size; `min_speed_gbps`: NICs whose port runs at least that fast
    (a NIC whose speed the fabric does not report never qualifies)."""
    return switchyard_pb2.EndpointRequest(kind=kind, count=count, model=model, min_capacity_gib=min_capacity_gib, affinity=affinity,
                                          min_speed_gbps=min_speed_gbps)


def _endpoints(nics: int, nvme: int, endpoints: Sequence["switchyard_pb2.EndpointRequest"]) -> list:
    out = list(endpoints)
    if nics:
        out.append(endpoint_request("nic", nics))
    if nvme:
        out.append(endpoint_request("nvme", nvme))
    return out


class OperationFailed(Exception):
    """An operation that ended failed (and was rolled back); .operation holds it."""

    def __init__(self, operation):
        super().__init__(f"{operation.id} failed: {operation.error}")
        self.operation = operation


def default_server_certificate():
    """The certificate yardctl trusts when given none (cli/connection.cpp): YARD_CA, else yardd's self-signed
    grpc-cert.pem in the default state directory ($XDG_STATE_HOME/switchyard or ~/.local/state/switchyard), else the
    packaged yardd's /var/lib/switchyard/grpc-cert.pem; None when none of them exists (the system's roots)."""
    if os.environ.get("YARD_CA"):
        return os.environ["YARD_CA"]
    if os.environ.get("XDG_STATE_HOME"):
        state = os.path.join(os.environ["XDG_STATE_HOME"], "switchyard")
    elif os.environ.get("HOME"):
        state = os.path.join(os.environ["HOME"], ".local", "state", "switchyard")
    else:
        state = "/var/lib/switchyard"
    for candidate in (os.path.join(state, "grpc-cert.pem"), "/var/lib/switchyard/grpc-cert.pem"):
        if os.path.exists(candidate):
            return candidate
    return None


class Client:
    """yardd's API. Every method raises grpc.RpcError with yardd's status code and message on a refusal."""

    def __init__(self, address="127.0.0.1:7390", *, ca=None, cert=None, key=None, token=None, token_file=None,
                 plaintext=False, caller=None, timeout=30.0):
        """address: HOST:PORT. TLS unless plaintext=True (yardd allows that on loopback only); ca: the PEM file
        to trust (yardd's self-signed grpc-cert.pem or a CA; default: found as yardctl finds it,
        default_server_certificate()); cert/key: a client certificate for mutual TLS;
        token or token_file: a bearer token from the identities file; caller: the name a yardd without
        identities records as the actor."""
        if token_file and not token:
            with open(os.path.expanduser(token_file), encoding="utf-8") as f:
                token = f.read().strip()
        self._metadata = []
        if token:
            self._metadata.append(("authorization", f"Bearer {token}"))
        if caller:
            self._metadata.append(("switchyard-caller", caller))
        self._plaintext = plaintext
        self._credentials = None
        if not plaintext:
            ca = ca or default_server_certificate()
            def read(path):
                with open(os.path.expanduser(path), "rb") as f:
                    return f.read()
            self._credentials = grpc.ssl_channel_credentials(
                root_certificates=read(ca) if ca else None,
                private_key=read(key) if key else None,
                certificate_chain=read(cert) if cert else None)
        self._home = address
        self._connect(address)
        self.timeout = timeout

    def _connect(self, address):
        options = []
        if not self._plaintext and tls_name_of_target(address):
            # Several yardd (ipv4:A:P,B:P): each certificate must name the first one's host, not the whole list.
            options.append(("grpc.ssl_target_name_override", tls_name_of_target(address)))
        self._channel = (grpc.insecure_channel(address) if self._plaintext
                         else grpc.secure_channel(address, self._credentials, options=options))
        self._address = address
        self._yard = switchyard_pb2_grpc.SwitchyardStub(self._channel)
        self._provider = provider_pb2_grpc.ResourceProviderStub(self._channel)

    def close(self):
        self._channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _call(self, method, request, timeout=None):
        """method: "yard.Compose" or "provider.AddResource". A standby yardd refuses changes with UNAVAILABLE
        and the leader's address in the `switchyard-leader` trailing metadata: the call is sent there once,
        and later calls stay with the leader. When the leader it was sent to cannot be reached any more, the
        client goes back to the address it was given (which may name every yardd) for the next call."""
        service, name = method.split(".")
        def send():
            return getattr(self._yard if service == "yard" else self._provider, name)(
                request, timeout=timeout or self.timeout, metadata=self._metadata)
        try:
            return send()
        except grpc.RpcError as e:
            if e.code() != grpc.StatusCode.UNAVAILABLE:
                raise
            leader = dict(e.trailing_metadata() or ()).get("switchyard-leader", "")
            if leader and leader != self._address:
                self._channel.close()
                self._connect(leader)
                return send()
            if not leader and self._address != self._home:
                self._channel.close()
                self._connect(self._home)
            raise

    # Changes: each returns the accepted Operation at once; wait() follows it. `request_id` is the client's
    # idempotency key: the same key sent again (after a lost reply) returns the first request's operation.

    def compose(self, name: str, gpus: Optional[int] = None, *, model: str = "", min_memory_gib: int = 0, peer_to_peer="",
                host: str = "", device_ids: Sequence[str] = (), mig_profiles: Sequence[str] = (), share_milli: int = 0,
                tenant: str = "", labels: Optional[Mapping[str, str]] = None, request_id: str = "", queue: bool = False,
                priority_class: str = "", queue_timeout_seconds: float = 0, lease_seconds: float = 0,
                memory_gib: int = 0, nics: int = 0, nvme: int = 0,
                endpoints: Sequence["switchyard_pb2.EndpointRequest"] = (), machine_template: str = "") -> "switchyard_pb2.Operation":
        """A new system `name` with `gpus` whole GPUs, or the MIG instances `mig_profiles` (["3g", "1g"]), or a
        time-sliced `share_milli` of one GPU (250: a quarter), or the explicit `device_ids` (with `host`);
        `memory_gib` adds pooled CXL memory from the host's own switches (gpus=0 with it: memory alone); `nics` and
        `nvme` add that many NICs and drives, near the GPUs (`endpoints`: endpoint_request() values for models, sizes
        and affinity). `machine_template` starts from a template (templates()): what else is given replaces its part
        (gpus left unsaid keeps the template's GPUs; without a template it is 1).
        peer_to_peer: "required" (one switch or fail), "preferred" (the default), "none", or a PeerToPeer value.
        queue=True waits in yardd's queue when it does not fit now (the Operation comes back QUEUED and wait()
        follows it to its end); lease_seconds decomposes the system that long after it is composed."""
        if gpus is None:
            gpus = 0 if machine_template else 1
        request = switchyard_pb2.ComposeRequest(
            name=name, gpus=gpu_request(gpus, model=model, min_memory_gib=min_memory_gib, peer_to_peer=peer_to_peer, host=host,
                                        device_ids=device_ids, mig_profiles=mig_profiles, share_milli=share_milli),
            tenant=tenant, labels=dict(labels or {}), request_id=request_id, queue=queue, priority_class=priority_class,
            queue_timeout_seconds=int(queue_timeout_seconds), lease_seconds=int(lease_seconds),
            endpoints=_endpoints(nics, nvme, endpoints), machine_template=machine_template)
        if memory_gib:
            request.memory.gib = int(memory_gib)
        return self._call("yard.Compose", request)

    def attach(self, system: str, gpus: int = 1, *, model: str = "", min_memory_gib: int = 0, peer_to_peer="",
               device_ids: Sequence[str] = (), mig_profiles: Sequence[str] = (), share_milli: int = 0,
               request_id: str = "", memory_gib: int = 0, nics: int = 0, nvme: int = 0,
               endpoints: Sequence["switchyard_pb2.EndpointRequest"] = ()) -> "switchyard_pb2.Operation":
        """More GPUs (or MIG instances, or a share, or `memory_gib` of pooled memory, or `nics`/`nvme`) for an existing
        system, on its host."""
        request = switchyard_pb2.AttachRequest(
            system=system, gpus=gpu_request(gpus, model=model, min_memory_gib=min_memory_gib, peer_to_peer=peer_to_peer,
                                            device_ids=device_ids, mig_profiles=mig_profiles, share_milli=share_milli),
            request_id=request_id, endpoints=_endpoints(nics, nvme, endpoints))
        if memory_gib:
            request.memory.gib = int(memory_gib)
        return self._call("yard.Attach", request)

    def detach(self, system: str, device_ids: Sequence[str] = (), *, gpu_instances: Sequence[Tuple[str, int]] = (),
               gpu_shares: Sequence[int] = (), request_id: str = "") -> "switchyard_pb2.Operation":
        """Removes whole devices, single MIG instances ((device_id, start) pairs) or GPU shares (their ids)."""
        return self._call("yard.Detach", switchyard_pb2.DetachRequest(
            system=system, device_ids=list(device_ids),
            gpu_instances=[switchyard_pb2.GpuInstanceRef(device_id=d, start=int(s)) for d, s in gpu_instances],
            gpu_shares=[int(s) for s in gpu_shares], request_id=request_id))

    def decompose(self, system: str, *, request_id: str = "") -> "switchyard_pb2.Operation":
        """Unbinds every device of the system (host-release first); of a queued system, cancels it."""
        return self._call("yard.Decompose", switchyard_pb2.DecomposeRequest(system=system, request_id=request_id))

    def wait(self, operation_id: str, timeout: float = 120.0, check: bool = True) -> "switchyard_pb2.Operation":
        """The operation once it has ended; raises OperationFailed when it failed (unless check=False) and
        TimeoutError when it is still running after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"{operation_id} still running after {timeout} s")
            wait_ms = int(min(left, 30.0) * 1000)
            op = self._call("yard.WaitOperation", switchyard_pb2.WaitOperationRequest(id=operation_id, timeout_ms=wait_ms),
                            timeout=wait_ms / 1000 + 10)
            if op.state in _DONE_STATES:
                if check and op.state == switchyard_pb2.OPERATION_STATE_FAILED:
                    raise OperationFailed(op)
                return op

    # The queue, leases and usage.

    def queue(self, tenant: str = "") -> List["switchyard_pb2.QueueEntry"]:
        """The requests waiting in the queue, in admission order (position, name, waiting_for, ...)."""
        return list(self._call("yard.ListQueue", switchyard_pb2.ListQueueRequest(tenant=tenant)).entries)

    def cancel_queued(self, id_or_name: str) -> "switchyard_pb2.Operation":
        return self._call("yard.CancelQueued", switchyard_pb2.CancelQueuedRequest(id=id_or_name))

    def renew_lease(self, system: str, lease_seconds: float) -> "switchyard_pb2.System":
        return self._call("yard.RenewLease", switchyard_pb2.RenewLeaseRequest(system=system, lease_seconds=int(lease_seconds)))

    def forget_system(self, system: str) -> "switchyard_pb2.System":
        """Drops a system whose devices the fabric no longer reports (admins; audited): it ends as decomposed and
        nothing is unbound. Refused (FAILED_PRECONDITION) while the fabric reports any of its devices."""
        return self._call("yard.ForgetSystem", switchyard_pb2.ForgetSystemRequest(system=system))

    def usage(self, *, by: str = "", since: str = "", until: str = "") -> "switchyard_pb2.UsageResponse":
        """GPU-hours from the operation log (rows of tenant, system, model, gpu_hours and, of those, idle_gpu_hours),
        by "tenant", "system", "model", "label:KEY" (rows' labels[KEY]) or several comma-separated ("tenant,label:team"),
        or per tenant, system and model; since/until are RFC 3339 times or dates."""
        return self._call("yard.GetUsage", switchyard_pb2.GetUsageRequest(by=by, since=since, until=until))

    def idle(self, idle_for_seconds: float = 0, *, include_busy: bool = False, tenant: str = "") -> "switchyard_pb2.ListIdleResponse":
        """Attached GPUs idle at least idle_for_seconds, longest first (gpus: device_id, system_name, idle_seconds,
        idle_gpu_hours, utilization_percent, processes, reclaim, reclaim_at, ...), as their hosts last reported."""
        return self._call("yard.ListIdle", switchyard_pb2.ListIdleRequest(idle_for_seconds=int(idle_for_seconds),
                                                                           include_busy=include_busy, tenant=tenant))

    # Events.

    def watch(self, after_sequence: int = 0, timeout: Optional[float] = None, *, from_start: bool = False,
              types: Sequence[str] = (), subjects: Sequence[str] = (), system: str = "") -> Iterator["switchyard_pb2.Event"]:
        """Events as they happen (after `after_sequence`, 0: from now; from_start: every recorded one first),
        until the stream ends or `timeout` seconds pass (then grpc.RpcError DEADLINE_EXCEEDED). types: only these
        types or families ("drift" is drift.*); subjects: only events about these ids; system: only events about
        this system (name or id), its operations and devices."""
        return self._yard.Watch(switchyard_pb2.WatchRequest(after_sequence=after_sequence, from_start=from_start, types=list(types),
                                                            subjects=list(subjects), system=system),
                                timeout=timeout, metadata=self._metadata)

    def templates(self) -> List["switchyard_pb2.MachineTemplate"]:
        """The machine templates compose(machine_template=...) starts from (name, description, shape, gpus, endpoints, ...)."""
        return list(self._call("yard.ListTemplates", switchyard_pb2.ListTemplatesRequest()).templates)

    # Who you are.

    def whoami(self) -> "switchyard_pb2.WhoAmIResponse":
        """The identity, role and tenant these credentials prove, and yardd's version."""
        return self._call("yard.WhoAmI", switchyard_pb2.WhoAmIRequest())

    def login(self, name: str, password: str, ttl_seconds: float = 0) -> "switchyard_pb2.LoginResponse":
        """Trades a name and password for a short-lived token (LoginResponse.token; ttl 0: 12 h) and uses it for
        this client's later calls."""
        reply = self._call("yard.Login", switchyard_pb2.LoginRequest(name=name, password=password, ttl_seconds=int(ttl_seconds)))
        self._metadata = [m for m in self._metadata if m[0] != "authorization"] + [("authorization", f"Bearer {reply.token}")]
        return reply

    # Reads.

    def _pages(self, method, request, field):
        """Every page of a list (yardd answers lists a page at a time)."""
        items = []
        while True:
            page = self._call(method, request)
            items.extend(getattr(page, field))
            if not page.next_page_token:
                return items
            request.page_token = page.next_page_token

    def systems(self, tenant: str = "", *, label_selector: str = "") -> List["switchyard_pb2.System"]:
        """Every system (of `tenant`), or those whose labels match `label_selector` ("team=vision,!spot")."""
        return self._pages("yard.ListSystems", switchyard_pb2.ListSystemsRequest(tenant=tenant, label_selector=label_selector), "systems")

    def system(self, id_or_name: str) -> "switchyard_pb2.System":
        return self._call("yard.GetSystem", switchyard_pb2.GetSystemRequest(system=id_or_name))

    def devices(self, *, free_only: bool = False, model: str = "", switch_id: str = "", host_id: str = "",
                system: str = "", kind: str = "") -> List["switchyard_pb2.Device"]:
        """Every device, or those every given filter matches (kind: gpu, nvme, nic or cxl-memory). A NIC's
        speed_gbps is its port speed (0 where the fabric does not report it)."""
        return self._pages("yard.ListDevices", switchyard_pb2.ListDevicesRequest(
            free_only=free_only, model=model, switch_id=switch_id, host_id=host_id, system=system, kind=kind), "devices")

    def release_device(self, device_id: str, *, unbind: bool = False, host_is_down: bool = False) -> "switchyard_pb2.Device":
        """A quarantined device back in the pool: freed when the switch shows it unbound; with unbind=True, unbound
        first if it is still bound (yardd asks the host behind its port first, where it runs yard-agent, and refuses while
        that host still has it; elsewhere only once you know no host uses it). Operators and admins; audited."""
        return self._call("yard.ReleaseDevice", switchyard_pb2.ReleaseDeviceRequest(device_id=device_id, unbind=unbind,
                                                                                   host_is_down=host_is_down))

    def hosts(self) -> List["switchyard_pb2.Host"]:
        return self._pages("yard.ListHosts", switchyard_pb2.ListHostsRequest(), "hosts")

    def topology(self) -> "switchyard_pb2.Topology":
        """Switches (with their ports), hosts and devices, in one reply."""
        return self._call("yard.GetTopology", switchyard_pb2.GetTopologyRequest())

    def plan(self, gpus: int = 1, *, model: str = "", min_memory_gib: int = 0, peer_to_peer="", host: str = "",
             device_ids: Sequence[str] = (), mig_profiles: Sequence[str] = (), share_milli: int = 0,
             tenant: str = "", priority_class: str = "", memory_gib: int = 0, nics: int = 0, nvme: int = 0,
             endpoints: Sequence["switchyard_pb2.EndpointRequest"] = ()) -> "switchyard_pb2.PlanResponse":
        """Dry run: where a compose would go (fits, host_id, devices) and why (explanation, candidates). With a
        priority_class that preempts, a request that does not fit also names the systems preemption would take
        back (would_preempt) and the host it would get then (host_after_preemption). Before that, a request that
        does not fit names the idle GPUs of systems labelled movable=true a pass would move to make room
        (would_move) and the host it would get then (host_after_moves)."""
        request = switchyard_pb2.PlanRequest(
            gpus=gpu_request(gpus, model=model, min_memory_gib=min_memory_gib, peer_to_peer=peer_to_peer, host=host,
                             device_ids=device_ids, mig_profiles=mig_profiles, share_milli=share_milli),
            tenant=tenant, priority_class=priority_class, endpoints=_endpoints(nics, nvme, endpoints))
        if memory_gib:
            request.memory.gib = int(memory_gib)
        return self._call("yard.Plan", request)

    def capacity(self, gpus: Sequence[int] = (), *, peer_to_peer="", model: str = "", mig_profiles: Sequence[str] = (),
                 share_milli: Sequence[int] = ()) -> "switchyard_pb2.Capacity":
        """How many more requests of each size fit now (gpus: sizes, default 1, 2, 4, 8, 16), and of MIG profiles
        and share sizes when asked."""
        return self._call("yard.GetCapacity", switchyard_pb2.GetCapacityRequest(
            gpus=list(gpus), peer_to_peer=peer_to_peer_value(peer_to_peer), model=model, mig_profiles=list(mig_profiles),
            share_milli=list(share_milli)))

    def operation(self, operation_id: str) -> "switchyard_pb2.Operation":
        return self._call("yard.GetOperation", switchyard_pb2.GetOperationRequest(id=operation_id))

    def operations(self, limit: int = 50, *, system: str = "", kind: str = "", state: str = "") -> List["switchyard_pb2.Operation"]:
        """The most recent operations, newest first; only those on `system`, of `kind` (compose, decompose, attach,
        detach) and in `state` (queued, running, rolling-back, succeeded, failed) when given."""
        return list(self._call("yard.ListOperations", switchyard_pb2.ListOperationsRequest(
            limit=limit, system=system, kind=kind, state=state)).operations)

    def events(self, *, system: str = "", limit: int = 20) -> List["switchyard_pb2.Event"]:
        """The newest recorded events, oldest first: every one the caller may see, or one system's (id or name: its own,
        its operations' and its devices'), among the newest 2,000. watch() follows them live."""
        return list(self._call("yard.ListEvents", switchyard_pb2.ListEventsRequest(system=system, limit=limit)).events)

    def audit(self, *, tenant: str = "", identity: str = "", since: str = "", until: str = "", limit: int = 100,
              before_sequence: int = 0) -> List["switchyard_pb2.AuditRecord"]:
        """Who asked for what and how it ended, newest first (since/until: RFC 3339). For the next page pass
        before_sequence=<the last record's sequence>."""
        return list(self._call("yard.ListAudit", switchyard_pb2.ListAuditRequest(
            tenant=tenant, identity=identity, since=since, until=until, limit=limit, before_sequence=before_sequence)).records)

    # The composable-resource provider (docs/kubernetes.md): one GPU per call, keyed by request_id.

    def add_resource(self, request_id, node, *, model="", tenant="", type="gpu"):
        """One device for `node`: a whole GPU (type "gpu"), an NVMe drive ("nvme") or a NIC ("nic")."""
        return self._call("provider.AddResource", provider_pb2.AddResourceRequest(
            request_id=request_id, node=node, type=type, model=model, tenant=tenant))

    def remove_resource(self, request_id, node, *, device_uuid="", device_id=""):
        return self._call("provider.RemoveResource", provider_pb2.RemoveResourceRequest(
            request_id=request_id, node=node, device_uuid=device_uuid, device_id=device_id))

    def check_resource(self, node, *, device_uuid="", device_id="", request_id=""):
        return self._call("provider.CheckResource", provider_pb2.CheckResourceRequest(
            node=node, device_uuid=device_uuid, device_id=device_id, request_id=request_id))

    def get_resources(self, node=""):
        return list(self._call("provider.GetResources", provider_pb2.GetResourcesRequest(node=node)).resources)
