"""Active/standby on etcd (issue 26): three etcd members and two yardd on one store; a client composes and
decomposes without pause, retrying each request with its request id through a channel that knows both
yardd; the leader is killed with SIGKILL again and again (and restarted as a standby). Checked: the standby
takes over within the lease TTL + 2 s, every accepted operation ended (none lost), no request id started
two operations (none applied twice), no device is in two systems, and the store agrees with the switch.

Over TLS, as documented: both yardd serve the development certificates (./setup.sh dev-certs) and the client
and yardctl dial the two-address target `ipv4:A,B`, verifying each certificate by the first address's host.
etcd is secured too: clients over TLS with a certificate the CA signed (--client-cert-auth), and etcd's
authentication on, yardd logging in as an etcd user whose role covers only /switchyard/.

SWITCHYARD_FAILOVER_KILLS=50 for the long run (CI: 5); the failover times are printed as a distribution."""
import json
import os
import random
import pathlib
import signal
import statistics
import subprocess
import threading
import time
import unittest

import grpc

from etcd_cluster import EtcdCluster
from harness import YARDCTL, Yardd, YarddTestCase, free_port, require_tool, wait_for
from switchyard_client import Client
from switchyard.v1 import switchyard_pb2

LEASE_TTL = 3
RETRYABLE = {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.ABORTED, grpc.StatusCode.CANCELLED,
             grpc.StatusCode.UNKNOWN}


class Workload(threading.Thread):
    """Compose, then decompose, job after job; a call that fails because no yardd leads is sent again with
    the same request id until it is answered."""

    def __init__(self, target, ca):
        super().__init__(daemon=True)
        self.client = Client(target, ca=ca, caller="failover-test", timeout=5)
        self.stop = threading.Event()
        self.operations = {}  # request id -> operation id
        self.retries = 0
        self.errors = []

    def call(self, request_id, fn):
        deadline = time.monotonic() + 60
        while True:
            try:
                op = fn()
                self.operations[request_id] = op.id
                return self.client.wait(op.id, timeout=60, check=False)
            except grpc.RpcError as e:
                if e.code() not in RETRYABLE or time.monotonic() > deadline:
                    raise
                self.retries += 1
                time.sleep(0.1)

    def run(self):
        i = 0
        try:
            while not self.stop.is_set():
                name = f"job-{i}"
                composed = self.call(f"compose-{i}", lambda: self.client.compose(name, gpus=1 + i % 3, request_id=f"compose-{i}"))
                if composed.state == switchyard_pb2.OPERATION_STATE_SUCCEEDED:
                    self.call(f"decompose-{i}", lambda: self.client.decompose(name, request_id=f"decompose-{i}"))
                i += 1
        except Exception as e:  # noqa: BLE001 - reported by the test
            self.errors.append(repr(e))


class FailoverTest(YarddTestCase):
    def test_the_standby_takes_over_and_nothing_is_lost_or_applied_twice(self):
        kills = int(os.environ.get("SWITCHYARD_FAILOVER_KILLS", "5"))
        ports = [free_port(), free_port()]
        require_tool("openssl")
        certs = self.dir / "certs"
        subprocess.run([str(pathlib.Path(os.environ.get("SWITCHYARD_SOURCE_DIR", ".")) / "setup.sh"), "dev-certs", str(certs)], check=True,
                       capture_output=True)
        ca = str(certs / "ca.pem")
        etcd_client = _etcd_client_certificate(certs)
        etcd_dir = self.dir / "etcd"
        etcd_dir.mkdir()
        cluster = EtcdCluster(etcd_dir, tls={"certs": certs, **etcd_client}).start()
        self.addCleanup(cluster.stop)
        cluster.enable_auth("yardd", "failover-secret", "/switchyard/")
        password_file = self.dir / "etcd-password"
        password_file.write_text("failover-secret\n")
        password_file.chmod(0o600)
        etcd_flags = ["--etcd-ca", ca, "--etcd-cert", str(etcd_client["cert"]), "--etcd-key", str(etcd_client["key"]), "--etcd-user", "yardd",
                      "--etcd-password-file", str(password_file)]
        switch = self.dir / "switch.json"  # the simulated switch both yardd drive (one at a time)
        daemons = [Yardd(self.dir / f"yardd-{i}", "--store", cluster.store_url(), *etcd_flags, "--lease-ttl", str(LEASE_TTL), "--sim-state", str(switch),
                         listen=f"127.0.0.1:{ports[i]}", tls=certs) for i in range(2)]
        self.daemons.extend(daemons)
        daemons[0].start()
        daemons[1].start(wait=False)
        wait_for(lambda: "standing by" in daemons[1].log(), what="the second yardd to stand by")

        target = f"ipv4:127.0.0.1:{ports[0]},127.0.0.1:{ports[1]}"
        workload = Workload(target, ca)
        workload.start()
        failovers = []
        rng = random.Random(int(os.environ.get("SWITCHYARD_FAILOVER_SEED", "26")))
        for _ in range(kills):
            time.sleep(rng.uniform(0.5, 2.0))
            leader_addr = cluster.get("/switchyard/leader")
            leader = next(d for d in daemons if d.listen == leader_addr)
            standby = next(d for d in daemons if d is not leader)
            (standby.state_dir / "port").unlink(missing_ok=True)
            killed_at = time.monotonic()
            leader.process.send_signal(signal.SIGKILL)
            leader.process.wait()
            standby.wait_serving(timeout=LEASE_TTL + 30)
            # Serving means the gRPC port is open; leading means it answers.
            with Client(standby.address, ca=ca, timeout=2) as probe:
                wait_for(lambda: _answers(probe), timeout=30, interval=0.02, what="the new leader to answer")
            failovers.append(time.monotonic() - killed_at)
            stood_by = leader.log().count("standing by:")
            leader.start(wait=False)  # back as a standby
            wait_for(lambda: leader.log().count("standing by:") > stood_by, timeout=30, what="the restarted yardd to stand by")

        time.sleep(1.0)
        workload.stop.set()
        workload.join(timeout=120)
        self.assertFalse(workload.is_alive(), "the workload finished its last job")
        self.assertEqual(workload.errors, [])

        leader = next(d for d in daemons if d.listen == cluster.get("/switchyard/leader"))
        # yardctl over TLS to both addresses, as docs/operations.md shows it.
        listed = subprocess.run([YARDCTL, "--server", target, "--ca", ca, "-o", "json", "systems"], capture_output=True, text=True, timeout=60)
        self.assertEqual(listed.returncode, 0, listed.stderr)
        with Client(leader.listen, ca=ca) as yard:
            # None lost: every operation a request id started is in the store and has ended.
            for request_id, op_id in workload.operations.items():
                op = yard.operation(op_id)
                self.assertIn(op.state, (switchyard_pb2.OPERATION_STATE_SUCCEEDED, switchyard_pb2.OPERATION_STATE_FAILED), op_id)
                self.assertEqual(op.request_id, request_id)
            # None applied twice: the same request id again is answered by the same operation.
            for request_id, op_id in list(workload.operations.items())[:20]:
                kind, number = request_id.split("-")
                again = (yard.compose(f"job-{number}", gpus=1, request_id=request_id) if kind == "compose"
                         else yard.decompose(f"job-{number}", request_id=request_id))
                self.assertEqual(again.id, op_id)
            systems = [s for s in yard.systems() if s.state == switchyard_pb2.SYSTEM_STATE_COMPOSED]
            devices = [b.device_id for s in systems for b in s.bindings]
            self.assertEqual(len(devices), len(set(devices)), "no device in two systems")
        # The store and the switch agree (the switch's own table, from its state file).
        bindings = json.loads(switch.read_text())["bindings"]
        self.assertEqual(sorted(devices), sorted(bindings))

        failovers.sort()
        print(f"\nfailover after SIGKILL of the leader, {len(failovers)} kills, lease TTL {LEASE_TTL} s: "
              f"min {failovers[0]:.2f} s, median {statistics.median(failovers):.2f} s, "
              f"p90 {failovers[int(0.9 * (len(failovers) - 1))]:.2f} s, max {failovers[-1]:.2f} s; "
              f"{len(workload.operations)} operations, {workload.retries} client retries")
        self.assertLessEqual(failovers[-1], LEASE_TTL + 2, f"failover within the lease TTL + 2 s: {failovers}")


def _etcd_client_certificate(certs):
    """A client certificate for yardd with no CommonName, signed by the development CA: etcd's JSON gateway refuses
    a certificate with a CN once authentication is on (it could not use the CN as the user), so the user comes from
    the password and the certificate only proves the client may connect."""
    key, cert = certs / "yardd-etcd.key", certs / "yardd-etcd.pem"
    csr, ext = certs / "yardd-etcd.csr", certs / "yardd-etcd.ext"
    subprocess.run(["openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-subj", "/O=switchyard",
                    "-keyout", str(key), "-out", str(csr)], check=True, capture_output=True)
    ext.write_text("subjectAltName=DNS:yardd\nextendedKeyUsage=clientAuth\n")
    subprocess.run(["openssl", "x509", "-req", "-in", str(csr), "-CA", str(certs / "ca.pem"), "-CAkey", str(certs / "ca.key"), "-CAcreateserial",
                    "-days", "2", "-extfile", str(ext), "-out", str(cert)], check=True, capture_output=True)
    return {"cert": cert, "key": key}


def _answers(client):
    try:
        client.systems()
        return True
    except grpc.RpcError:
        return False


if __name__ == "__main__":
    unittest.main()
