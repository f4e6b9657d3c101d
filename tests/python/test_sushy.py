"""Redfish clients beyond ours. OpenStack's sushy (Ironic's Redfish library, Debian python3-sushy) as the judge of
yardd's Redfish service: it opens every ComputerSystem (physical hosts and composed systems), the Manager that is
yardd, the TaskService and the EventService, and resets a composed system, whose host's BMC (the redfish-emulator
over DMTF's rack-mount mockup, host0's --host-bmc) then shows the new power state. A host without a BMC offers no
Reset, and a reset posted to it anyway is refused with what to configure; tenants reset only their own systems,
never the pool's hosts. Constrained composition of whole machines (drives, NICs, a template) in DMTF's shapes.

Paths come from the environment ctest sets: YARDD, YARDCTL, REDFISH_EMULATOR, SWITCHYARD_SOURCE_DIR."""
import base64
import json
import os
import pathlib
import subprocess
import unittest
import urllib.error
import urllib.request

from harness import SOURCE_DIR, YarddTestCase, hash_password, wait_for, write_fpga_pool
from switchyard_client import Client

EMULATOR = os.environ.get("REDFISH_EMULATOR", "build/tests/redfish-emulator")
RACKMOUNT = SOURCE_DIR.parent / "shared" / "redfish-mockups" / "dmtf-public-rackmount1"
BMC_SYSTEM = "/redfish/v1/Systems/437XR1138R2"
ALICE_TOKEN = "alice-token-0123456789"


def sushy_or_skip():
    try:
        import sushy  # noqa: F401
        return sushy
    except ImportError:
        if os.environ.get("SWITCHYARD_REQUIRE_TOOLS") == "1":
            raise AssertionError("python3-sushy is not installed; run ./setup.sh")
        raise unittest.SkipTest("needs python3-sushy (./setup.sh installs it)")


def http(url, user, password, method="GET", body=None, headers=False, send=None):
    """(status, body), or (status, body, headers) with headers=True; `send`: request headers to add."""
    request = urllib.request.Request(url, method=method, data=None if body is None else json.dumps(body).encode())
    for name, value in (send or {}).items():
        request.add_header(name, value)
    request.add_header("Authorization", "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode())
    if body is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=10) as r:
            answer = (r.status, r.read().decode(), r.headers)
    except urllib.error.HTTPError as e:
        answer = (e.code, e.read().decode(), e.headers)
    return answer if headers else answer[:2]


class SushyTest(YarddTestCase):
    def setUp(self):
        super().setUp()
        self.sushy = sushy_or_skip()
        if not RACKMOUNT.exists():
            self.skipTest(f"no Redfish mockup at {RACKMOUNT}")
        bmc_dir = self.dir / "bmc"
        bmc_dir.mkdir()
        log = open(bmc_dir / "log", "wb")
        self.addCleanup(log.close)
        self.bmc = subprocess.Popen([EMULATOR, "--mockup", str(RACKMOUNT), "--port-file", str(bmc_dir / "port")],
                                    stdout=log, stderr=subprocess.STDOUT)
        self.addCleanup(self.bmc.wait, 10)
        self.addCleanup(self.bmc.terminate)
        wait_for(lambda: (bmc_dir / "port").exists() or self.bmc.poll() is not None, what="the BMC emulator")
        self.assertIsNone(self.bmc.poll(), (bmc_dir / "log").read_text())
        self.bmc_url = f"http://127.0.0.1:{int((bmc_dir / 'port').read_text())}"
        (self.dir / "bmc-password").write_text("switchyard\n")
        ids = self.dir / "identities.json"
        import hashlib
        people = [{"name": "ops", "role": "operator", "password": hash_password("ops-pw")},
                  {"name": "alice", "role": "tenant", "tenant": "team-a", "password": hash_password("alice-pw"),
                   "token_sha256": hashlib.sha256(ALICE_TOKEN.encode()).hexdigest()},
                  {"name": "bob", "role": "tenant", "tenant": "team-b", "password": hash_password("bob-pw")}]
        ids.write_text(json.dumps({"identities": people}))
        os.chmod(ids, 0o600)
        self.yard = self.yardd("--identities", str(ids), "--redfish-listen", "127.0.0.1:0", "--redfish-http",
                               "--redfish-port-file", str(self.dir / "rfport"),
                               "--host-policy", "host0=bmc-reset", "--host-bmc", f"host0={self.bmc_url}",
                               "--host-bmc-user", "admin", "--host-bmc-password-file", str(self.dir / "bmc-password"))
        self.redfish = f"http://127.0.0.1:{int((self.dir / 'rfport').read_text())}"

    def connect(self, user, password):
        return self.sushy.Sushy(self.redfish + "/redfish/v1", username=user, password=password)

    def bmc_power(self):
        return json.loads(http(self.bmc_url + BMC_SYSTEM, "admin", "switchyard")[1])["PowerState"]

    def test_sushy_opens_every_system_and_resets_one_through_its_hosts_bmc(self):
        with Client(self.yard.address, plaintext=True, token=ALICE_TOKEN) as yard:
            yard.wait(yard.compose("cold", 1, host="host0").id)
            yard.wait(yard.compose("warm", 1, host="host1").id)
        self.assertEqual(self.bmc_power(), "On", "composing on a bmc-reset host restarts it through its BMC")

        root = self.connect("ops", "ops-pw")
        systems = {s.identity: s for s in root.get_system_collection().get_members()}
        self.assertEqual(len(systems), 6, sorted(systems))  # four hosts and two composed systems
        for system in systems.values():
            self.assertEqual(system.boot.enabled, self.sushy.BootSourceOverrideEnabled.DISABLED, system.identity)
        cold = next(s for s in systems.values() if s.name == "cold")
        warm = next(s for s in systems.values() if s.name == "warm")
        # What yardd offers; the BMC decides what it takes (PowerCycle: not this one, below).
        self.assertEqual(cold.get_allowed_reset_system_values(), {
            self.sushy.ResetType(v) for v in ("On", "ForceOff", "GracefulShutdown", "GracefulRestart", "ForceRestart", "PowerCycle")})
        with self.assertRaises(self.sushy.exceptions.MissingActionError):
            warm.get_allowed_reset_system_values()  # host1 has no BMC yardd reaches

        # yardd itself, its tasks and events, as the OCP baseline wants them.
        managers = root.get_manager_collection().get_members()
        self.assertEqual([m.identity for m in managers], ["yardd"])
        self.assertEqual(managers[0].manager_type, self.sushy.ManagerType.SERVICE)
        self.assertTrue(root.get_task_service().service_enabled)
        self.assertTrue(root.get_event_service().service_enabled)
        status, body = http(self.redfish + "/redfish/v1/TaskService", "ops", "ops-pw")
        self.assertRegex(json.loads(body)["DateTime"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d")

        # Alice resets her system: yardd passes it to host0's BMC.
        alice = self.connect("alice", "alice-pw")
        mine = alice.get_system(cold.path)
        mine.reset_system(self.sushy.ResetType.FORCE_OFF)
        self.assertEqual(self.bmc_power(), "Off")
        mine.reset_system(self.sushy.ResetType.ON)
        self.assertEqual(self.bmc_power(), "On")
        self.assertIn("host host0: ForceOff through its BMC, as asked over Redfish", self.yard.log())

        # A reset the BMC does not allow comes back as the BMC's refusal.
        status, body = http(self.redfish + cold.path + "/Actions/ComputerSystem.Reset", "alice", "alice-pw", "POST", {"ResetType": "PowerCycle"})
        self.assertEqual(status, 400, body)
        self.assertIn("PowerCycle", body)
        # Where the host has no BMC, what to configure.
        status, body = http(self.redfish + warm.path + "/Actions/ComputerSystem.Reset", "alice", "alice-pw", "POST", {"ResetType": "On"})
        self.assertEqual(status, 400, body)
        self.assertIn("--host-bmc host1=", body)
        # Bob sees no system of Alice's; a tenant resets no pool host; bad bodies change nothing.
        status, body = http(self.redfish + cold.path + "/Actions/ComputerSystem.Reset", "bob", "bob-pw", "POST", {"ResetType": "ForceOff"})
        self.assertEqual(status, 404, body)
        status, body = http(self.redfish + "/redfish/v1/Systems/host0/Actions/ComputerSystem.Reset", "alice", "alice-pw", "POST", {"ResetType": "ForceOff"})
        self.assertEqual(status, 403, body)
        for bad in ({}, {"ResetType": "Explode"}, {"ResetType": "On", "Delay": 5}, {"ResetType": 3}):
            status, body = http(self.redfish + cold.path + "/Actions/ComputerSystem.Reset", "alice", "alice-pw", "POST", bad)
            self.assertEqual(status, 400, (bad, body))
        self.assertEqual(self.bmc_power(), "On")
        # The operator resets the pool's host itself.
        root.get_system("/redfish/v1/Systems/host0").reset_system(self.sushy.ResetType.GRACEFUL_SHUTDOWN)
        self.assertEqual(self.bmc_power(), "Off")

    def compose_over_redfish(self, body):
        """POST /Systems as ops, then the task monitor until it ends: the composed system's resource."""
        status, text, headers = http(self.redfish + "/redfish/v1/Systems", "ops", "ops-pw", "POST", body, headers=True)
        self.assertEqual(status, 202, text)
        monitor = headers["Location"]
        status = wait_for(lambda: (lambda r: r if r[0] != 202 else None)(http(self.redfish + monitor, "ops", "ops-pw")), what="the task")
        self.assertIn(status[0], (200, 201), status[1])
        systems = json.loads(http(self.redfish + "/redfish/v1/Systems", "ops", "ops-pw")[1])["Members"]
        for ref in systems:
            system = json.loads(http(self.redfish + ref["@odata.id"], "ops", "ops-pw")[1])
            if system.get("Name") == body["Name"]:
                return system
        self.fail(f"no system {body['Name']} in {systems}")

    def block_types(self, system):
        types = {}
        for ref in system["Links"]["ResourceBlocks"]:
            block = json.loads(http(self.redfish + ref["@odata.id"], "ops", "ops-pw")[1])
            for t in block["ResourceBlockType"]:
                types[t] = types.get(t, 0) + 1
        return types

    def test_constrained_composition_asks_for_drives_nics_and_a_template(self):
        """Storage and NetworkInterfaces in a constrained compose (DMTF's constrained-composition shapes), the NICs
        under the GPUs' switch (Oem.Switchyard.Affinity); a template by name; malformed requirements refused whole."""
        machine = self.compose_over_redfish({
            "Name": "train", "Processors": {"Members": [{"@Redfish.RequestedCount": 2, "ProcessorType": "GPU"}]},
            "Storage": {"Members": [{"Drives": [{"@Redfish.RequestedCount": 2, "CapacityBytes": 2 * 1024 ** 4}]}]},
            "NetworkInterfaces": {"Members": [{"@Redfish.RequestedCount": 1, "Model": "ConnectX-7"}]},
            "Oem": {"Switchyard": {"Affinity": {"nic": "switch"}}}})
        self.assertEqual(self.block_types(machine), {"ComputerSystem": 1, "Processor": 2, "Storage": 2, "Network": 1})
        blocks = [ref["@odata.id"].rsplit("/", 1)[1] for ref in machine["Links"]["ResourceBlocks"]]
        gpu_switches = {b.split("-")[0] for b in blocks if "-gpu" in b}
        nic_switches = {b.split("-")[0] for b in blocks if "-nic" in b}
        self.assertTrue(nic_switches <= gpu_switches, blocks)
        self.connect("ops", "ops-pw").get_system(machine["@odata.id"])  # sushy opens it too

        # The composition capabilities name the templates a client may offer (composition hints).
        capabilities = json.loads(http(self.redfish + "/redfish/v1/Systems/Capabilities", "ops", "ops-pw")[1])
        hints = capabilities["Oem"]["Switchyard"]
        self.assertEqual(sorted(hints["Template@Redfish.AllowableValues"]), ["infer-1x", "storage-2x", "train-8x"])
        self.assertTrue(hints["Template@Redfish.OptionalOnCreate"])
        served = self.compose_over_redfish({"Name": "serve", "Oem": {"Switchyard": {"Template": "infer-1x"}}})
        self.assertEqual(self.block_types(served), {"ComputerSystem": 1, "Processor": 1, "Network": 1})

        before = json.loads(http(self.redfish + "/redfish/v1/Systems", "ops", "ops-pw")[1])["Members@odata.count"]
        for bad, says in (
                ({"Storage": {"Members": [{"Drives": [{"@Redfish.RequestedCount": 0}]}]}}, "out of range"),
                ({"Storage": {"Members": [{"Drives": [{"Protocol": "NVMe"}]}]}}, "Protocol cannot be asked for"),
                ({"Storage": {"Members": []}}, "Storage.Members must be"),
                ({"NetworkInterfaces": {"Members": [{"@Redfish.RequestedCount": "two"}]}}, "whole number"),
                ({"Processors": {"Members": [{"@Redfish.RequestedCount": 1}]}, "Oem": {"Switchyard": {"Affinity": {"nic": "switch"}}}}, "asks for no nic"),
                ({"NetworkInterfaces": {"Members": [{}]}, "Oem": {"Switchyard": {"Affinity": {"nic": "rack"}}}}, "switch or domain"),
                ({"Memory": {"Members": [{"@Redfish.RequestedCount": 2}]}}, "CapacityMiB is required"),
                ({"EthernetInterfaces": {"Members": [{}]}}, "EthernetInterfaces is unknown")):
            status, body = http(self.redfish + "/redfish/v1/Systems", "ops", "ops-pw", "POST", {"Name": "bad", **bad})
            self.assertEqual(status, 400, (bad, body))
            self.assertIn(says, body, bad)
        self.assertEqual(json.loads(http(self.redfish + "/redfish/v1/Systems", "ops", "ops-pw")[1])["Members@odata.count"], before)

    def test_constrained_composition_asks_for_other_classes(self):
        """Issue 62: devices of other classes over Redfish: an FPGA as Processors' ProcessorType FPGA, any class by name in
        Oem.Switchyard.Endpoints (with its affinity); a processor type with no class here, or a class that has its own
        property, refused whole."""
        pool = write_fpga_pool(self.dir / "fpga-pool.json")
        other = self.yardd("--topology", str(pool), "--identities", str(self.dir / "identities.json"), "--redfish-listen", "127.0.0.1:0", "--redfish-http",
                           "--redfish-port-file", str(self.dir / "rfport2"), name="fpga")
        self.redfish = f"http://127.0.0.1:{int((self.dir / 'rfport2').read_text())}"
        for bad, says in (
                ({"Processors": {"Members": [{"@Redfish.RequestedCount": 1, "ProcessorType": "CPU"}]}}, "this service composes GPU, FPGA, DSP and Accelerator"),
                ({"Processors": {"Members": [{"@Redfish.RequestedCount": 1}, {"@Redfish.RequestedCount": 2}]}}, "one requirement of ProcessorType GPU"),
                ({"Oem": {"Switchyard": {"Endpoints": {"nic": 1}}}}, "not another device class"),
                ({"Oem": {"Switchyard": {"Endpoints": {"dpu": 0}}}}, "out of range"),
                ({"Oem": {"Switchyard": {"Endpoints": {"dpu": 1}, "Affinity": {"fpga": "switch"}}}}, "asks for no fpga")):
            status, body = http(self.redfish + "/redfish/v1/Systems", "ops", "ops-pw", "POST", {"Name": "bad", **bad})
            self.assertEqual(status, 400, (bad, body))
            self.assertIn(says, body, bad)
        machine = self.compose_over_redfish({
            "Name": "infer", "Processors": {"Members": [{"@Redfish.RequestedCount": 1, "ProcessorType": "GPU"},
                                                        {"@Redfish.RequestedCount": 1, "ProcessorType": "FPGA", "Model": "Alveo U55C"}]},
            "Oem": {"Switchyard": {"Endpoints": {"dpu": 1}, "Affinity": {"dpu": "switch", "fpga": "switch"}}}})
        blocks = sorted(ref["@odata.id"].rsplit("/", 1)[1] for ref in machine["Links"]["ResourceBlocks"])
        self.assertEqual(blocks, ["host0", "sw0-dpu0", "sw0-fpga0", "sw0-gpu0"])
        self.assertEqual(self.block_types(machine), {"ComputerSystem": 1, "Processor": 1, "Expansion": 2})
        self.assertIsNotNone(other)

    def test_pooled_memory_composes_as_memory_blocks_constrained_and_specific(self):
        """Pooled CXL memory over Redfish (issue 60): the embedded pool's logical devices are Memory resource blocks,
        each naming a Memory resource with its capacity; a constrained compose asks for Memory by CapacityMiB and a
        specific one names a memory block; the composed system's MemorySummary adds its pooled memory to its host's,
        and sushy reads it."""
        blocks = json.loads(http(self.redfish + "/redfish/v1/CompositionService/ResourceBlocks", "ops", "ops-pw")[1])["Members"]
        memory_blocks = [b["@odata.id"] for b in blocks if "-mem0-ld" in b["@odata.id"]]
        self.assertEqual(len(memory_blocks), 8, "4 LDs of 64 GiB under each of the embedded pool's two switches")
        block = json.loads(http(self.redfish + memory_blocks[0], "ops", "ops-pw")[1])
        self.assertEqual(block["ResourceBlockType"], ["Memory"])
        part = json.loads(http(self.redfish + block["Memory"][0]["@odata.id"], "ops", "ops-pw")[1])
        self.assertEqual((part["@odata.type"], part["CapacityMiB"], part["MemoryType"]), ("#Memory.v1_23_0.Memory", 65536, "DRAM"))
        gpu = json.loads(http(self.redfish + "/redfish/v1/CompositionService/ResourceBlocks/sw0-gpu0", "ops", "ops-pw")[1])
        processor = json.loads(http(self.redfish + gpu["Processors"][0]["@odata.id"], "ops", "ops-pw")[1])
        self.assertEqual(processor["ProcessorType"], "GPU")
        self.assertEqual(http(self.redfish + block["@odata.id"] + "/Processors/" + block["Id"], "ops", "ops-pw")[0], 404,
                         "a memory block holds no processor")

        machine = self.compose_over_redfish({"Name": "big-memory", "Processors": {"Members": [{"@Redfish.RequestedCount": 1, "ProcessorType": "GPU"}]},
                                             "Memory": {"Members": [{"CapacityMiB": 100 * 1024}]}})
        self.assertEqual(self.block_types(machine), {"ComputerSystem": 1, "Processor": 1, "Memory": 2}, "100 GiB takes two 64 GiB LDs")
        host_memory = json.loads(http(self.redfish + "/redfish/v1/Systems/" + machine["Links"]["ResourceBlocks"][0]["@odata.id"].rsplit("/", 1)[1],
                                      "ops", "ops-pw")[1])["MemorySummary"]["TotalSystemMemoryGiB"]
        self.assertEqual(machine["MemorySummary"]["TotalSystemMemoryGiB"], host_memory + 128)
        self.assertEqual(self.connect("ops", "ops-pw").get_system(machine["@odata.id"]).memory_summary.size_gib, host_memory + 128)

        free = [b for b in memory_blocks
                if json.loads(http(self.redfish + b, "ops", "ops-pw")[1])["CompositionStatus"]["CompositionState"] == "Unused"]
        host = json.loads(http(self.redfish + "/redfish/v1/CompositionService/FreePool", "ops", "ops-pw")[1])["Members"]
        host = [h["@odata.id"] for h in host if h["@odata.id"].rsplit("/", 1)[1].startswith("host")][0]
        specific = self.compose_over_redfish({"Name": "named-memory", "Links": {"ResourceBlocks": [{"@odata.id": host}, {"@odata.id": free[0]}]}})
        self.assertEqual(self.block_types(specific), {"ComputerSystem": 1, "Memory": 1})
        self.assertEqual(specific["MemorySummary"]["TotalSystemMemoryGiB"],
                         json.loads(http(self.redfish + "/redfish/v1/Systems/" + host.rsplit("/", 1)[1], "ops", "ops-pw")[1])["MemorySummary"]["TotalSystemMemoryGiB"] + 64)

        # Every read of a system with pooled memory agrees, the If-Match check included: a DELETE with the ETag a GET
        # gave is not stale.
        _, _, read = http(self.redfish + machine["@odata.id"], "ops", "ops-pw", headers=True)
        status, text = http(self.redfish + machine["@odata.id"], "ops", "ops-pw", "DELETE", send={"If-Match": read["ETag"]})
        self.assertEqual(status, 202, text)


if __name__ == "__main__":
    unittest.main()
