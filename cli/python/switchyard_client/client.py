"""The client: one channel to yardd, TLS by default, a bearer token when given."""
import os
import time

import grpc

try:
    from switchyard.v1 import provider_pb2, provider_pb2_grpc, switchyard_pb2, switchyard_pb2_grpc
except ImportError as error:  # pragma: no cover - a setup mistake, explained
    raise ImportError(
        "switchyard_client needs the generated switchyard.v1 modules: build Switchyard (cmake --build build) "
        "and put build/python on PYTHONPATH") from error

ResourceStatus = provider_pb2.ResourceStatus
_DONE_STATES = (switchyard_pb2.OPERATION_STATE_SUCCEEDED, switchyard_pb2.OPERATION_STATE_FAILED)


class OperationFailed(Exception):
    """An operation that ended failed (and was rolled back); .operation holds it."""

    def __init__(self, operation):
        super().__init__(f"{operation.id} failed: {operation.error}")
        self.operation = operation


class Client:
    """yardd's API. Every method raises grpc.RpcError with yardd's status code and message on a refusal."""

    def __init__(self, address="127.0.0.1:7390", *, ca=None, cert=None, key=None, token=None, token_file=None,
                 plaintext=False, caller=None, timeout=30.0):
        """address: HOST:PORT. TLS unless plaintext=True (yardd allows that on loopback only); ca: the PEM file
        to trust (yardd's self-signed grpc-cert.pem or a CA); cert/key: a client certificate for mutual TLS;
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
        self._channel = grpc.insecure_channel(address) if self._plaintext else grpc.secure_channel(address, self._credentials)
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

    # Changes: each returns the accepted Operation at once; wait() follows it.

    def compose(self, name, gpus=1, *, model="", host="", tenant="", labels=None, request_id="", queue=False,
                priority_class="", queue_timeout_seconds=0, lease_seconds=0):
        """queue=True waits in yardd's queue when it does not fit now (the Operation comes back QUEUED and
        wait() follows it to its end); lease_seconds decomposes the system that long after it is composed."""
        request = switchyard_pb2.ComposeRequest(
            name=name, gpus=switchyard_pb2.GpuRequest(count=gpus, model=model, host=host), tenant=tenant,
            labels=labels or {}, request_id=request_id, queue=queue, priority_class=priority_class,
            queue_timeout_seconds=int(queue_timeout_seconds), lease_seconds=int(lease_seconds))
        return self._call("yard.Compose", request)

    def queue(self, tenant=""):
        """The requests waiting in the queue, in admission order (QueueEntry: position, name, waiting_for, ...)."""
        return list(self._call("yard.ListQueue", switchyard_pb2.ListQueueRequest(tenant=tenant)).entries)

    def cancel_queued(self, id_or_name):
        return self._call("yard.CancelQueued", switchyard_pb2.CancelQueuedRequest(id=id_or_name))

    def usage(self, *, by="", since="", until=""):
        """GPU-hours from the operation log (UsageResponse: rows of tenant, system, model, gpu_hours), by
        "tenant", "system", "model" or per all three; since/until are RFC 3339 times or dates."""
        return self._call("yard.GetUsage", switchyard_pb2.GetUsageRequest(by=by, since=since, until=until))

    def renew_lease(self, system, lease_seconds):
        return self._call("yard.RenewLease", switchyard_pb2.RenewLeaseRequest(system=system, lease_seconds=int(lease_seconds)))

    def attach(self, system, gpus=1, *, model="", request_id=""):
        request = switchyard_pb2.AttachRequest(system=system, gpus=switchyard_pb2.GpuRequest(count=gpus, model=model),
                                               request_id=request_id)
        return self._call("yard.Attach", request)

    def detach(self, system, device_ids, *, request_id=""):
        return self._call("yard.Detach", switchyard_pb2.DetachRequest(system=system, device_ids=device_ids,
                                                                          request_id=request_id))

    def decompose(self, system, *, request_id=""):
        return self._call("yard.Decompose", switchyard_pb2.DecomposeRequest(system=system, request_id=request_id))

    def wait(self, operation_id, timeout=120.0, check=True):
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

    def watch(self, after_sequence=0, timeout=None):
        """Events as they happen (after `after_sequence`, 0: from now), until the stream ends or `timeout`
        seconds pass (then grpc.RpcError DEADLINE_EXCEEDED)."""
        return self._yard.Watch(switchyard_pb2.WatchRequest(after_sequence=after_sequence), timeout=timeout,
                                metadata=self._metadata)

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

    def systems(self, tenant=""):
        return self._pages("yard.ListSystems", switchyard_pb2.ListSystemsRequest(tenant=tenant), "systems")

    def system(self, id_or_name):
        return self._call("yard.GetSystem", switchyard_pb2.GetSystemRequest(system=id_or_name))

    def devices(self):
        return self._pages("yard.ListDevices", switchyard_pb2.ListDevicesRequest(), "devices")

    def hosts(self):
        return self._pages("yard.ListHosts", switchyard_pb2.ListHostsRequest(), "hosts")

    def capacity(self, gpus=()):
        return self._call("yard.GetCapacity", switchyard_pb2.GetCapacityRequest(gpus=list(gpus)))

    def operation(self, operation_id):
        return self._call("yard.GetOperation", switchyard_pb2.GetOperationRequest(id=operation_id))

    # The composable-resource provider (docs/kubernetes.md): one GPU per call, keyed by request_id.

    def add_resource(self, request_id, node, *, model="", tenant=""):
        return self._call("provider.AddResource", provider_pb2.AddResourceRequest(
            request_id=request_id, node=node, type="gpu", model=model, tenant=tenant))

    def remove_resource(self, request_id, node, *, device_uuid="", device_id=""):
        return self._call("provider.RemoveResource", provider_pb2.RemoveResourceRequest(
            request_id=request_id, node=node, device_uuid=device_uuid, device_id=device_id))

    def check_resource(self, node, *, device_uuid="", device_id="", request_id=""):
        return self._call("provider.CheckResource", provider_pb2.CheckResourceRequest(
            node=node, device_uuid=device_uuid, device_id=device_id, request_id=request_id))

    def get_resources(self, node=""):
        return list(self._call("provider.GetResources", provider_pb2.GetResourcesRequest(node=node)).resources)
