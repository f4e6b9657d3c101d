"""The Python client against the real yardd: compose, wait, watch, decompose; request ids make retries safe,
across a restart too."""
import threading
import unittest

import grpc

from harness import YarddTestCase, wait_for
from switchyard_client import Client, OperationFailed
from switchyard.v1 import switchyard_pb2


class ClientTest(YarddTestCase):
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


if __name__ == "__main__":
    unittest.main()
