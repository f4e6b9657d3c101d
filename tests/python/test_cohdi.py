"""Kubernetes through CoHDI, unchanged (issue 64): the requests CoHDI's DRA driver and composable-resource operator
build, replayed against the real yardd's --cohdi-listen over HTTPS, and answered in the shapes their Go types decode.

The requests and shapes come from tests/data/cohdi/clients.json, written from the vendored client sources
(../shared/third-party/cohdi; each entry names the file and lines it reproduces). The operator's provider calls
(AddResource, CheckResource, GetResources, RemoveResource) are transcribed below from
composable-resource-operator/internal/cdi/fti/fm/client.go, so the whole flow runs as the operator would run it:
token, find the machine, attach one GPU of a model, read it back, detach. Neither client can be built here (Go 1.21 and
Kubernetes modules that Debian 12 does not ship); what is checked is what they send and what they decode."""
import base64
import hashlib
import json
import os
import pathlib
import ssl
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid

from harness import YarddTestCase, hash_password, wait_for

GOLDEN = json.loads((pathlib.Path(__file__).resolve().parent.parent / "data" / "cohdi" / "clients.json").read_text())
REQUESTS = {r["name"]: r for r in GOLDEN["requests"]}
SHAPES = {name: s["shape"] for name, s in GOLDEN["shapes"].items()}
MODEL = "H100-SXM5-80GB"  # the simulated fabric's first switch


def conforms(value, shape, where="$"):
    """Raises AssertionError where Go's encoding/json would fail to decode `value` into the type `shape` describes,
    and, stricter than Go, where yardd leaves out a field the clients decode or sends null where their type is no
    pointer ("int?" is one): Go would quietly keep a zero value, which is a wrong answer all the same. Fields the
    shape does not name are ignored."""
    if value is None:
        if isinstance(shape, str) and shape.endswith("?"):
            return
        raise AssertionError(f"{where}: null where the client's type is {shape!r}")
    if isinstance(shape, str):
        kind = shape.rstrip("?")
        ok = {"string": isinstance(value, str), "int": isinstance(value, int) and not isinstance(value, bool),
              "bool": isinstance(value, bool)}[kind]
        if not ok:
            raise AssertionError(f"{where}: {value!r} does not decode into a Go {kind}")
    elif isinstance(shape, list):
        if not isinstance(value, list):
            raise AssertionError(f"{where}: {value!r} is not a list")
        for i, item in enumerate(value):
            conforms(item, shape[0], f"{where}[{i}]")
    else:
        if not isinstance(value, dict):
            raise AssertionError(f"{where}: {value!r} is not an object")
        for field, sub in shape.items():
            if field not in value:
                raise AssertionError(f"{where}.{field}: missing ({value!r})")
            conforms(value[field], sub, f"{where}.{field}")


def fill(text, values):
    for key, value in values.items():
        text = text.replace("{" + key + "}", value)
    return text


def fill_json(doc, values):
    return json.loads(fill(json.dumps(doc), values))


class Client:
    """Sends a golden request as the Go client builds it: the query as url.Values.Encode writes it (keys sorted,
    QueryEscape), a JSON body as json.Marshal writes it (compact, in the struct's field order)."""

    def __init__(self, base, cafile):
        self.base = base
        self.context = ssl.create_default_context(cafile=str(cafile))
        self.token = None

    def send(self, name, values, headers=None):
        golden = REQUESTS[name]
        path = fill(golden["path"], values)
        query = [(k, fill(v, values)) for k, v in golden.get("query", [])]
        url = self.base + path + ("?" + urllib.parse.urlencode(sorted(query), quote_via=urllib.parse.quote_plus) if query else "")
        data = None
        if "raw_body" in golden:
            data = fill(golden["raw_body"], values).encode()
        elif "form" in golden:
            data = urllib.parse.urlencode([(k, fill(v, values)) for k, v in golden["form"]], quote_via=urllib.parse.quote_plus).encode()
        elif "body" in golden:
            body = fill_json(golden["body"], values)
            if name == "sunfish.resize":  # an int64 in Go's struct
                body["Processors"]["Members"][0]["@Redfish.RequestCount"] = int(body["Processors"]["Members"][0]["@Redfish.RequestCount"])
            data = json.dumps(body, separators=(",", ":")).encode()
        request = urllib.request.Request(url, data=data, method=golden["method"])
        for k, v in golden.get("headers", {}).items():
            request.add_header(k, v)
        if self.token and not name.endswith(".token"):
            request.add_header("Authorization", f"Bearer {self.token}")
        for k, v in (headers or {}).items():
            request.add_header(k, v)
        try:
            with urllib.request.urlopen(request, timeout=200, context=self.context) as response:
                body = response.read()
                status = response.status
        except urllib.error.HTTPError as e:
            body = e.read()
            status = e.code
        parsed = json.loads(body) if body else None
        if status < 300 and golden["reply"]:
            conforms(parsed, SHAPES[golden["reply"]], golden["reply"])
        elif status >= 300 and not golden["path"].startswith("/redfish/"):  # Redfish answers errors its own way (Sunfish reads none)
            conforms(parsed, SHAPES["ErrorBody"], "ErrorBody")
        return status, parsed

    def log_in(self, name, values):
        status, body = self.send(name, values)
        if status != 200:
            raise AssertionError(f"{name}: {status} {body}")
        token = body["access_token"]
        parts = token.split(".")
        # token.go:158-170 (operator) and token.go in the DRA driver: three parts, the middle one base64url JSON with exp.
        assert len(parts) == 3, token
        claims = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
        assert claims["exp"] > time.time() + 60, claims
        self.token = token
        return token


class Operator:
    """composable-resource-operator's FM provider (internal/cdi/fti/fm/client.go), transcribed: what it does with
    each answer, so that what yardd answers is judged by the operator's own rules."""

    def __init__(self, client, tenant, machine):
        self.client, self.tenant, self.machine = client, tenant, machine

    def values(self, **more):
        return {"TENANT": self.tenant, "MACHINE": self.machine, **more}

    def machine_data(self):  # getMachineInfo, client.go:466-511
        status, body = self.client.send("operator.machine", self.values())
        if status != 200:
            raise RuntimeError(f"failed to process FM get request: {body['detail']}")
        return body["data"]

    def add_resource(self, model, headers=None):  # AddResource, client.go:100-213
        status, body = self.client.send("operator.attach", self.values(MODEL=model), headers=headers)
        if status != 200:
            raise RuntimeError(f"FM scaleup: code '{body['detail']['code']}', error message: '{body['detail']['message']}'")
        machines = body["data"]["machines"]
        if machines and machines[0]["resources"] and machines[0]["resources"][0]["res_type"] == "gpu":
            resource = machines[0]["resources"][0]
            for spec in resource["res_spec"]["condition"]:
                if spec["column"] == "model" and spec["operator"] == "eq" and spec["value"] == model:
                    if resource["res_op_status"][:1] in ("0", "1"):
                        return resource["res_serial_num"], resource["res_uuid"]
                    raise RuntimeError(f"the FM attached device is in state '{resource['res_op_status']}'")
        raise RuntimeError("can not find the added gpu when using FM to add gpu")

    def check_resource(self, model, device_id):  # CheckResource, client.go:314-359
        for resource in self.machine_data()["machines"][0]["resources"]:
            if resource["res_type"] != "gpu":
                continue
            for c in resource["res_spec"]["condition"]:
                if c["column"] == "model" and c["operator"] == "eq" and c["value"] == model and resource["res_serial_num"] == device_id:
                    if resource["res_op_status"][:1] == "0":
                        return
                    raise RuntimeError(f"the target gpu '{device_id}' has status '{resource['res_op_status']}' in FM")
        raise RuntimeError(f"the target device '{device_id}' cannot be found in CDI system")

    def get_resources(self):  # GetResources, client.go:361-414 (one node)
        out = []
        data = self.machine_data()
        for resource in data["machines"][0]["resources"] if data["machines"] else []:
            if resource["res_type"] == "gpu":
                model = next((c["value"] for c in resource["res_spec"]["condition"] if c["column"] == "model" and c["operator"] == "eq"), "")
                out.append({"model": model, "device_id": resource["res_serial_num"], "cdi_device_id": resource["res_uuid"]})
        return out

    def remove_resource(self, cdi_device_id):  # RemoveResource, client.go:216-312
        if not any(r["res_type"] == "gpu" and r["res_uuid"] == cdi_device_id for r in self.machine_data()["machines"][0]["resources"]):
            return "skipped"
        status, body = self.client.send("operator.detach", self.values(RES_UUID=cdi_device_id))
        if status not in (200, 204):
            raise RuntimeError(f"FM scaledown: {body['detail']}")
        return "removed"


class CohdiTest(YarddTestCase):
    def start(self, quotas=None, redfish=False):
        ids = self.dir / "identities.json"
        people = [{"name": "ops", "role": "operator", "password": hash_password("ops-pw")},
                  {"name": "alice", "role": "tenant", "tenant": "team-a", "password": hash_password("alice-pw")},
                  {"name": "bob", "role": "tenant", "tenant": "team-b", "password": hash_password("bob-pw")},
                  {"name": "watcher", "role": "viewer", "token_sha256": hashlib.sha256(b"watcher-token").hexdigest()}]
        doc = {"identities": people}
        if quotas:
            doc["tenants"] = quotas
        ids.write_text(json.dumps(doc))
        os.chmod(ids, 0o600)
        state = self.dir / "yardd"
        more = ["--redfish-listen", "127.0.0.1:0", "--redfish-http", "--redfish-port-file", str(state / "redfish-port")] if redfish else []
        yardd = self.yardd("--identities", str(ids), "--cohdi-listen", "127.0.0.1:0", "--cohdi-port-file", str(state / "cohdi-port"), *more)
        if redfish:
            wait_for((state / "redfish-port").exists, what="the Redfish port")
            self.redfish = f"http://127.0.0.1:{int((state / 'redfish-port').read_text())}"
        wait_for((state / "cohdi-port").exists, what="the CoHDI API's port")
        self.base = f"https://127.0.0.1:{int((state / 'cohdi-port').read_text())}"
        self.cafile = state / "cohdi-cert.pem"
        return yardd

    def client(self, user, password, how="operator.token"):
        c = Client(self.base, self.cafile)
        c.log_in(how, {"REALM": "switchyard", "USER": user, "PASSWORD": password})
        return c

    def tenants(self, client):
        request = urllib.request.Request(self.base + "/fabric_manager/api/v1/tenants")
        request.add_header("Authorization", f"Bearer {client.token}")
        with urllib.request.urlopen(request, timeout=20, context=client.context) as response:
            return {t["tenant_name"]: t["tenant_uuid"] for t in json.load(response)["data"]["tenants"]}

    def machines(self, client, tenant):
        status, body = client.send("dra.machines", {"TENANT": tenant})
        self.assertEqual(status, 200, body)
        return {m["mach_name"]: m for m in body["data"]["machines"]}

    def test_every_client_request_is_served_in_the_shape_its_client_decodes(self):
        self.start()
        dra = self.client("alice", "alice-pw", how="dra.token")  # the DRA driver's unencoded form body
        alice = self.client("alice", "alice-pw")
        tenant = self.tenants(alice)["team-a"]
        self.assertEqual(self.tenants(alice), {"team-a": tenant}, "a tenant is offered its own tenant only")
        # Identifiers are RFC 9562 version-5 UUIDs of Switchyard's names (ADR 0030), as Python's uuid computes them.
        namespace = uuid.UUID("d5c8db75-5f9b-4a88-97ee-a97725ba06b1")
        self.assertEqual(tenant, str(uuid.uuid5(namespace, "tenant:team-a")))
        machines = self.machines(dra, tenant)
        self.assertEqual(sorted(machines), ["host0", "host1", "host2", "host3"])
        host0 = machines["host0"]["mach_uuid"]
        self.assertEqual(host0, str(uuid.uuid5(namespace, "host:host0")))
        self.assertEqual(machines["host0"]["fabric_id"], 1)
        values = {"TENANT": tenant, "MACHINE": host0, "MODEL": MODEL, "CLUSTER": "00000000-0000-0000-0001-000000000000"}
        status, available = dra.send("dra.available", values)
        self.assertEqual((status, available), (200, {"fabric_id": 1, "reserved_res_num_per_fabric": 8}))
        status, groups = dra.send("dra.nodegroups", values)
        self.assertEqual(status, 200, groups)
        self.assertEqual([g["name"] for g in groups["nodegroups"]], ["default"])
        status, group = dra.send("dra.nodegroup", {**values, "NODEGROUP": groups["nodegroups"][0]["uuid"]})
        self.assertEqual(status, 200, group)
        self.assertIn(host0, group["mach_ids"])
        status, details = dra.send("dra.node-details", values)
        self.assertEqual(status, 200, details)
        specs = {s["selector"]["expression"]["conditions"][0]["value"]: s for s in details["data"]["cluster"]["machine"]["resspecs"]}
        self.assertEqual(sorted(specs), ["A100-SXM4-40GB", MODEL])
        self.assertEqual((specs[MODEL]["min_resspec_count"], details["data"]["cluster"]["cluster_uuid"]), (0, values["CLUSTER"]))

        # The operator's calls, with the shapes checked by Client.send.
        status, machine = alice.send("operator.machine", values)
        self.assertEqual((status, machine["data"]["machines"][0]["resources"]), (200, []))
        status, added = alice.send("operator.attach", values)
        self.assertEqual(status, 200, added)
        resource = added["data"]["machines"][0]["resources"][0]
        self.assertEqual((resource["res_type"], resource["res_op_status"], resource["res_spec"]["condition"][0]["value"]), ("gpu", "0", MODEL))
        self.assertTrue(resource["res_serial_num"].startswith("GPU-"), "the GPU's UUID as nvidia-smi prints it, which the node side matches")
        status, after = dra.send("dra.available", values)
        self.assertEqual(after["reserved_res_num_per_fabric"], 7)
        status, removed = alice.send("operator.detach", {**values, "RES_UUID": resource["res_uuid"]})
        self.assertIn(status, (200, 204), removed)
        status, machine = alice.send("operator.machine", values)
        self.assertEqual(machine["data"]["machines"][0]["resources"], [])

    def test_the_operator_attaches_reads_and_detaches_as_it_would_in_a_cluster(self):
        yardd = self.start()
        alice = self.client("alice", "alice-pw")
        tenant = self.tenants(alice)["team-a"]
        host1 = self.machines(alice, tenant)["host1"]["mach_uuid"]
        operator = Operator(alice, tenant, host1)
        first = operator.add_resource(MODEL)
        second = operator.add_resource(MODEL)
        self.assertNotEqual(first, second)
        for device_id, _ in (first, second):
            operator.check_resource(MODEL, device_id)
        self.assertEqual(sorted(r["cdi_device_id"] for r in operator.get_resources()), sorted([first[1], second[1]]))
        # The system behind the machine is the engine's own: its tenant, label and GPUs are there for yardctl too.
        from harness import YARDCTL
        listed = subprocess.run([YARDCTL, "--plaintext", "--server", yardd.address, "systems", "-o", "json"], capture_output=True, text=True,
                                timeout=60, env={**os.environ, "YARD_TOKEN": "watcher-token"})
        self.assertEqual(listed.returncode, 0, listed.stderr)
        systems = {s["name"]: s for s in json.loads(listed.stdout)["systems"]}
        self.assertEqual((systems["cohdi-host1"]["tenant"], systems["cohdi-host1"]["labels"]["switchyard.io/provider"]), ("team-a", "cohdi"))
        self.assertEqual(len(systems["cohdi-host1"]["bindings"]), 2)
        self.assertEqual(operator.remove_resource(first[1]), "removed")
        with self.assertRaisesRegex(RuntimeError, "cannot be found"):
            operator.check_resource(MODEL, first[0])
        self.assertEqual(operator.remove_resource(first[1]), "skipped", "the operator checks before it removes")
        self.assertEqual(operator.remove_resource(second[1]), "removed")
        self.assertEqual(operator.get_resources(), [])
        # The last GPU decomposed the machine's system: host1 is free again, offered to every tenant.
        bob = self.client("bob", "bob-pw")
        self.assertIn("host1", self.machines(bob, self.tenants(bob)["team-b"]))

    def test_a_tenant_sees_and_changes_only_its_own_machines(self):
        self.start()
        alice, bob, ops = self.client("alice", "alice-pw"), self.client("bob", "bob-pw"), self.client("ops", "ops-pw")
        team_a, team_b = self.tenants(alice)["team-a"], self.tenants(bob)["team-b"]
        host0 = self.machines(alice, team_a)["host0"]["mach_uuid"]
        Operator(alice, team_a, host0).add_resource(MODEL)
        self.assertNotIn("host0", self.machines(bob, team_b), "alice's machine is not offered to bob")
        bobs = Operator(bob, team_b, host0)
        with self.assertRaisesRegex(RuntimeError, "no machine"):
            bobs.machine_data()
        with self.assertRaisesRegex(RuntimeError, "no machine"):
            bobs.add_resource(MODEL)
        status, body = bob.send("dra.machines", {"TENANT": team_a})
        self.assertEqual(status, 403, body)
        self.assertIn("is not the tenant of 'bob'", body["detail"]["message"])
        # An operator acts for any tenant it names.
        self.assertIn("host0", self.machines(ops, team_a))
        self.assertNotIn("host0", self.machines(ops, team_b))
        self.assertEqual(len(Operator(ops, team_a, host0).get_resources()), 1)

    def test_retries_never_attach_twice_and_refusals_attach_nothing(self):
        self.start(quotas={"team-a": {"max_gpus": 3}})
        alice = self.client("alice", "alice-pw")
        tenant = self.tenants(alice)["team-a"]
        host2 = self.machines(alice, tenant)["host2"]["mach_uuid"]
        operator = Operator(alice, tenant, host2)
        # The same Idempotency-Key returns the first attach's device, however often it is sent.
        key = {"Idempotency-Key": "cr-5f1c-add"}
        first = operator.add_resource(MODEL, headers=key)
        for _ in range(3):
            self.assertEqual(operator.add_resource(MODEL, headers=key), first)
        self.assertEqual(len(operator.get_resources()), 1)
        # The quota caps what the DRA driver is told is available, and what is attached.
        status, available = alice.send("dra.available", {"TENANT": tenant, "MACHINE": host2, "MODEL": MODEL})
        self.assertEqual(available["reserved_res_num_per_fabric"], 2)
        operator.add_resource(MODEL)
        operator.add_resource(MODEL)
        with self.assertRaisesRegex(RuntimeError, "RESOURCE_EXHAUSTED.*may hold 3 GPU"):
            operator.add_resource(MODEL)
        with self.assertRaisesRegex(RuntimeError, "no GPU in the pool is a 'B200'"):
            operator.add_resource("B200")
        self.assertEqual(len(operator.get_resources()), 3, "a refused attach attaches nothing")

    def test_errors_say_what_is_wrong_in_the_body_both_clients_parse(self):
        self.start()
        anonymous = Client(self.base, self.cafile)
        status, body = anonymous.send("dra.machines", {"TENANT": "x"})
        self.assertEqual(status, 401)
        self.assertIn("Bearer", body["detail"]["message"])
        status, body = anonymous.send("operator.token", {"REALM": "switchyard", "USER": "alice", "PASSWORD": "wrong"})
        self.assertEqual((status, body["error"]), (401, "invalid_grant"))
        alice = self.client("alice", "alice-pw")
        tenant = self.tenants(alice)["team-a"]
        status, body = alice.send("operator.machine", {"TENANT": tenant, "MACHINE": "00000000-0000-0000-0000-000000000000"})
        self.assertEqual((status, body["detail"]["code"]), (404, "NOT_FOUND"))
        request = urllib.request.Request(self.base + f"/fabric_manager/api/v1/machines/x/update?tenant_uuid={tenant}", data=b"{not json", method="PATCH")
        request.add_header("Authorization", f"Bearer {alice.token}")
        with self.assertRaises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=20, context=alice.context)
        self.assertEqual(refused.exception.code, 400)
        conforms(json.loads(refused.exception.read()), SHAPES["ErrorBody"])
        request = urllib.request.Request(self.base + f"/cluster_manager/cluster_autoscaler/v3/tenants/{tenant}/clusters/c/machines/m/actions/resize",
                                         data=b"{}", method="POST")
        request.add_header("Authorization", f"Bearer {alice.token}")
        with self.assertRaises(urllib.error.HTTPError) as unsupported:
            urllib.request.urlopen(request, timeout=20, context=alice.context)
        self.assertEqual(unsupported.exception.code, 501)
        self.assertIn("fabric-manager backend", json.loads(unsupported.exception.read())["detail"]["message"])

    def test_sunfish_s_patch_resizes_the_node_s_system_once_it_sends_credentials(self):
        """The operator's Sunfish backend: PATCH /redfish/v1/Systems/System with the node in Name and
        @Redfish.RequestCount (sunfish/client.go). As written it sends no credentials, which yardd refuses; with
        them, the count is what the node's system holds."""
        self.start(redfish=True)
        sunfish = Client(self.redfish, self.cafile)
        values = {"NODE": "host3", "MODEL": MODEL, "COUNT": "1"}
        status, body = sunfish.send("sunfish.resize", values)
        self.assertEqual(status, 401, "no change without credentials")
        basic = {"Authorization": "Basic " + base64.b64encode(b"alice:alice-pw").decode()}
        alice = self.client("alice", "alice-pw")
        operator = Operator(alice, self.tenants(alice)["team-a"], self.machines(alice, self.tenants(alice)["team-a"])["host3"]["mach_uuid"])
        for count in (1, 3, 1):
            status, system = sunfish.send("sunfish.resize", {**values, "COUNT": str(count)}, headers=basic)
            self.assertEqual(status, 200, system)
            self.assertEqual(len(operator.get_resources()), count)
        status, _ = sunfish.send("sunfish.resize", values, headers=basic)
        self.assertEqual(status, 200, "the same count again changes nothing")
        status, _ = sunfish.send("sunfish.resize", {**values, "COUNT": "0"}, headers=basic)
        self.assertIn(status, (200, 204))
        self.assertEqual(operator.get_resources(), [])
        # DMTF's spelling, on the composed system's own URL.
        status, _ = sunfish.send("sunfish.resize", {**values, "COUNT": "2"}, headers=basic)
        system_url = next(s["@odata.id"] for s in json.load(urllib.request.urlopen(urllib.request.Request(
            self.redfish + "/redfish/v1/Systems", headers=basic), timeout=20))["Members"] if "sys-" in s["@odata.id"])
        request = urllib.request.Request(self.redfish + system_url, method="PATCH", headers={**basic, "Content-Type": "application/json"},
                                         data=json.dumps({"Processors": {"Members": [{"@Redfish.RequestedCount": 1, "ProcessorType": "GPU"}]}}).encode())
        with urllib.request.urlopen(request, timeout=30) as response:
            self.assertEqual(response.status, 200)
            self.assertEqual(len(json.load(response)["Links"]["ResourceBlocks"]), 2, "the host's block and one GPU's")
        bad = urllib.request.Request(self.redfish + system_url, method="PATCH", headers={**basic, "Content-Type": "application/json"},
                                     data=json.dumps({"AssetTag": "x"}).encode())
        with self.assertRaises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(bad, timeout=30)
        self.assertEqual(refused.exception.code, 400)
