"""The composable-resource provider semantics (docs/kubernetes.md), with this test playing the Kubernetes
operator's part as CoHDI's composable-resource-operator does: AddResource until DONE (requeueing while
WORKING), CheckResource while Online, RemoveResource until DONE, GetResources to sync."""
import unittest

import grpc

from harness import YarddTestCase, wait_for
from switchyard_client import Client, ResourceStatus


def until_settled(call, timeout=20.0):
    """Calls again while the provider says WORKING, as the operator's reconcile loop requeues."""
    statuses = []

    def settled():
        statuses.append(call())
        return statuses[-1].state != ResourceStatus.WORKING

    wait_for(settled, timeout=timeout, interval=0.05, what="the provider to settle")
    return statuses[-1], statuses


class KubernetesProviderTest(YarddTestCase):
    def test_the_operator_flow_attach_check_list_and_remove(self):
        yardd = self.yardd()
        with Client(yardd.address, plaintext=True, caller="composable-resource-operator") as yard:
            first = yard.add_resource("uid-1", "host0", model="H100-SXM5-80GB")
            self.assertEqual(first.state, ResourceStatus.WORKING, first.message)
            self.assertTrue(first.operation_id)
            added, _ = until_settled(lambda: yard.add_resource("uid-1", "host0", model="H100-SXM5-80GB"))
            self.assertEqual(added.state, ResourceStatus.DONE, added.message)
            self.assertRegex(added.device_uuid, r"^GPU-[0-9a-f-]{36}$", "the UUID as nvidia-smi -L prints it")
            self.assertTrue(added.pci_address)
            self.assertEqual(added.model, "H100-SXM5-80GB")
            self.assertEqual(added.operation_id, first.operation_id, "retries report the same operation")

            # Calling again (the operator requeues, or restarts) never attaches a second GPU.
            for _ in range(3):
                again = yard.add_resource("uid-1", "host0", model="H100-SXM5-80GB")
                self.assertEqual((again.state, again.device_uuid), (ResourceStatus.DONE, added.device_uuid))
            self.assertEqual(len(yard.get_resources("host0")), 1)
            elsewhere = yard.add_resource("uid-1", "host1")
            self.assertEqual((elsewhere.node, elsewhere.device_uuid), ("host0", added.device_uuid),
                             "a request id answers with what it did, wherever the retry says")
            self.assertEqual(yard.get_resources("host1"), [])

            # A second resource on the same node attaches to the node's system.
            second, _ = until_settled(lambda: yard.add_resource("uid-2", "host0"))
            self.assertEqual(second.state, ResourceStatus.DONE, second.message)
            self.assertNotEqual(second.device_uuid, added.device_uuid)
            listed = yard.get_resources("host0")
            self.assertEqual(sorted(r.device_uuid for r in listed), sorted([added.device_uuid, second.device_uuid]))
            self.assertTrue(all(r.node == "host0" and r.pci_address and r.health == "ok" for r in listed))
            self.assertEqual(yard.get_resources("host1"), [])

            healthy = yard.check_resource("host0", device_uuid=added.device_uuid)
            self.assertEqual(healthy.state, ResourceStatus.DONE, healthy.message)
            by_request = yard.check_resource("host0", request_id="uid-2")
            self.assertEqual((by_request.state, by_request.device_uuid), (ResourceStatus.DONE, second.device_uuid))
            elsewhere = yard.check_resource("host1", device_uuid=added.device_uuid)
            self.assertEqual(elsewhere.state, ResourceStatus.FAILED)

            # Removal: the first of two detaches; then the last one decomposes the node's system.
            removed, _ = until_settled(lambda: yard.remove_resource("rm-1", "host0", device_uuid=added.device_uuid))
            self.assertEqual(removed.state, ResourceStatus.DONE, removed.message)
            self.assertEqual(removed.device_uuid, added.device_uuid)
            self.assertEqual([r.device_uuid for r in yard.get_resources("host0")], [second.device_uuid])
            repeat = yard.remove_resource("rm-1", "host0", device_uuid=added.device_uuid)
            self.assertEqual(repeat.state, ResourceStatus.DONE)
            gone = yard.remove_resource("rm-1b", "host0", device_uuid=added.device_uuid)
            self.assertEqual(gone.state, ResourceStatus.DONE, "removing what is gone already is done, not an error")
            self.assertIn("not attached", gone.message)
            last, _ = until_settled(lambda: yard.remove_resource("rm-2", "host0", device_uuid=second.device_uuid))
            self.assertEqual(last.state, ResourceStatus.DONE, last.message)
            self.assertEqual(yard.get_resources(), [])
            self.assertEqual([s.name for s in yard.systems() if s.host_id == "host0" and s.state == 2], [])  # none COMPOSED

    def test_drives_and_nics_are_resources_too(self):
        """Whole machines (issue 62): AddResource of type nvme or nic attaches one such device, alone or beside GPUs;
        RemoveResource takes it back by device id; an unknown type is refused, naming the ones there are."""
        yardd = self.yardd()
        with Client(yardd.address, plaintext=True, caller="composable-resource-operator") as yard:
            drive, _ = until_settled(lambda: yard.add_resource("d-1", "host2", type="nvme"))
            self.assertEqual(drive.state, ResourceStatus.DONE, drive.message)
            self.assertIn("-nvme", drive.device_id)
            nic, _ = until_settled(lambda: yard.add_resource("n-1", "host2", type="nic", model="ConnectX-7"))
            self.assertEqual(nic.state, ResourceStatus.DONE, nic.message)
            self.assertEqual(nic.model, "ConnectX-7")
            gpu, _ = until_settled(lambda: yard.add_resource("g-1", "host2"))
            self.assertEqual(gpu.state, ResourceStatus.DONE, gpu.message)
            system = next(s for s in yard.systems() if s.host_id == "host2" and s.state == 2)  # SYSTEM_STATE_COMPOSED
            self.assertEqual(sorted(b.kind for b in system.bindings), ["gpu", "nic", "nvme"])
            with self.assertRaises(grpc.RpcError) as refused:
                yard.add_resource("x-1", "host2", type="FPGA!")
            self.assertIn("gpu, nvme, nic or another class's name", refused.exception.details())
            # Another class by name is a type too; the embedded pool has none of this one.
            with self.assertRaises(grpc.RpcError) as none:
                yard.add_resource("x-2", "host2", type="fpga")
            self.assertIn("1 fpga(s)", none.exception.details())
            removed, _ = until_settled(lambda: yard.remove_resource("rm-d", "host2", device_id=drive.device_id))
            self.assertEqual(removed.state, ResourceStatus.DONE, removed.message)
            system = next(s for s in yard.systems() if s.host_id == "host2" and s.state == 2)  # SYSTEM_STATE_COMPOSED
            self.assertEqual(sorted(b.kind for b in system.bindings), ["gpu", "nic"])

    def test_a_busy_node_says_working_and_starts_nothing(self):
        yardd = self.yardd("--sim-latency-ms", "300")
        with Client(yardd.address, plaintext=True) as yard:
            first = yard.add_resource("a", "host1")
            self.assertEqual(first.state, ResourceStatus.WORKING)
            busy = yard.add_resource("b", "host1")
            self.assertEqual(busy.state, ResourceStatus.WORKING)
            self.assertIn("nothing was started", busy.message)
            self.assertEqual(busy.operation_id, first.operation_id)
            until_settled(lambda: yard.add_resource("a", "host1"))
            second, _ = until_settled(lambda: yard.add_resource("b", "host1"))
            self.assertEqual(second.state, ResourceStatus.DONE, second.message)
            self.assertEqual(len(yard.get_resources("host1")), 2)

    def test_failures_are_reported_not_retried_behind_the_operators_back(self):
        yardd = self.yardd("--sim-fail-next", "1")
        with Client(yardd.address, plaintext=True) as yard:
            failed, _ = until_settled(lambda: yard.add_resource("doomed", "host2"))
            self.assertEqual(failed.state, ResourceStatus.FAILED)
            self.assertIn("injected fault", failed.message)
            self.assertEqual(yard.get_resources("host2"), [])
            retried, _ = until_settled(lambda: yard.add_resource("doomed-retry", "host2"))
            self.assertEqual(retried.state, ResourceStatus.DONE, "a new request id is a new attempt")
            with self.assertRaises(grpc.RpcError) as bad:
                yard.add_resource("", "host2")
            self.assertEqual(bad.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
            with self.assertRaises(grpc.RpcError) as no_fit:
                yard.add_resource("x", "host3", model="no-such-gpu")
            # A model the pool lacks can never fit: a bad argument naming the pool's models, not "try again later".
            self.assertEqual(no_fit.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
            self.assertIn("the pool has: A100-SXM4-40GB, H100-SXM5-80GB", no_fit.exception.details())


if __name__ == "__main__":
    unittest.main()
