#!/usr/bin/env python3
"""Checks yardd's Redfish service as real clients see it.

Starts yardd (simulated fabric, temp state) with the Redfish service on https://127.0.0.1:0 (the
self-signed certificate it makes at first start, pinned by the client) and three accounts
(Administrator, Operator, ReadOnly), then:
  1. as each role, crawls every resource reachable from /redfish/v1 and validates each payload against
     the DMTF 2025.4 JSON Schemas in ../shared (python3-jsonschema), error bodies against redfish-error;
  2. checks protocol rules: OData-Version on every response, 401 without credentials, 405 with Allow,
     412 on a stale If-Match, 501 for unsupported query options, 400 for malformed or unknown input;
  3. has DMTF's redfishtool (Debian package) list systems, read the CompositionService and compose and
     decompose a system.
Usage: redfish_conformance.py YARDD SHARED_DIR   (exit 0 when everything holds; 77 when a tool is missing)
"""
import base64
import hashlib
import warnings
import json
import os
import ssl
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

FAILURES = []


def password_hash(password, iterations=1000):
    """The identities file's password form (yardd --hash-password), with few iterations: a test's accounts."""
    salt = os.urandom(16)
    digest = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, iterations)
    return f"pbkdf2-sha256${iterations}${salt.hex()}${digest.hex()}"


def check(condition, what):
    if not condition:
        FAILURES.append(what)
        print(f"FAIL {what}")


TLS = None  # an ssl.SSLContext trusting the service's certificate, once it exists


def request(port, method, path, user=None, body=None, headers=None):
    req = urllib.request.Request(f"https://127.0.0.1:{port}{path}", method=method)
    if user:
        req.add_header("Authorization", "Basic " + base64.b64encode(f"{user[0]}:{user[1]}".encode()).decode())
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    data = None
    if body is not None:
        data = (body if isinstance(body, str) else json.dumps(body)).encode()
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, data=data, timeout=10, context=TLS) as r:
            raw = r.read()
            return r.status, dict(r.headers), json.loads(raw) if raw and "json" in r.headers.get("Content-Type", "") else raw
    except urllib.error.HTTPError as e:
        raw = e.read()
        try:
            payload = json.loads(raw) if raw else None
        except ValueError:
            payload = raw
        return e.code, dict(e.headers), payload


class Schemas:
    def __init__(self, folder):
        import jsonschema  # python3-jsonschema
        self.jsonschema = jsonschema
        self.folder = pathlib.Path(folder)
        self.unresolved = set()
        self.store = {}
        for f in self.folder.glob("*.json"):
            doc = json.loads(f.read_text())
            self.store[f"http://redfish.dmtf.org/schemas/v1/{f.name}"] = doc
            if "$id" in doc:
                self.store[doc["$id"]] = doc
        self.store.setdefault("http://redfish.dmtf.org/schemas/v1/odata-v4.json", json.loads((self.folder / "odata-v4.json").read_text()))

    def validate(self, payload, schema_file, definition):
        name = f"http://redfish.dmtf.org/schemas/v1/{schema_file}"
        if name not in self.store:
            return f"no schema {schema_file} in the subset"
        schema = {"$ref": f"{name}#/definitions/{definition}"}
        resolver = self.jsonschema.RefResolver(base_uri=name, referrer=self.store[name], store=self.store,
                                               handlers={"http": self.offline, "https": self.offline})
        validator = self.jsonschema.Draft7Validator(schema, resolver=resolver)
        errors = sorted(validator.iter_errors(payload), key=lambda e: list(e.path))
        return "; ".join(f"{'/'.join(map(str, e.path))}: {e.message}" for e in errors[:3]) or None

    def offline(self, url):
        """Nothing is fetched: a schema the subset lacks is replaced by the newest version of its namespace
        the subset has, or by no constraint at all (noted once)."""
        name = url.rsplit("/", 1)[-1].split("#")[0]
        namespace = name.split(".")[0]
        candidates = sorted(self.folder.glob(f"{namespace}.v*.json")) or sorted(self.folder.glob(f"{namespace}.json"))
        if candidates:
            return json.loads(candidates[-1].read_text())
        if name not in self.unresolved:
            self.unresolved.add(name)
        return {}

    def definition(self, ref, base):
        """The schema a $ref names (resolved against the file it is in), and that file's URI."""
        uri, _, pointer = ref.partition("#")
        uri = uri or base
        doc = self.store.get(uri)
        if doc is None:
            doc = self.offline(uri)
            if not doc:
                return None, uri
            uri = doc.get("$id", uri)
        node = doc
        for part in pointer.strip("/").split("/") if pointer.strip("/") else []:
            node = node.get(part, {}) if isinstance(node, dict) else {}
        return node, uri

    @staticmethod
    def refs_of(node):
        """The $refs a schema node points at: its own, or those of its anyOf alternatives."""
        if "$ref" in node:
            return [node["$ref"]]
        return [a["$ref"] for a in node.get("anyOf", []) if isinstance(a, dict) and "$ref" in a]

    def deprecated(self, payload, ref, base, path="", depth=0):
        """Every property in a payload that its schema marks deprecated (what DMTF's validator warns about)."""
        node, base = self.definition(ref, base)
        if not isinstance(node, dict) or depth > 16:
            return []
        found = []
        for r in self.refs_of(node):
            found += self.deprecated(payload, r, base, path, depth + 1)
        if not isinstance(payload, dict):
            return found
        for key, value in payload.items():
            prop = node.get("properties", {}).get(key)
            if not isinstance(prop, dict):
                continue
            if prop.get("deprecated"):
                found.append(f"{path}/{key}")
            if isinstance(value, dict):
                for r in self.refs_of(prop):
                    found += self.deprecated(value, r, base, f"{path}/{key}", depth + 1)
            elif isinstance(value, list) and isinstance(prop.get("items"), dict):
                for r in self.refs_of(prop["items"]):
                    for i, item in enumerate(value):
                        found += self.deprecated(item, r, base, f"{path}/{key}[{i}]", depth + 1)
        return found

    def deprecated_in_resource(self, payload):
        odata_type = payload.get("@odata.type", "")
        if not odata_type.startswith("#"):
            return []
        namespace, _, definition = odata_type[1:].rpartition(".")
        base = f"http://redfish.dmtf.org/schemas/v1/{namespace}.json"
        return self.deprecated(payload, f"{base}#/definitions/{definition}", base)

    def validate_resource(self, payload):
        odata_type = payload.get("@odata.type", "")
        if not odata_type.startswith("#"):
            return "no @odata.type"
        namespace, _, definition = odata_type[1:].rpartition(".")
        return self.validate(payload, namespace + ".json", definition)


def crawl(port, user, schemas, label):
    seen, queue = set(), ["/redfish/v1"]
    while queue:
        path = queue.pop()
        if path in seen or "TaskMonitors" in path:
            continue
        seen.add(path)
        status, headers, body = request(port, "GET", path, user)
        check(headers.get("OData-Version") == "4.0", f"{label} GET {path}: OData-Version header")
        check(status == 200, f"{label} GET {path}: status {status}")
        if status != 200 or not isinstance(body, dict):
            continue
        check("ETag" in headers, f"{label} GET {path}: ETag header")
        problem = schemas.validate_resource(body)
        check(problem is None, f"{label} GET {path}: schema: {problem}")
        # DSP0266: a Link header with rel=describedby naming the JSON Schema of the version the resource claims.
        namespace = body.get("@odata.type", "#.").lstrip("#").rpartition(".")[0]
        check(headers.get("Link") == f"<http://redfish.dmtf.org/schemas/v1/{namespace}.json>; rel=describedby",
              f"{label} GET {path}: Link describedby ({headers.get('Link')})")
        deprecated = schemas.deprecated_in_resource(body)
        check(not deprecated, f"{label} GET {path}: deprecated properties {deprecated}")

        def walk(node):
            if isinstance(node, dict):
                for k, v in node.items():
                    if k == "@odata.id" and isinstance(v, str) and v.startswith("/redfish/v1") and "#" not in v:
                        queue.append(v.rstrip("/"))
                    else:
                        walk(v)
            elif isinstance(node, list):
                for v in node:
                    walk(v)

        walk(body)
    return seen


def wait_task(port, user, monitor):
    for _ in range(200):
        status, headers, body = request(port, "GET", monitor, user)
        if status != 202:
            return status, headers, body
        time.sleep(0.05)
    return 0, {}, None


def main():
    warnings.simplefilter("ignore", DeprecationWarning)
    yardd, shared = sys.argv[1], pathlib.Path(sys.argv[2])
    schema_dir = shared / "redfish-mockups" / "dmtf-schema-2025.4" / "json-schema-subset"
    if not schema_dir.exists():
        print(f"SKIP: no DMTF schemas at {schema_dir}")
        return 77
    try:
        schemas = Schemas(schema_dir)
    except ImportError:
        print("SKIP: python3-jsonschema is not installed (./setup.sh installs it)")
        return 77
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="redfish-conformance-"))
    accounts = {"Administrator": ("root", "r00t-pw"), "Operator": ("ops", "0ps-pw"), "ReadOnly": ("watcher", "w4tch-pw")}
    engine_roles = {"Administrator": "admin", "Operator": "operator", "ReadOnly": "viewer"}
    (tmp / "identities.json").write_text(json.dumps({"identities": [
        {"name": u, "role": engine_roles[role], "password": password_hash(p)} for role, (u, p) in accounts.items()]}))
    os.chmod(tmp / "identities.json", 0o600)
    log = open(tmp / "yardd.log", "w")
    global TLS
    proc = subprocess.Popen([yardd, "--listen", "127.0.0.1:0", "--state-dir", str(tmp), "--redfish-listen", "127.0.0.1:0",
                             "--identities", str(tmp / "identities.json"), "--plaintext", "--redfish-port-file", str(tmp / "rfport")],
                            stdout=log, stderr=subprocess.STDOUT)
    try:
        for _ in range(500):
            if (tmp / "rfport").exists():
                break
            if proc.poll() is not None:
                print((tmp / "yardd.log").read_text())
                return 1
            time.sleep(0.02)
        port = int((tmp / "rfport").read_text())
        # HTTPS with the certificate yardd made at first start, pinned: hostname and chain are checked.
        TLS = ssl.create_default_context(cafile=str(tmp / "redfish-cert.pem"))
        admin, operator, viewer = accounts["Administrator"], accounts["Operator"], accounts["ReadOnly"]

        # Events: a ReadOnly client follows the server-sent event stream while an Operator composes.
        import threading
        frames = []

        def follow(last_event_id=None, until=lambda f: False, into=frames):
            req = urllib.request.Request(f"https://127.0.0.1:{port}/redfish/v1/EventService/SSE")
            req.add_header("Authorization", "Basic " + base64.b64encode(f"{viewer[0]}:{viewer[1]}".encode()).decode())
            if last_event_id is not None:
                req.add_header("Last-Event-ID", str(last_event_id))
            with urllib.request.urlopen(req, timeout=10, context=TLS) as r:
                check(r.headers.get("Content-Type") == "text/event-stream", "the SSE stream is text/event-stream")
                frame = {}
                for raw in r:
                    line = raw.decode().rstrip("\n")
                    if not line:
                        into.append(frame)
                        if until(frame):
                            return
                        frame = {}
                    elif ":" in line:
                        key, _, value = line.partition(": ")
                        frame[key] = value

        composed_event = lambda f: "ResourceCreated" in f.get("data", "")
        reader = threading.Thread(target=follow, kwargs={"until": composed_event})
        reader.start()
        time.sleep(0.3)

        # 1. Every reachable resource validates, for every role; and a composed system does too.
        status, headers, task = request(port, "POST", "/redfish/v1/Systems", operator,
                                        {"Name": "conf-1", "Processors": {"Members": [{"@Redfish.RequestedCount": 2, "ProcessorType": "GPU"}]}})
        check(status == 202 and headers.get("Location", "").startswith("/redfish/v1/TaskService/TaskMonitors/"), f"constrained compose: {status} {task}")
        problem = schemas.validate_resource(task) if isinstance(task, dict) else "no body"
        check(problem is None, f"compose task body: schema: {problem}")
        status, headers, system = wait_task(port, operator, headers.get("Location", ""))
        check(status == 201 and headers.get("Location", "").startswith("/redfish/v1/Systems/sys-"), f"task monitor after compose: {status}")
        # The binding shows in the fabric: a zone of the system's host initiator and its two devices.
        composed_id = headers.get("Location", "").rsplit("/", 1)[-1]
        _, _, fabrics = request(port, "GET", "/redfish/v1/Fabrics", admin)
        zone = None
        for f in fabrics.get("Members", []):
            status, _, z = request(port, "GET", f["@odata.id"] + "/Zones/" + composed_id, admin)
            if status == 200:
                zone = z
        check(zone is not None and len(zone["Links"]["Endpoints"]) == 3, f"the fabric shows the system's zone (host + 2 devices): {zone}")
        reader.join(timeout=15)
        check(not reader.is_alive() and frames and composed_event(frames[-1]), f"the compose was pushed on the event stream ({len(frames)} frames)")
        for f in frames:
            event = json.loads(f["data"])
            problem = schemas.validate_resource(event)
            check(problem is None, f"SSE event {f.get('id')}: schema: {problem}")
            check(f.get("id") == event["Id"], "the SSE id is the event's Id")
            # EventType is deprecated (Event v1.3) but still required by the 2025.4 schema: the one exception.
            deprecated = [d for d in schemas.deprecated_in_resource(event) if not d.endswith("/EventType")]
            check(not deprecated, f"SSE event {f.get('id')}: deprecated properties {deprecated}")
        check(any(json.loads(f["data"])["Events"][0]["Oem"]["Switchyard"]["Actor"] == "ops" for f in frames),
              "events name the Redfish account that asked as their actor")
        # The OEM extension has its own schemas, served beside $metadata: every event's Oem.Switchyard
        # validates against the JSON Schema; the CSDL is well-formed and $metadata references it.
        status, _, oem_schema = request(port, "GET", "/redfish/v1/Schemas/SwitchyardEvent.v1_0_0.json")
        check(status == 200 and isinstance(oem_schema, dict), f"the OEM JSON Schema is served without credentials ({status})")
        if isinstance(oem_schema, dict):
            oem_validator = schemas.jsonschema.Draft7Validator(oem_schema)
            for f in frames:
                for record in json.loads(f["data"])["Events"]:
                    problems = [e.message for e in oem_validator.iter_errors(record["Oem"]["Switchyard"])]
                    check(not problems, f"SSE event {f.get('id')}: Oem.Switchyard: {problems}")
        status, _, csdl = request(port, "GET", "/redfish/v1/Schemas/SwitchyardEvent_v1.xml")
        import xml.etree.ElementTree as ET
        namespaces = []
        try:
            root_el = ET.fromstring(csdl if isinstance(csdl, (bytes, str)) else b"")
            namespaces = [el.get("Namespace") for el in root_el.iter("{http://docs.oasis-open.org/odata/ns/edm}Schema")]
        except ET.ParseError as e:
            check(False, f"the OEM CSDL is not XML: {e}")
        check(status == 200 and "SwitchyardEvent.v1_0_0" in namespaces, f"the OEM CSDL defines SwitchyardEvent.v1_0_0 ({status} {namespaces})")
        _, _, metadata = request(port, "GET", "/redfish/v1/$metadata")
        check(b"/redfish/v1/Schemas/SwitchyardEvent_v1.xml" in metadata, "$metadata references the OEM CSDL")
        _, _, schema_file = request(port, "GET", "/redfish/v1/JsonSchemas/SwitchyardEvent.v1_0_0", viewer)
        check(schema_file.get("Location", [{}])[0].get("Uri") == "/redfish/v1/Schemas/SwitchyardEvent.v1_0_0.json", "JsonSchemas points at the OEM JSON Schema")
        if frames:
            replayed = []
            first = int(frames[0]["id"])
            follow(first - 1, until=lambda f: int(f["id"]) >= int(frames[-1]["id"]), into=replayed)
            check([f["id"] for f in replayed][:len(frames)] == [f["id"] for f in frames], "Last-Event-ID replays the events after it")
        for role, user in accounts.items():
            seen = crawl(port, user, schemas, role)
            check(len(seen) >= 20, f"{role}: crawled only {len(seen)} resources")
        print(f"crawled {len(seen)} resources per role, all validated against the DMTF 2025.4 schemas")
        # Accounts: an administrator sees every one, anyone else their own; roles; chassis with their devices.
        _, _, listed = request(port, "GET", "/redfish/v1/AccountService/Accounts", admin)
        check(sorted(m["@odata.id"].rsplit("/", 1)[-1] for m in listed["Members"]) == ["ops", "root", "watcher"], f"an administrator sees every account ({listed})")
        _, _, listed = request(port, "GET", "/redfish/v1/AccountService/Accounts", operator)
        check([m["@odata.id"] for m in listed["Members"]] == ["/redfish/v1/AccountService/Accounts/ops"], "an operator sees only its own account")
        status, _, _ = request(port, "GET", "/redfish/v1/AccountService/Accounts/root", operator)
        check(status == 404, f"another's account is not found for an operator ({status})")
        _, _, mine = request(port, "GET", "/redfish/v1/AccountService/Accounts/watcher", viewer)
        check(mine.get("RoleId") == "ReadOnly" and mine.get("Password") is None, f"an account names its role and never a password ({mine})")
        _, _, roles = request(port, "GET", "/redfish/v1/AccountService/Roles", viewer)
        check(roles["Members@odata.count"] == 4, "four roles: Administrator, Operator, ReadOnly and the custom Tenant")
        _, _, chassis = request(port, "GET", "/redfish/v1/Chassis", viewer)
        ids = sorted(m["@odata.id"].rsplit("/", 1)[-1] for m in chassis["Members"])
        check(ids == ["host0", "host1", "host2", "host3", "sw0", "sw1"], f"a chassis per switch and per host ({ids})")
        _, _, devices = request(port, "GET", "/redfish/v1/Chassis/sw0/PCIeDevices", viewer)
        check(devices["Members@odata.count"] == 20,
              f"switch sw0's enclosure holds its 8 GPUs, 4 NICs, 4 drives and its memory device's 4 LDs as PCIeDevices ({devices['Members@odata.count']})")

        # 2. Protocol rules.
        status, headers, body = request(port, "GET", "/redfish/v1/Systems")
        check(status == 401 and "WWW-Authenticate" in headers, "GET without credentials is 401 with WWW-Authenticate")
        check(schemas.validate(body, "redfish-error.v1_0_2.json", "RedfishError") is None, "401 body is a Redfish error")
        status, _, body = request(port, "GET", "/redfish/v1")
        check(status == 200, "the service root needs no credentials")
        status, headers, body = request(port, "DELETE", "/redfish/v1/Systems/host0", admin)
        check(status == 405 and headers.get("Allow") == "GET, HEAD", f"DELETE of a physical system is 405 with Allow (got {status} {headers.get('Allow')})")
        status, _, body = request(port, "POST", "/redfish/v1/Systems", viewer, {"Name": "nope", "Processors": {"Members": [{"@Redfish.RequestedCount": 1}]}})
        check(status == 403, f"ReadOnly cannot compose (got {status})")
        status, _, body = request(port, "POST", "/redfish/v1/Systems", admin, "{not json")
        check(status == 400 and body["error"]["code"].endswith("MalformedJSON"), f"malformed JSON is 400 MalformedJSON ({status})")
        status, _, body = request(port, "POST", "/redfish/v1/Systems", admin, {"Name": "x", "PowerState": "On"})
        check(status == 400 and body["error"]["code"].endswith("PropertyUnknown"), f"an unknown property is 400 PropertyUnknown ({status})")
        status, _, body = request(port, "POST", "/redfish/v1/Systems", admin,
                                  {"Name": "big", "Processors": {"Members": [{"@Redfish.RequestedCount": 999}]}})
        check(status == 400 and "NoResourceMatch" in body["error"]["code"], f"a request that cannot fit is NoResourceMatch ({status})")
        check(schemas.validate(body, "redfish-error.v1_0_2.json", "RedfishError") is None, "error body is a Redfish error")
        # Oem.Switchyard.Queue: a request that does not fit waits in yardd's queue: 202, its Task Pending until admitted.
        status, _, body = request(port, "POST", "/redfish/v1/Systems", admin,
                                  {"Name": "waits", "Processors": {"Members": [{"@Redfish.RequestedCount": 16}]}, "Oem": {"Switchyard": {"Kueue": True}}})
        check(status == 400 and body["error"]["code"].endswith("PropertyUnknown"), f"an unknown Oem.Switchyard property is 400 ({status})")
        status, _, queued_task = request(port, "POST", "/redfish/v1/Systems", admin,
                                         {"Name": "waits", "Processors": {"Members": [{"@Redfish.RequestedCount": 16}]},
                                          "Oem": {"Switchyard": {"Queue": True, "PriorityClass": "batch", "LeaseSeconds": 3600}}})
        check(status == 202 and queued_task.get("TaskState") == "Pending" and queued_task.get("PercentComplete") == 0,
              f"a queued compose is 202 with a Pending Task ({status} {queued_task})")
        check(schemas.validate_resource(queued_task) is None, "the Pending Task validates")
        queued_sys = "/redfish/v1/Systems/" + queued_task.get("Name", " ").split(" ")[-1]
        status, _, waiting = request(port, "GET", queued_sys, admin)
        check(status == 200 and waiting["Status"]["State"] == "StandbyOffline" and schemas.validate_resource(waiting) is None,
              f"the queued system is StandbyOffline and validates ({status} {waiting.get('Status')})")
        status, headers, _ = request(port, "DELETE", queued_sys, admin)
        check(status == 202, f"DELETE of a queued system cancels it ({status})")
        wait_task(port, admin, headers.get("Location", ""))
        status, _, _ = request(port, "GET", queued_sys, admin)
        check(status == 404, f"the cancelled system is gone ({status})")
        for count in (4294967298, -1, 0, 5000):  # 4294967298 once composed 2 GPUs (cut to 32 bits)
            status, _, body = request(port, "POST", "/redfish/v1/Systems", admin,
                                      {"Name": "wrap", "Processors": {"Members": [{"@Redfish.RequestedCount": count}]}})
            check(status == 400 and body["error"]["code"].endswith("PropertyValueOutOfRange"),
                  f"@Redfish.RequestedCount {count} is 400 PropertyValueOutOfRange ({status})")
        status, _, body = request(port, "POST", "/redfish/v1/Systems", admin, '{"Name": "' + "x" * (2 << 20) + '"}')
        check(status == 413, f"a 2 MiB body is 413 ({status})")
        status, _, _ = request(port, "GET", "/redfish/v1/Systems?$select=Name", admin)
        check(status == 501, f"$select is 501 until supported ({status})")
        status, _, _ = request(port, "GET", "/redfish/v1/Systems", admin, headers={"OData-Version": "3.0"})
        check(status == 412, f"OData-Version 3.0 is 412 ({status})")
        # Found by DMTF's validators (issue 39 item 14).
        status, _, body = request(port, "GET", "/redfish/v1/NoSuchThing", admin)
        error_schema = "http://redfish.dmtf.org/schemas/v1/redfish-error.v1_0_2.json"
        deprecated = schemas.deprecated(body, error_schema + "#/definitions/RedfishError", error_schema)
        check(not deprecated, f"an error body sends no deprecated property ({deprecated})")
        status, headers, _ = request(port, "HEAD", "/redfish/v1/CompositionService", admin)
        check(status == 200 and "rel=describedby" in headers.get("Link", ""), f"HEAD has the Link describedby header ({status} {headers.get('Link')})")
        for path in ("/redfish/v1", "/redfish/v1/Systems", "/redfish/v1/Systems/host0"):
            status, headers, _ = request(port, "GET", path, admin)
            tag = headers.get("ETag")
            status, headers304, body304 = request(port, "GET", path, admin, headers={"If-None-Match": tag})
            check(status == 304 and not body304 and headers304.get("ETag") == tag, f"GET {path} with its own ETag as If-None-Match is 304 ({status})")
            status, _, _ = request(port, "GET", path, admin, headers={"If-None-Match": 'W/"0000000000000000", ' + tag})
            check(status == 304, f"GET {path}: If-None-Match with a list that holds its ETag is 304 ({status})")
            status, _, _ = request(port, "GET", path, admin, headers={"If-None-Match": 'W/"0000000000000000"'})
            check(status == 200, f"GET {path}: If-None-Match with another ETag is 200 ({status})")
        status, headers, session = request(port, "POST", "/redfish/v1/SessionService/Sessions/Members", None,
                                           {"UserName": viewer[0], "Password": viewer[1]})
        check(status == 201 and headers.get("X-Auth-Token"), f"POST to Sessions/Members logs in ({status})")
        if status == 201:
            request(port, "DELETE", headers["Location"], admin)
        status, _, body = request(port, "POST", "/redfish/v1/Systems/Members", admin, "{not json")
        check(status == 400 and body["error"]["code"].endswith("MalformedJSON"), f"POST to Systems/Members composes as POST to Systems ({status})")
        status, _, body = request(port, "GET", "/redfish/v1/$metadata")
        import re
        csdl_dir = shared / "redfish-mockups" / "dmtf-schema-2025.4" / "csdl"
        references = re.findall(rb'<edmx:Reference Uri="http://redfish.dmtf.org/schemas/v1/([^"]+)">(.*?)</edmx:Reference>', body, re.S)
        check(len(references) >= 30, f"$metadata references the DMTF schemas it uses ({len(references)})")
        for name, includes in references:
            csdl = csdl_dir / name.decode()
            check(csdl.exists(), f"$metadata names {name.decode()}, which DMTF publishes")
            if csdl.exists():
                text = csdl.read_bytes()
                for ns in re.findall(rb'Namespace="([^"]+)"', includes):
                    check(b'Namespace="' + ns + b'"' in text, f"$metadata includes {ns.decode()}, which {name.decode()} defines")
        for raw, expect in ((b"GARBAGE\r\n\r\n", b"HTTP/1.1 400"), (b"GET /redfish/v1 HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n", b"HTTP/1.1 400")):
            import socket
            with socket.create_connection(("127.0.0.1", port), timeout=10) as plain, \
                    TLS.wrap_socket(plain, server_hostname="127.0.0.1") as conn:
                conn.sendall(raw)
                answer = b""
                while True:
                    chunk = conn.recv(4096)
                    if not chunk:
                        break
                    answer += chunk
            check(answer.startswith(expect), f"a malformed request {raw[:20]!r} is answered {expect.decode()} ({answer[:40]!r})")
        sys_path = None
        status, _, systems = request(port, "GET", "/redfish/v1/Systems", admin)
        composed = [m["@odata.id"] for m in systems["Members"] if "/sys-" in m["@odata.id"]]
        check(len(composed) == 1, f"one composed system listed ({composed})")
        sys_path = composed[0]
        status, _, _ = request(port, "DELETE", sys_path, admin, headers={"If-Match": 'W/"stale"'})
        check(status == 412, f"DELETE with a stale If-Match is 412 ({status})")
        # The Compose action: Preview changes nothing, PreviewReserve holds, Apply composes, empty manifests are refused.
        _, _, cs = request(port, "GET", "/redfish/v1/CompositionService", admin)
        compose_action = cs["Actions"]["#CompositionService.Compose"]["target"]
        manifest = {"RequestFormat": "Manifest", "RequestType": "Preview",
                    "Manifest": {"Expand": "None", "Stanzas": [{"StanzaType": "ComposeSystem", "StanzaId": "by-manifest",
                                                                "Request": {"Processors": {"Members": [{"@Redfish.RequestedCount": 2}]}}}]}}
        _, _, systems_before = request(port, "GET", "/redfish/v1/Systems", admin)
        status, _, preview = request(port, "POST", compose_action, operator, manifest)
        response = preview["Manifest"]["Stanzas"][0].get("Response", {}) if status == 200 else {}
        check(status == 200 and len(response.get("Links", {}).get("ResourceBlocks", [])) == 3, f"Preview answers the host and 2 GPU blocks ({status} {preview})")
        _, _, systems_after = request(port, "GET", "/redfish/v1/Systems", admin)
        check(systems_after["Members@odata.count"] == systems_before["Members@odata.count"], "Preview composed nothing")
        # PreviewReserve holds what Preview showed; Apply with its ReservationId composes exactly that.
        status, headers, reserved = request(port, "POST", compose_action, operator, dict(manifest, RequestType="PreviewReserve"))
        rid = reserved.get("ReservationId") if status == 200 else None
        check(status == 200 and rid and headers.get("Location", "").endswith("/CompositionReservations/" + str(rid)), f"PreviewReserve answers a reservation ({status} {reserved})")
        check(schemas.validate(reserved, "CompositionService.v1_2_3.json", "ComposeResponse") is None, "PreviewReserve's answer is a ComposeResponse")
        held = sorted(b["@odata.id"] for b in reserved["Manifest"]["Stanzas"][0]["Response"]["Links"]["ResourceBlocks"]) if rid else []
        status, _, reservation = request(port, "GET", f"/redfish/v1/CompositionService/CompositionReservations/{rid}", viewer)
        check(status == 200 and schemas.validate_resource(reservation) is None, f"the reservation validates ({status} {reservation})")
        check(reservation.get("Client") == "ops" and sorted(b["@odata.id"] for b in reservation.get("ReservedResourceBlocks", [])) == held,
              "the reservation names its client and the blocks it holds")
        for uri in held:
            _, _, block = request(port, "GET", uri, admin)
            check(block["CompositionStatus"]["Reserved"] is True and block["CompositionStatus"]["CompositionState"] == "Unused", f"{uri} is reserved, unused")
        _, _, free_pool = request(port, "GET", "/redfish/v1/CompositionService/FreePool", admin)
        check(schemas.validate_resource(free_pool) is None and held[0] in [m["@odata.id"] for m in free_pool["Members"]], "held blocks stay in the free pool")
        status, _, body = request(port, "POST", "/redfish/v1/Systems", admin, {"Name": "by-manifest", "Processors": {"Members": [{"@Redfish.RequestedCount": 1}]}})
        check(status == 409, f"the reserved system's name is taken ({status})")
        status, _, _ = request(port, "DELETE", f"/redfish/v1/CompositionService/CompositionReservations/{rid}", viewer)
        check(status == 403, f"ReadOnly cannot release a reservation ({status})")
        status, headers, _ = request(port, "POST", compose_action, operator, {"RequestFormat": "Manifest", "RequestType": "Apply", "ReservationId": rid})
        check(status == 202, f"Apply of the reservation answers 202 ({status})")
        status, headers, applied = wait_task(port, operator, headers.get("Location", ""))
        check(status == 201 and sorted(b["@odata.id"] for b in applied["Links"]["ResourceBlocks"]) == held, f"Apply composed exactly the held blocks ({status})")
        if status == 201:
            status, headers, _ = request(port, "DELETE", headers["Location"], operator)
            wait_task(port, operator, headers.get("Location", ""))
        status, _, body = request(port, "POST", compose_action, operator, {"RequestFormat": "Manifest", "RequestType": "Apply", "ReservationId": rid})
        check(status == 404 and body["error"]["code"].endswith("ResourceNotFound"), f"a reservation is applied once; then it is not found ({status})")
        status, _, again = request(port, "POST", compose_action, operator, dict(manifest, RequestType="PreviewReserve"))
        status, _, _ = request(port, "DELETE", f"/redfish/v1/CompositionService/CompositionReservations/{again.get('ReservationId')}", operator)
        check(status == 204, f"DELETE releases a reservation ({status})")
        status, _, listed = request(port, "GET", "/redfish/v1/CompositionService/CompositionReservations", admin)
        check(status == 200 and listed["Members@odata.count"] == 0 and schemas.validate_resource(listed) is None, "no reservation is left")
        # Several stanzas: placed together (disjoint blocks) or refused whole.
        two = {"RequestFormat": "Manifest", "RequestType": "Preview", "Manifest": {"Stanzas": [
            {"StanzaType": "ComposeSystem", "StanzaId": n, "Request": {"Processors": {"Members": [{"@Redfish.RequestedCount": 2}]}}} for n in ("pair-a", "pair-b")]}}
        status, _, preview = request(port, "POST", compose_action, operator, two)
        blocks = [sorted(b["@odata.id"] for b in s["Response"]["Links"]["ResourceBlocks"]) for s in preview.get("Manifest", {}).get("Stanzas", [])]
        check(status == 200 and len(blocks) == 2 and not set(blocks[0]) & set(blocks[1]), f"a two-stanza Preview places both, apart ({status} {blocks})")
        status, _, body = request(port, "POST", compose_action, operator, {"RequestFormat": "Manifest", "RequestType": "Apply", "Manifest": {"Stanzas": [
            {"StanzaType": "ComposeSystem", "StanzaId": f"big-{i}", "Request": {"Processors": {"Members": [{"@Redfish.RequestedCount": 8}]}}} for i in range(3)]}})
        check(status == 400 and "NoResourceMatch" in body["error"]["code"] and "big-" in body["error"]["message"], f"a manifest that cannot fit whole is refused whole ({status})")
        _, _, now_systems = request(port, "GET", "/redfish/v1/Systems", admin)
        check(now_systems["Members@odata.count"] == systems_before["Members@odata.count"], "nothing of the refused manifest was composed")
        status, _, body = request(port, "POST", compose_action, operator, dict(two, RequestType="Apply"))
        stanzas = body.get("Manifest", {}).get("Stanzas", []) if status == 200 else []
        check(status == 200 and len(stanzas) == 2 and all("/Systems/sys-" in s["Response"]["@odata.id"] for s in stanzas), f"a two-stanza Apply composes both ({status} {body})")
        for s in stanzas:
            uri = s["Response"]["@odata.id"]
            for _ in range(200):
                _, _, state = request(port, "GET", uri, operator)
                if state["Status"]["State"] == "Enabled":
                    break
                time.sleep(0.05)
            status, headers, _ = request(port, "DELETE", uri, operator)
            status, _, _ = wait_task(port, operator, headers.get("Location", ""))
            check(status == 204, f"{uri} composed and decomposed ({status})")
        # PATCH of the service's settings: Administrator only, If-Match, read-only and bad values refused.
        _, cs_headers, _ = request(port, "GET", "/redfish/v1/CompositionService", admin)
        status, _, _ = request(port, "PATCH", "/redfish/v1/CompositionService", operator, {"ReservationDuration": "PT2M"})
        check(status == 403, f"an Operator cannot change the service's settings ({status})")
        status, _, _ = request(port, "PATCH", "/redfish/v1/CompositionService", admin, {"ReservationDuration": "PT2M"}, headers={"If-Match": 'W/"stale"'})
        check(status == 412, f"PATCH with a stale If-Match is 412 ({status})")
        for patch, code in (({"ServiceEnabled": False}, "PropertyNotWritable"), ({"Colour": "red"}, "PropertyUnknown"),
                            ({"ReservationDuration": "soon"}, "PropertyValueFormatError"), ({"ReservationDuration": "P2D"}, "PropertyValueOutOfRange"),
                            ({"ReservationDuration": 5}, "PropertyValueTypeError")):
            status, _, body = request(port, "PATCH", "/redfish/v1/CompositionService", admin, patch)
            check(status == 400 and body["error"]["code"].endswith(code), f"PATCH {patch} is 400 {code} ({status} {body})")
        status, _, body = request(port, "PATCH", "/redfish/v1/CompositionService", admin, {"ReservationDuration": "PT2M"}, headers={"If-Match": cs_headers.get("ETag", "")})
        check(status == 200 and body.get("ReservationDuration") == "PT120S", f"PATCH ReservationDuration ({status} {body})")
        status, _, body = request(port, "PATCH", "/redfish/v1/SessionService", admin, {"SessionTimeout": 10})
        check(status == 400 and body["error"]["code"].endswith("PropertyValueOutOfRange"), f"SessionTimeout 10 is out of range ({status})")
        status, _, body = request(port, "PATCH", "/redfish/v1/SessionService", admin, {"SessionTimeout": 900})
        check(status == 200 and body.get("SessionTimeout") == 900, f"PATCH SessionTimeout ({status} {body})")
        status, headers, _ = request(port, "PATCH", "/redfish/v1/Systems", admin, {"Name": "x"})
        check(status == 405 and "PATCH" not in headers.get("Allow", ""), f"PATCH where nothing is writable is 405 with Allow ({status})")
        status, _, body = request(port, "POST", compose_action, operator, {"RequestFormat": "Manifest", "RequestType": "Apply", "Manifest": {"Stanzas": []}})
        check(status == 400 and body["error"]["code"].endswith("EmptyManifest"), f"an empty manifest is EmptyManifest ({status})")
        status, headers, _ = request(port, "POST", compose_action, operator, dict(manifest, RequestType="Apply"))
        check(status == 202, f"Apply answers 202 with a task ({status})")
        status, headers, applied = wait_task(port, operator, headers.get("Location", ""))
        check(status == 201 and applied.get("Name") == "by-manifest", f"Apply composed the stanza's system ({status})")
        if status == 201:
            status, headers, _ = request(port, "DELETE", headers["Location"], operator)
            wait_task(port, operator, headers.get("Location", ""))

        # Expandable systems: add a GPU block, then remove it.
        _, before_headers, before = request(port, "GET", sys_path, admin)
        action = before["Actions"]["#ComputerSystem.AddResourceBlock"]["target"]
        block = {"ResourceBlock": {"@odata.id": "/redfish/v1/CompositionService/ResourceBlocks/sw0-gpu6"}}
        status, _, body = request(port, "POST", action, operator, dict(block, ComputerSystemETag='W/"stale"'))
        check(status == 412 and body["error"]["code"].endswith("PreconditionFailed"), f"a stale ComputerSystemETag is 412 ({status})")
        status, headers, _ = request(port, "POST", action, operator, dict(block, ComputerSystemETag=before_headers.get("ETag", "")))
        check(status == 202, f"AddResourceBlock with the current ComputerSystemETag answers 202 ({status})")
        status, _, after = wait_task(port, operator, headers.get("Location", ""))
        check(status == 200 and len(after["Links"]["ResourceBlocks"]) == len(before["Links"]["ResourceBlocks"]) + 1,
              f"the system gained the block ({status})")
        _, _, gpu6 = request(port, "GET", "/redfish/v1/CompositionService/ResourceBlocks/sw0-gpu6", admin)
        check(gpu6["CompositionStatus"]["CompositionState"] == "Composed" and gpu6["Links"]["ComputerSystems"][0]["@odata.id"] == sys_path,
              "the added block is Composed into the system")
        status, _, _ = request(port, "POST", action, viewer, block)
        check(status == 403, f"ReadOnly cannot change a system ({status})")
        status, _, body = request(port, "POST", action, operator, {"ResourceBlock": {"@odata.id": "/redfish/v1/CompositionService/ResourceBlocks/sw0-gpu6"}, "Force": True})
        check(status == 400 and body["error"]["code"].endswith("ActionParameterUnknown"), f"an unknown action parameter is 400 ({status})")
        remove = before["Actions"]["#ComputerSystem.RemoveResourceBlock"]["target"]
        status, headers, _ = request(port, "POST", remove, operator, block)
        check(status == 202, f"RemoveResourceBlock answers 202 ({status})")
        status, _, after = wait_task(port, operator, headers.get("Location", ""))
        check(status == 200 and len(after["Links"]["ResourceBlocks"]) == len(before["Links"]["ResourceBlocks"]), f"the block left the system ({status})")
        # Sessions: log in, use the token, log out.
        status, headers, body = request(port, "POST", "/redfish/v1/SessionService/Sessions", None, {"UserName": "ops", "Password": "0ps-pw"})
        token = headers.get("X-Auth-Token")
        check(status == 201 and token and headers.get("Location"), f"login gives 201 + X-Auth-Token + Location ({status})")
        status, _, _ = request(port, "GET", "/redfish/v1/Systems", None, headers={"X-Auth-Token": token or ""})
        check(status == 200, f"the session token authenticates ({status})")
        status, _, _ = request(port, "DELETE", headers.get("Location") or "/redfish/v1/SessionService/Sessions/1", None, headers={"X-Auth-Token": token or ""})
        check(status == 204, f"logout ({status})")
        status, _, _ = request(port, "GET", "/redfish/v1/Systems", None, headers={"X-Auth-Token": token or ""})
        check(status == 401, f"a logged-out token no longer works ({status})")
        status, headers, _ = request(port, "DELETE", sys_path, operator)
        check(status == 202, f"DELETE of a composed system answers 202 with a task ({status})")
        status, _, _ = wait_task(port, operator, headers.get("Location", ""))
        check(status == 204, f"task monitor after decompose is 204 ({status})")

        # 3. DMTF's redfishtool.
        tool = shutil.which("redfishtool")
        if not tool:
            check(False, "redfishtool is not installed (./setup.sh installs it)")
        else:
            base = [tool, "-r", f"127.0.0.1:{port}", "-S", "Always", "-u", admin[0], "-p", admin[1]]
            out = subprocess.run(base + ["Systems", "list"], capture_output=True, text=True, timeout=30)
            check(out.returncode == 0 and "host0" in out.stdout, f"redfishtool Systems list: {out.returncode} {out.stderr[-300:]}")
            out = subprocess.run(base + ["raw", "GET", "/redfish/v1/CompositionService"], capture_output=True, text=True, timeout=30)
            check(out.returncode == 0 and "ResourceBlocks" in out.stdout, f"redfishtool reads the CompositionService: {out.stderr[-300:]}")
            out = subprocess.run(base + ["raw", "POST", "/redfish/v1/Systems", "-d",
                                         json.dumps({"Name": "by-redfishtool", "Links": {"ResourceBlocks": [
                                             {"@odata.id": "/redfish/v1/CompositionService/ResourceBlocks/host1"},
                                             {"@odata.id": "/redfish/v1/CompositionService/ResourceBlocks/sw0-gpu4"}]}})],
                                 capture_output=True, text=True, timeout=30)
            check(out.returncode == 0, f"redfishtool composes (specific): {out.returncode} {out.stdout[-300:]} {out.stderr[-300:]}")
            deadline = time.time() + 10
            composed = []
            while time.time() < deadline and not composed:
                _, _, systems = request(port, "GET", "/redfish/v1/Systems", admin)
                for m in systems["Members"]:
                    if "/sys-" in m["@odata.id"]:
                        _, _, s = request(port, "GET", m["@odata.id"], admin)
                        if s.get("Name") == "by-redfishtool" and s["Status"]["State"] == "Enabled":
                            composed.append(m["@odata.id"])
                time.sleep(0.05)
            check(len(composed) == 1, "the system redfishtool composed is listed and enabled")
            if composed:
                out = subprocess.run(base + ["raw", "DELETE", composed[0]], capture_output=True, text=True, timeout=30)
                check(out.returncode == 0, f"redfishtool decomposes: {out.stderr[-300:]}")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    if FAILURES:
        print(f"{len(FAILURES)} check(s) failed; yardd log: {tmp / 'yardd.log'}")
        return 1
    print("all Redfish conformance checks passed")
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
