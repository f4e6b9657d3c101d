"""The Python client, as pip installs it, against the real yardd: compose, wait, watch, decompose; request ids
make retries safe, across a restart too; every RPC has a method, MIG, shares and peer-to-peer included."""
import os
import pathlib
import re
import threading
import unittest

import grpc

from harness import YarddTestCase, wait_for
import switchyard_client
from switchyard_client import Client, OperationFailed
from switchyard.v1 import switchyard_pb2


class ClientTest(YarddTestCase):
    def test_the_installed_package_is_the_one_under_test_and_covers_every_rpc(self):
        import switchyard_client
        from switchyard.v1 import provider_pb2
        venv = os.environ.get("SWITCHYARD_VENV")
        if venv:  # under ctest: the package pip installed, not cli/python
            self.assertTrue(pathlib.Path(switchyard_client.__file__).resolve().is_relative_to(pathlib.Path(venv).resolve()),
                            switchyard_client.__file__)
            self.assertTrue(pathlib.Path(switchyard_pb2.__file__).resolve().is_relative_to(pathlib.Path(venv).resolve()),
                            "the generated modules come with the package")
        cmake = (pathlib.Path(__file__).resolve().parents[2] / "CMakeLists.txt").read_text(encoding="utf-8")
        self.assertEqual(switchyard_client.__version__, re.search(r"project\(switchyard VERSION ([0-9.]+)", cmake).group(1))
        # Every RPC of both services is called by some method of Client.
        import inspect
        source = inspect.getsource(switchyard_client.client)
        for descriptor, prefix in ((switchyard_pb2.DESCRIPTOR, "yard"), (provider_pb2.DESCRIPTOR, "provider")):
            for service in descriptor.services_by_name.values():
                for method in service.methods:
                    if method.name == "Watch":
                        self.assertIn("self._yard.Watch(", source)
                        continue
                    self.assertIn(f'"{prefix}.{method.name}"', source, f"no Client method calls {service.name}.{method.name}")

    def test_compose_options_plan_capacity_topology_operations_and_audit(self):
        yardd = self.yardd()
        with Client(yardd.address, plaintext=True, caller="py-test") as yard:
            plan = yard.plan(4, peer_to_peer="required")
            self.assertTrue(plan.fits, plan.explanation)
            self.assertEqual(len(plan.devices), 4)
            self.assertTrue(plan.explanation)

            op = yard.compose("p2p", 4, peer_to_peer="required", labels={"team": "vision"}, request_id="job-p2p")
            self.assertEqual(yard.compose("p2p", 4, peer_to_peer="required", labels={"team": "vision"}, request_id="job-p2p").id, op.id,
                             "the same request id is the same operation")
            yard.wait(op.id)
            p2p = yard.system("p2p")
            self.assertEqual(dict(p2p.labels), {"team": "vision"})
            switches = {d.switch_id for d in yard.devices(system="p2p")}
            self.assertEqual(len(switches), 1, "peer-to-peer: every GPU under one switch")

            yard.wait(yard.compose("mig", mig_profiles=["3g", "1g"]).id)
            mig = yard.system("mig")
            self.assertEqual(sorted(i.profile for i in mig.gpu_instances), ["1g", "3g"])
            yard.wait(yard.compose("shared", share_milli=250).id)
            self.assertEqual([s.milli for s in yard.system("shared").gpu_shares], [250])
            one = mig.gpu_instances[0]
            yard.wait(yard.detach("mig", gpu_instances=[(one.device_id, one.start)]).id)
            self.assertEqual(len(yard.system("mig").gpu_instances), 1)

            topology = yard.topology()
            self.assertEqual(len(topology.switches), 2)
            kinds = [d.kind for d in topology.devices]
            self.assertEqual((kinds.count("gpu"), kinds.count("nic"), kinds.count("nvme")), (16, 8, 8))
            free = yard.devices(free_only=True)
            self.assertTrue(free)
            self.assertTrue(all(d.switch_id for d in free))
            capacity = yard.capacity([8], peer_to_peer="required", mig_profiles=["1g"], share_milli=[500])
            self.assertEqual([s.gpus for s in capacity.shapes], [8])
            self.assertTrue(capacity.mig)
            self.assertTrue(capacity.shares)

            ops = yard.operations(limit=20)
            self.assertIn(op.id, [o.id for o in ops])
            self.assertEqual([o.id for o in yard.operations(system="p2p")], [op.id])
            self.assertEqual([s.name for s in yard.systems(label_selector="team=vision")], ["p2p"])
            me = yard.whoami()
            self.assertEqual((me.identity, me.role, me.authenticated), ("py-test", "admin", False))
            audit = yard.audit(limit=50)
            self.assertTrue(any(r.operation_id == op.id and r.action == "compose" and r.outcome == "succeeded" for r in audit))
            older = yard.audit(limit=1, before_sequence=audit[0].sequence)
            self.assertEqual([r.sequence for r in older], [audit[1].sequence])

            with self.assertRaises(ValueError):
                yard.compose("nope", 1, peer_to_peer="sometimes")

    def test_the_example_prints_every_event_to_the_decomposes_end(self):
        """cli/python/examples/compose_wait_watch.py once stopped at the compose's end event, before the decompose's."""
        import subprocess
        import sys
        yardd = self.yardd()
        example = pathlib.Path(__file__).resolve().parents[2] / "cli" / "python" / "examples" / "compose_wait_watch.py"
        run = subprocess.run([sys.executable, str(example), "--server", yardd.address, "--plaintext", "--gpus", "2", "demo-py"],
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertIn("demo-py decomposed", run.stdout)
        ends = re.findall(r"event \d+ operation.succeeded (op-\d+)", run.stdout)
        self.assertEqual(ends, ["op-000001", "op-000002"], run.stdout)

    def test_compose_wait_watch_and_decompose(self):
        yardd = self.yardd()
        with Client(yardd.address, plaintext=True, caller="py-test") as yard:
            events = []
            stream = yard.watch(timeout=30)

            def collect():
                try:
                    for e in stream:
                        events.append(e)
                except grpc.RpcError:
                    pass

            reader = threading.Thread(target=collect, daemon=True)
            reader.start()
            # Watch has no "subscribed" reply: an event of our own shows the stream is live.
            probes = iter(range(1000))
            wait_for(lambda: yard.compose(f"probe-{next(probes)}", gpus=1) and any(e.subject.startswith("op-") for e in events),
                     interval=0.2, what="the first event")
            op = yard.compose("train-py", gpus=2)
            self.assertEqual(op.state, switchyard_pb2.OPERATION_STATE_RUNNING)
            done = yard.wait(op.id)
            self.assertEqual(done.state, switchyard_pb2.OPERATION_STATE_SUCCEEDED)
            system = yard.system("train-py")
            self.assertEqual(len(system.bindings), 2)
            for b in system.bindings:
                self.assertRegex(b.uuid, r"^GPU-[0-9a-f-]{36}$")
                self.assertRegex(b.host_pci_address, r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")
            wait_for(lambda: any(e.type == "operation.succeeded" and e.subject == op.id for e in events), what="the succeeded event")
            ours = [e.type for e in events if op.id in e.message or e.subject == op.id]
            self.assertIn("operation.accepted", ours)
            accepted = [e for e in events if e.type == "operation.accepted" and e.subject == op.id]
            self.assertEqual([e.actor for e in accepted], ["py-test"], "the event names the client that asked")
            yard.wait(yard.decompose("train-py").id)
            self.assertEqual([s.name for s in yard.systems() if s.name == "train-py"], [])
            stream.cancel()
            reader.join(timeout=5)

    def test_mixed_systems_and_machine_templates(self):
        """Drives and NICs by count beside GPUs, near them; a template's compose; an override; the template's label."""
        yardd = self.yardd()
        with Client(yardd.address, plaintext=True, caller="py-test") as yard:
            names = [t.name for t in yard.templates()]
            self.assertEqual(names, ["train-8x", "infer-1x", "storage-2x"], "yardd's examples when no --templates is given")
            train = next(t for t in yard.templates() if t.name == "train-8x")
            self.assertEqual(train.shape, "8 GPU(s) (p2p required), 4 NIC(s) >= 200 Gb/s under the GPUs' switches, 2 NVMe drive(s)")

            yard.wait(yard.compose("mixed", gpus=2, nics=1, nvme=1, peer_to_peer="required").id)
            kinds = {d.id: d.kind for d in yard.devices()}
            bound = [b.device_id for b in yard.system("mixed").bindings]
            self.assertEqual(sorted(kinds[d] for d in bound), ["gpu", "gpu", "nic", "nvme"])
            gpu_switch = next(d for d in bound if kinds[d] == "gpu").split("-")[0]
            nic = next(d for d in bound if kinds[d] == "nic")
            self.assertEqual(nic.split("-")[0], gpu_switch, "the NIC sits under the GPUs' switch")
            # A NIC by port speed, listed by kind.
            speeds = {d.id: d.speed_gbps for d in yard.devices(kind="nic")}
            self.assertEqual(len(speeds), 8)
            fast = switchyard_client.endpoint_request("nic", 1, min_speed_gbps=400)
            yard.wait(yard.compose("fastnic", gpus=0, endpoints=[fast]).id)
            self.assertEqual([speeds[b.device_id] for b in yard.system("fastnic").bindings], [400])
            yard.wait(yard.decompose("fastnic").id)

            op = yard.wait(yard.compose("trainer", machine_template="train-8x").id)
            self.assertIn("4 nic", op.explanation)
            system = yard.system("trainer")
            self.assertEqual(system.labels["switchyard.io/template"], "train-8x")
            kinds_bound = sorted(kinds[b.device_id] for b in system.bindings)
            self.assertEqual((kinds_bound.count("gpu"), kinds_bound.count("nic"), kinds_bound.count("nvme")), (8, 4, 2))
            # What the request sets replaces the template's part: 1 NIC instead of 4, the template's drives kept.
            yard.wait(yard.decompose("trainer").id)
            yard.wait(yard.compose("trainer", machine_template="train-8x", nics=1).id)
            kinds_bound = sorted(kinds[b.device_id] for b in yard.system("trainer").bindings)
            self.assertEqual((kinds_bound.count("gpu"), kinds_bound.count("nic"), kinds_bound.count("nvme")), (8, 1, 2))

            with self.assertRaises(grpc.RpcError) as unknown:
                yard.compose("nope", machine_template="train-64x")
            self.assertEqual(unknown.exception.code(), grpc.StatusCode.NOT_FOUND)
            self.assertIn("known: train-8x, infer-1x, storage-2x", unknown.exception.details())
            with self.assertRaises(grpc.RpcError) as bad:
                yard.compose("nope", gpus=1, endpoints=[switchyard_client.endpoint_request("FPGA!", 1)])
            self.assertEqual(bad.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
            # Another class by name is a kind of its own: the embedded pool has no FPGA, so none fits.
            with self.assertRaises(grpc.RpcError) as none:
                yard.compose("nope", gpus=1, endpoints=[switchyard_client.endpoint_request("fpga", 1)])
            self.assertEqual(none.exception.code(), grpc.StatusCode.RESOURCE_EXHAUSTED)
            self.assertIn("1 fpga(s)", none.exception.details())

    def test_a_failed_operation_raises_with_the_reason(self):
        yardd = self.yardd("--sim-fail-next", "1")
        with Client(yardd.address, plaintext=True) as yard:
            op = yard.compose("doomed", gpus=1)
            with self.assertRaises(OperationFailed) as failed:
                yard.wait(op.id)
            self.assertIn("injected fault", failed.exception.operation.error)
            with self.assertRaises(grpc.RpcError) as refused:
                yard.compose("too-big", gpus=64)
            self.assertEqual(refused.exception.code(), grpc.StatusCode.RESOURCE_EXHAUSTED)

    def test_a_request_id_returns_the_same_operation_even_after_a_restart(self):
        yardd = self.yardd()
        with Client(yardd.address, plaintext=True) as yard:
            first = yard.compose("keyed", gpus=1, request_id="req-1")
            again = yard.compose("keyed", gpus=1, request_id="req-1")
            self.assertEqual(first.id, again.id, "a retried compose must not start a second operation")
            self.assertEqual(again.request_id, "req-1")
            yard.wait(first.id)
            with self.assertRaises(grpc.RpcError) as reused:
                yard.decompose("keyed", request_id="req-1")
            self.assertEqual(reused.exception.code(), grpc.StatusCode.ALREADY_EXISTS)
            self.assertIn("compose", reused.exception.details())
        yardd.stop()
        yardd.start()
        with Client(yardd.address, plaintext=True) as yard:
            after = yard.compose("keyed", gpus=1, request_id="req-1")
            self.assertEqual(after.id, first.id)
            self.assertEqual(after.state, switchyard_pb2.OPERATION_STATE_SUCCEEDED)
            self.assertEqual(len([s for s in yard.systems() if s.name == "keyed"]), 1)

    def test_the_readmes_example_runs_and_ends_cleanly(self):
        """Issue 63, item 7: cli/python/README.md's example, run as written against yardd (its address, credentials and
        wait made the test's), ends with exit status 0 once its watch times out."""
        import subprocess
        import sys
        readme = (pathlib.Path(__file__).resolve().parents[2] / "cli" / "python" / "README.md").read_text()
        code = re.search(r"```python\n(.*?)```", readme, re.S).group(1)
        yardd = self.yardd()
        code = code.replace('Client("127.0.0.1:7390", ca="~/.local/state/switchyard/grpc-cert.pem", token_file="~/.yard-token")',
                            f'Client("{yardd.address}", plaintext=True)').replace("timeout=10", "timeout=1")
        self.assertIn("plaintext=True", code, "the README's Client line changed: update this test")
        run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertIn("operation.succeeded", run.stdout)

    def test_it_trusts_yardds_own_certificate_where_yardctl_finds_it(self):
        """Issue 63, item 7: with no ca given, the client trusts the self-signed grpc-cert.pem in yardd's default state
        directory ($XDG_STATE_HOME/switchyard here), as yardctl does."""
        import subprocess
        from harness import YARDD
        xdg = self.dir / "xdg"
        state = xdg / "switchyard"
        state.mkdir(parents=True)
        log = open(self.dir / "tls-yardd.log", "wb")
        daemon = subprocess.Popen([YARDD, "--listen", "127.0.0.1:0", "--port-file", str(self.dir / "tls-port")], stdout=log,
                                  stderr=subprocess.STDOUT, env={**os.environ, "XDG_STATE_HOME": str(xdg)})
        try:
            wait_for(lambda: (self.dir / "tls-port").exists() or daemon.poll() is not None, what="yardd over TLS")
            self.assertTrue((state / "grpc-cert.pem").exists(), (self.dir / "tls-yardd.log").read_text())
            address = f"127.0.0.1:{(self.dir / 'tls-port').read_text().strip()}"
            saved = {k: os.environ.get(k) for k in ("XDG_STATE_HOME", "YARD_CA")}
            os.environ["XDG_STATE_HOME"] = str(xdg)
            os.environ.pop("YARD_CA", None)
            try:
                with Client(address) as yard:
                    self.assertEqual(len(yard.hosts()), 4)
            finally:
                for k, v in saved.items():
                    if v is None:
                        os.environ.pop(k, None)
                    else:
                        os.environ[k] = v
        finally:
            daemon.terminate()
            daemon.wait(timeout=20)
            log.close()


if __name__ == "__main__":
    unittest.main()
