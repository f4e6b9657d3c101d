"""A standby yardd on etcd (issue 26) serves reads while it waits: from a replica of the store that etcd's
watch keeps current. Checked with the real clients: reads on the standby show what the leader composed,
its Watch stream carries the leader's events, WaitOperation on it ends when the leader's operation does; a
change sent to it is refused with UNAVAILABLE and the leader's address in the `switchyard-leader` trailing
metadata, which the Python client and yardctl follow."""
import subprocess
import time
import unittest

import grpc

from etcd_cluster import EtcdCluster
from harness import YARDCTL, Yardd, YarddTestCase, free_port, wait_for
from switchyard_client import Client
from switchyard.v1 import switchyard_pb2, switchyard_pb2_grpc


class StandbyTest(YarddTestCase):
    def test_a_standby_serves_reads_and_sends_changes_to_the_leader(self):
        etcd_dir = self.dir / "etcd"
        etcd_dir.mkdir()
        cluster = EtcdCluster(etcd_dir, members=1).start()
        self.addCleanup(cluster.stop)
        ports = [free_port(), free_port()]
        switch = self.dir / "switch.json"
        leader, standby = [Yardd(self.dir / f"yardd-{i}", "--store", cluster.store_url(), "--sim-state", str(switch),
                                 listen=f"127.0.0.1:{ports[i]}") for i in range(2)]
        self.daemons.extend([leader, standby])
        leader.start()
        standby.start(wait=False)
        wait_for(lambda: "standing by: the leader is 127.0.0.1" in standby.log(), what="the second yardd to stand by")
        self.assertIn("standby: serving reads on", standby.log())

        with Client(leader.listen, plaintext=True, caller="standby-test") as at_leader, \
                Client(standby.listen, plaintext=True, caller="standby-test") as at_standby:
            # Reads on the standby follow the leader's writes.
            at_leader.wait(at_leader.compose("first", gpus=2).id)
            # The standby may first show the system as accepted (no bindings yet), then as composed.
            wait_for(lambda: [(s.name, len(s.bindings)) for s in at_standby.systems()] == [("first", 2)], timeout=10,
                     what="the standby to show the system with its GPUs")
            self.assertEqual(len(at_standby.system("first").bindings), 2)
            self.assertEqual(at_standby.capacity([8]).free_gpus, 14)

            # Its Watch stream carries the leader's events; WaitOperation on it ends with the leader's operation.
            events = at_standby.watch(timeout=20)
            time.sleep(0.3)  # Watch sends nothing to say it is subscribed
            op = at_leader.compose("second", gpus=1)
            done = at_standby.wait(op.id, timeout=20)
            self.assertEqual(done.state, switchyard_pb2.OPERATION_STATE_SUCCEEDED)
            seen = []
            for e in events:
                seen.append((e.type, e.subject))
                if e.type == "operation.succeeded" and e.subject == op.id:
                    break
            events.cancel()
            self.assertIn(("operation.accepted", op.id), seen)

            # A change sent to the standby: refused, naming the leader...
            stub = switchyard_pb2_grpc.SwitchyardStub(grpc.insecure_channel(standby.listen))
            with self.assertRaises(grpc.RpcError) as refused:
                stub.Decompose(switchyard_pb2.DecomposeRequest(system="first"), timeout=10)
            self.assertEqual(refused.exception.code(), grpc.StatusCode.UNAVAILABLE)
            self.assertIn(f"send changes to the leader at {leader.listen}", refused.exception.details())
            self.assertEqual(dict(refused.exception.trailing_metadata())["switchyard-leader"], leader.listen)
            # ...which the Python client follows,
            at_standby.wait(at_standby.decompose("first").id)
            self.assertEqual([s.name for s in at_leader.systems()], ["second"])
        # ...and yardctl too.
        result = subprocess.run([YARDCTL, "--plaintext", "--server", standby.listen, "compose", "third", "--gpus", "1"],
                                capture_output=True, text=True, timeout=60)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn(f"is a standby; sending this to the leader at {leader.listen}", result.stderr)
        self.assertIn("succeeded", result.stderr)
        self.assertNotIn("drift:", leader.log())


if __name__ == "__main__":
    unittest.main()
