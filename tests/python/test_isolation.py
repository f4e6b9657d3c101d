"""Tenant isolation on every read surface (issue 39 item 6): two tenants share one yardd; each walks everything it
may read (gRPC through the installed Python client and yardctl, Redfish with its event stream replayed from the
start and every resource reachable from the service root, the web API and its event stream) and no name, id, label, identity, tenant
or host-side PCI address of the other tenant's may appear anywhere. The other roles are checked for what they
may not do: a tenant cannot read /metrics (it shows the whole pool); a viewer sees both tenants."""
import base64
import json
import os
import re
import subprocess
import threading
import time
import unittest
import urllib.error
import urllib.request

import grpc

from harness import YARDCTL, YarddTestCase, write_identities
from switchyard_client import Client

TOKENS = {"alice": "tok-alice-1", "bob": "tok-bob-2", "watcher": "tok-watcher-3", "ops": "tok-ops-4"}


class IsolationTest(YarddTestCase):
    def http(self, url, token, headers=None):
        request = urllib.request.Request(url)
        request.add_header("Authorization", f"Bearer {token}")
        for k, v in (headers or {}).items():
            request.add_header(k, v)
        try:
            with urllib.request.urlopen(request, timeout=10) as r:
                return r.status, r.read().decode(errors="replace")
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode(errors="replace")

    def sse(self, url, token, seconds=1.5):
        """An event stream (Redfish's or the web API's) from the first recorded event (Last-Event-ID: 0), read for a while."""
        chunks = []

        def read():
            request = urllib.request.Request(url)
            request.add_header("Authorization", f"Bearer {token}")
            request.add_header("Last-Event-ID", "0")
            try:
                with urllib.request.urlopen(request, timeout=seconds) as r:
                    while True:
                        line = r.readline()
                        if not line:
                            break
                        chunks.append(line.decode(errors="replace"))
            except Exception:  # the read timing out ends the sample
                pass

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        reader.join(seconds + 2)
        return "".join(chunks)

    def redfish_crawl(self, base, token):
        """Every resource reachable from /redfish/v1 (task monitors excepted: reading one can end it)."""
        seen, queue, texts = set(), ["/redfish/v1"], []
        while queue:
            path = queue.pop()
            if path in seen or "TaskMonitors" in path:
                continue
            seen.add(path)
            status, body = self.http(base + path, token)
            texts.append(f"GET {path} -> {status}\n{body}")
            for ref in re.findall(r'"@odata\.id":\s*"(/redfish/v1[^"#]*)"', body):
                queue.append(ref.rstrip("/"))
        return texts, seen

    def grpc_surfaces(self, address, token):
        """Everything a caller may read over gRPC, as text."""
        texts = []
        with Client(address, plaintext=True, token=token) as yard:
            for name, call in (("systems", yard.systems), ("devices", yard.devices), ("hosts", yard.hosts),
                               ("topology", yard.topology), ("operations", lambda: yard.operations(limit=500)),
                               ("audit", lambda: yard.audit(limit=500)), ("queue", yard.queue), ("usage", yard.usage),
                               ("capacity", lambda: yard.capacity([1, 2, 4]))):
                try:
                    texts.append(f"{name}: {call()}")
                except grpc.RpcError as e:
                    texts.append(f"{name}: {e.code()} {e.details()}")
            events = []
            try:
                for event in yard.watch(from_start=True, timeout=1.5):
                    events.append(str(event))
            except grpc.RpcError as e:
                self.assertEqual(e.code(), grpc.StatusCode.DEADLINE_EXCEEDED, e.details())
            self.assertTrue(events, "the watch replays the caller's events")
            texts.append("watch: " + "\n".join(events))
        for args in (["systems"], ["devices"], ["ops", "--limit", "500"], ["audit", "--limit", "500"], ["queue"], ["capacity"]):
            r = subprocess.run([YARDCTL, "--plaintext", "--server", address, "-o", "json", *args],
                               capture_output=True, text=True, timeout=60, env={**os.environ, "YARD_TOKEN": token})
            texts.append(f"yardctl {' '.join(args)} -> {r.returncode}\n{r.stdout}\n{r.stderr}")
        return texts

    def web_surfaces(self, url, token):
        texts = []
        for path in ("/api/v1/pool", "/api/v1/summary", "/api/v1/systems", "/api/v1/queue", "/api/v1/operations",
                     "/api/v1/events", "/api/v1/capacity", "/metrics"):
            status, body = self.http(url + path, token)
            texts.append(f"GET {path} -> {status}\n{body}")
        return texts

    def test_a_tenant_finds_no_trace_of_another_on_any_surface(self):
        ids = self.dir / "identities.json"
        write_identities(ids, [("alice", "tenant", "team-alpha", TOKENS["alice"]), ("bob", "tenant", "team-bravo", TOKENS["bob"]),
                               ("watcher", "viewer", None, TOKENS["watcher"]), ("ops", "operator", None, TOKENS["ops"])])
        yardd = self.yardd("--identities", str(ids), "--redfish-listen", "127.0.0.1:0", "--redfish-http",
                           "--redfish-port-file", str(self.dir / "rfport"), metrics=True)
        redfish = f"http://127.0.0.1:{int((self.dir / 'rfport').read_text())}"

        # Each tenant composes one system it keeps and one it gives back (bind, unbind and release events), and
        # leaves a refused request in the audit. Both compose before either gives back, so that no GPU passes from
        # one tenant to the other (a GPU's UUID is the GPU's: whoever held it has seen it).
        secrets, prefixes = {}, {"alice": "alpha", "bob": "bravo"}
        for who, prefix in prefixes.items():
            with Client(yardd.address, plaintext=True, token=TOKENS[who]) as yard:
                kept = yard.wait(yard.compose(f"{prefix}-kept", 2, labels={"project": f"{prefix}-project"}).id)
                gone = yard.wait(yard.compose(f"{prefix}-gone", 1).id)
                with self.assertRaises(grpc.RpcError):
                    yard.compose(f"{prefix}-toobig", 64)
                mine = {f"{prefix}-kept", f"{prefix}-gone", f"{prefix}-toobig", f"{prefix}-project", kept.id, gone.id,
                        kept.system_id, gone.system_id, who, f"team-{'alpha' if who == 'alice' else 'bravo'}"}
                for name in (f"{prefix}-kept", f"{prefix}-gone"):
                    mine |= {b.host_pci_address for b in yard.system(name).bindings} | {b.uuid for b in yard.system(name).bindings}
                secrets[who] = {s for s in mine if s}
        for who, prefix in prefixes.items():
            with Client(yardd.address, plaintext=True, token=TOKENS[who]) as yard:
                secrets[who].add(yard.wait(yard.decompose(f"{prefix}-gone").id).id)
        self.assertTrue(any(re.match(r"^[0-9a-f]{4}:", s) for s in secrets["alice"]), f"host-side addresses are among the secrets: {secrets}")

        def surfaces(who):
            token = TOKENS[who]
            texts = self.grpc_surfaces(yardd.address, token)
            crawled, seen = self.redfish_crawl(redfish, token)
            self.assertGreater(len(seen), 30, "the Redfish crawl reached the service's resources")
            texts += crawled
            events = self.sse(redfish + "/redfish/v1/EventService/SSE", token)
            self.assertIn("data: ", events, "the Redfish event stream replays the caller's own events")
            texts.append("SSE: " + events)
            texts += self.web_surfaces(yardd.metrics_url, token)
            events = self.sse(yardd.metrics_url + "/api/v1/events/stream", token)
            self.assertIn(f"{'alpha' if who == 'alice' else 'bravo'}-kept", events, "the web event stream replays the caller's own events")
            texts.append("GET /api/v1/events/stream\n" + events)
            return texts

        for who, other in (("alice", "bob"), ("bob", "alice")):
            texts = surfaces(who)
            whole = "\n".join(texts)
            self.assertIn(f"{'alpha' if who == 'alice' else 'bravo'}-kept", whole, f"{who} sees its own system")
            # A host-side PCI address names a slot on a host: the same address on one's own host is not the other's.
            for secret in sorted(secrets[other] - secrets[who]):
                for text in texts:
                    if re.search(r"(?<![\w.-])" + re.escape(secret) + r"(?![\w-])", text):
                        where = text.split("\n", 1)[0][:120]
                        at = text.find(secret)
                        self.fail(f"{who} sees {other}'s {secret!r} in {where}: ...{text[max(0, at - 200):at + 100]}...")
            metrics_status = next(t for t in texts if t.startswith("GET /metrics")).split("\n", 1)[0]
            self.assertIn("-> 403", metrics_status, "a tenant may not read /metrics: it shows the whole pool")

        # A viewer sees the whole pool: both tenants' systems, on every surface that lists them.
        with Client(yardd.address, plaintext=True, token=TOKENS["watcher"]) as yard:
            self.assertEqual(sorted(s.name for s in yard.systems()), ["alpha-kept", "bravo-kept"])
        status, body = self.http(yardd.metrics_url + "/metrics", TOKENS["watcher"])
        self.assertEqual(status, 200)
        status, body = self.http(redfish + "/redfish/v1/Systems", TOKENS["watcher"])
        self.assertEqual(len([m for m in json.loads(body)["Members"] if "/sys-" in m["@odata.id"]]), 2, body)

        # Existence does not leak either: the other tenant's system is "not found", never "changed" or "taken".
        with Client(yardd.address, plaintext=True, token=TOKENS["bob"]) as yard:
            alpha_id = next(s for s in secrets["alice"] if s.startswith("sys-") and s != "sys-")
            for call in (lambda: yard.system("alpha-kept"), lambda: yard.decompose("alpha-kept"), lambda: yard.system(alpha_id)):
                with self.assertRaises(grpc.RpcError) as caught:
                    call()
                self.assertEqual(caught.exception.code(), grpc.StatusCode.NOT_FOUND, caught.exception.details())
            with self.assertRaises(grpc.RpcError) as caught:
                yard.compose("alpha-kept", 1)
            self.assertNotIn("sys-", caught.exception.details() or "", "a name taken by another tenant names no system id")


if __name__ == "__main__":
    unittest.main()
