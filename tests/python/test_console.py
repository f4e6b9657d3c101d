"""The console acts (issue 63, item 1), against the real yardd: a password login that sets an HttpOnly, SameSite=Strict
session cookie and hands the page a CSRF token; changes (compose, decompose, renew, cancel) accepted with the cookie
and the token, or with a bearer token, and refused without the token, with HTTP Basic alone, or beyond what the role
and tenant allow (the engine's own checks, as gRPC's). Then the same in Debian's headless Chromium: log in through the
form, compose through the form, see the system, decompose it with its button, be refused as a viewer."""
import json
import subprocess
import time
import unittest
import urllib.error
import urllib.request

from browser import Browser
from harness import YARDD, YarddTestCase, wait_for, write_fpga_pool


def hash_password(password):
    return subprocess.run([YARDD, "--hash-password"], input=password, capture_output=True, text=True, check=True).stdout.strip()


def write_people(path):
    """ops (operator), alice (tenant team-a), vic (viewer), all with passwords; bot (operator) with a bearer token."""
    import hashlib
    import os
    people = [{"name": "ops", "role": "operator", "password": hash_password("ops-pw")},
              {"name": "alice", "role": "tenant", "tenant": "team-a", "password": hash_password("alice-pw")},
              {"name": "vic", "role": "viewer", "password": hash_password("vic-pw")},
              {"name": "bot", "role": "operator", "token_sha256": hashlib.sha256(b"bot-token").hexdigest()}]
    path.write_text(json.dumps({"identities": people}))
    os.chmod(path, 0o600)


class Http:
    """A client of the operator endpoint that keeps the session cookie, as a browser would."""

    def __init__(self, base):
        self.base = base
        self.cookie = ""
        self.csrf = ""

    def call(self, method, path, body=None, csrf=None, headers=None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, method=method)
        request.add_header("Content-Type", "application/json")
        request.add_header("X-Switchyard-Console", "1")
        if self.cookie:
            request.add_header("Cookie", self.cookie)
        if csrf is not None:
            request.add_header("X-CSRF-Token", csrf)
        for k, v in (headers or {}).items():
            request.add_header(k, v)
        try:
            with urllib.request.urlopen(request, timeout=20) as response:
                return response.status, response.headers, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as e:
            return e.code, e.headers, json.loads(e.read() or b"null")

    def login(self, name, password):
        status, headers, body = self.call("POST", "/api/v1/login", {"name": name, "password": password})
        if status == 200:
            self.cookie = headers.get("Set-Cookie").split(";")[0]
            self.csrf = body["csrf"]
        return status, headers, body

    def change(self, method, path, body=None):
        return self.call(method, path, body, csrf=self.csrf)


class ConsoleTest(YarddTestCase):
    def start(self, *more):
        ids = self.dir / "identities.json"
        write_people(ids)
        return self.yardd("--identities", str(ids), *more, metrics=True)

    def systems(self, http):
        status, _, body = http.call("GET", "/api/v1/systems")
        self.assertEqual(status, 200, body)
        return {s["name"]: s for s in (body["systems"] if isinstance(body, dict) else body)}

    def test_login_cookie_csrf_and_what_each_role_may_change(self):
        yardd = self.start()
        ops = Http(yardd.metrics_url)
        status, headers, body = ops.call("GET", "/api/v1/session")
        self.assertEqual(status, 401)
        self.assertIsNone(headers.get("WWW-Authenticate"), "no Basic challenge for the console: no password dialog")
        self.assertEqual(ops.login("ops", "wrong")[0], 401)
        status, headers, body = ops.login("ops", "ops-pw")
        self.assertEqual(status, 200, body)
        cookie = headers.get("Set-Cookie")
        for attribute in ("HttpOnly", "SameSite=Strict", "Path=/"):
            self.assertIn(attribute, cookie)
        self.assertNotIn("Secure", cookie, "plain HTTP on loopback: a Secure cookie would never come back")
        self.assertEqual((body["identity"], body["role"]), ("ops", "operator"))
        self.assertEqual(ops.call("GET", "/api/v1/session")[2]["csrf"], ops.csrf)

        # A change without the session's CSRF token, or with another, is refused and changes nothing.
        compose = {"name": "web1", "gpus": 2, "labels": {"team": "web"}}
        for token in (None, "not-the-token"):
            status, _, body = ops.call("POST", "/api/v1/systems", compose, csrf=token)
            self.assertEqual(status, 403, body)
            self.assertIn("CSRF", body["error"]["message"])
        self.assertEqual(self.systems(ops), {})
        status, _, op = ops.change("POST", "/api/v1/systems", compose)
        self.assertEqual(status, 202, op)
        self.assertEqual((op["kind"], op["requested_by"]), ("compose", "ops"))
        wait_for(lambda: self.systems(ops).get("web1", {}).get("state") == "composed", what="web1 composed")
        self.assertEqual(self.systems(ops)["web1"]["labels"], {"team": "web"})
        # Whole machines: a template that is not there, nothing asked for, a count out of range: refused, nothing made.
        for bad, code, says in (({"name": "t1", "template": "no-such"}, 404, "no-such"), ({"name": "t2", "gpus": 0}, 400, "'gpus'"),
                                ({"name": "t3", "gpus": 1, "nics": 65}, 400, "'nics'"),
                                ({"name": "t4", "gpus": 1, "nic_speed_gbps": 400}, 400, "give the NICs' count too")):
            status, _, body = ops.change("POST", "/api/v1/systems", bad)
            self.assertEqual(status, code, body)
            self.assertIn(says, body["error"]["message"])
        self.assertEqual(set(self.systems(ops)), {"web1"})
        status, _, templates = ops.call("GET", "/api/v1/templates")
        self.assertEqual(status, 200, templates)
        # Four hosts, web1 on one: three more systems at most; 8 GPUs under one switch only where web1 took none.
        self.assertEqual({t["name"]: t["fits"] for t in templates["templates"]}, {"train-8x": 1, "infer-1x": 3, "storage-2x": 3})
        status, _, renewed = ops.change("POST", "/api/v1/systems/web1/renew", {"lease": "4h"})
        self.assertEqual(status, 200, renewed)
        self.assertTrue(renewed["lease_expires_at"])
        self.assertEqual(ops.change("POST", "/api/v1/systems", {"name": "x", "gpus": "two"})[0], 400)

        # HTTP Basic is never enough for a change (browsers send it by themselves); a bearer token is.
        import base64
        basic = "Basic " + base64.b64encode(b"ops:ops-pw").decode()
        status, _, body = Http(yardd.metrics_url).call("DELETE", "/api/v1/systems/web1", headers={"Authorization": basic})
        self.assertEqual(status, 403, body)
        self.assertIn("HTTP Basic", body["error"]["message"])
        status, _, body = Http(yardd.metrics_url).call("POST", "/api/v1/systems", {"name": "bot1", "gpus": 1},
                                                       headers={"Authorization": "Bearer bot-token"})
        self.assertEqual(status, 202, body)

        # A viewer may not change; a tenant only its own tenant's systems (the engine decides, as for gRPC).
        vic = Http(yardd.metrics_url)
        self.assertEqual(vic.login("vic", "vic-pw")[0], 200)
        status, _, body = vic.change("POST", "/api/v1/systems", {"name": "v1", "gpus": 1})
        self.assertEqual(status, 403, body)
        self.assertIn("viewer", body["error"]["message"])
        alice = Http(yardd.metrics_url)
        self.assertEqual(alice.login("alice", "alice-pw")[0], 200)
        self.assertEqual(alice.change("POST", "/api/v1/systems", {"name": "a2", "gpus": 1, "tenant": "team-b"})[0], 403)
        self.assertEqual(alice.change("DELETE", "/api/v1/systems/web1")[0], 404, "another tenant's system is not hers to see")
        status, _, body = alice.change("POST", "/api/v1/systems", {"name": "a1", "gpus": 1})
        self.assertEqual(status, 202, body)
        wait_for(lambda: "a1" in self.systems(alice), what="a1")
        self.assertEqual(set(self.systems(alice)), {"a1"}, "a tenant sees its own systems only")

        # Queue and cancel; decompose; log out ends the session.
        status, _, queued = ops.change("POST", "/api/v1/systems", {"name": "big", "gpus": 16, "queue": True})
        self.assertEqual((status, queued["state"]), (202, "queued"))
        status, _, cancelled = ops.change("POST", f"/api/v1/queue/{queued['id']}/cancel")
        self.assertEqual(status, 202, cancelled)
        status, _, body = ops.change("DELETE", "/api/v1/systems/web1")
        self.assertEqual((status, body["kind"]), (202, "decompose"))
        wait_for(lambda: "web1" not in self.systems(ops), what="web1 decomposed")
        status, _, operations = ops.call("GET", "/api/v1/operations?limit=50")
        self.assertEqual(status, 200)
        named = {op["system_name"] for op in operations if op["system"] == body["system"]}
        self.assertEqual(named, {"web1"}, "a decomposed system's operations still name it")
        self.assertEqual(ops.change("POST", "/api/v1/logout")[0], 200)
        self.assertEqual(ops.call("GET", "/api/v1/session")[0], 401, "the old cookie no longer opens anything")
        # The viewer's refused compose is in the audit trail, as a gRPC refusal would be (read by the operator's token).
        import os
        from harness import YARDCTL
        audit = subprocess.run([YARDCTL, "--plaintext", "--server", yardd.address, "audit", "-o", "json"], capture_output=True, text=True,
                               timeout=60, env={**os.environ, "YARD_TOKEN": "bot-token"})
        self.assertEqual(audit.returncode, 0, audit.stderr)
        records = json.loads(audit.stdout).get("records", [])
        self.assertTrue(any(r["caller"]["identity"] == "vic" and r["result"] == "PERMISSION_DENIED" for r in records), records)

    def test_pages_per_object_and_usage_by_label(self):
        """Issue 63, items 1 and 4: a system's page (devices, labels, lease, class, operations, events), a device's (its system
        and the operations that acted on it), an operation's with its steps, usage grouped as `yardctl usage --by`, a
        label included; what a tenant may not see is not found, as a missing object is."""
        yardd = self.start()
        ops, alice = _logged_in(yardd.metrics_url, "ops", "ops-pw"), _logged_in(yardd.metrics_url, "alice", "alice-pw")
        self.assertEqual(ops.change("POST", "/api/v1/systems", {"name": "web1", "gpus": 2, "lease": "8h", "labels": {"team": "vision"}})[0], 202)
        self.assertEqual(alice.change("POST", "/api/v1/systems", {"name": "a1", "gpus": 1, "labels": {"team": "speech"}})[0], 202)
        self.assertEqual(ops.change("POST", "/api/v1/systems", {"name": "gone", "gpus": 1})[0], 202)
        wait_for(lambda: all(self.systems(ops).get(n, {}).get("state") == "composed" for n in ("web1", "a1", "gone")), what="three systems")
        self.assertEqual(ops.change("DELETE", "/api/v1/systems/gone")[0], 202)
        wait_for(lambda: "gone" not in self.systems(ops), what="gone decomposed")

        status, _, page = ops.call("GET", "/api/v1/systems/web1")
        self.assertEqual(status, 200, page)
        self.assertEqual((page["labels"], page["tenant"], page["priority_class"]), ({"team": "vision"}, "default", "batch"))
        self.assertTrue(page["lease_expires_at"])
        self.assertEqual([d["kind"] for d in page["devices"]], ["gpu", "gpu"])
        self.assertTrue(all(d["uuid"] and d["switch"] and d["upstream_port_id"] for d in page["devices"]), page["devices"])
        compose = page["operations"][0]
        self.assertEqual((compose["kind"], compose["state"]), ("compose", "succeeded"))
        self.assertIn("system.composed", [e["type"] for e in page["events"]])

        status, _, op = ops.call("GET", f"/api/v1/operations/{compose['id']}")
        self.assertEqual(status, 200, op)
        self.assertEqual(op["system_name"], "web1")
        steps = [s["kind"] for s in op["steps"]]
        self.assertIn("bind", steps)
        bind = op["steps"][steps.index("bind")]
        self.assertEqual((bind["state"], bind["attempts"], sorted(bind["devices"])), ("done", 1, sorted(d["id"] for d in page["devices"])))
        self.assertTrue(bind["finished_at"])
        self.assertIn("GPU(s) under", op["explanation"])

        device = page["devices"][0]["id"]
        status, _, d = ops.call("GET", f"/api/v1/devices/{device}")
        self.assertEqual(status, 200, d)
        self.assertEqual((d["system"], d["system_tenant"], d["state"]), ("web1", "default", "allocated"))
        self.assertEqual([o["id"] for o in d["operations"]], [compose["id"]])
        self.assertTrue(any(e["type"] == "device.bound" for e in d["events"]), d["events"])

        # A tenant: another tenant's system and operation are not found; the device shows whose it is not.
        self.assertEqual(alice.call("GET", "/api/v1/systems/web1")[0], 404)
        self.assertEqual(alice.call("GET", f"/api/v1/operations/{compose['id']}")[0], 404)
        status, _, theirs = alice.call("GET", f"/api/v1/devices/{device}")
        self.assertEqual((status, theirs["system"], theirs["operations"], theirs["events"]), (200, "(another tenant)", [], []))
        self.assertNotIn("uuid", theirs)
        self.assertEqual(ops.call("GET", "/api/v1/systems/nope")[0], 404)
        self.assertEqual(ops.call("GET", "/api/v1/devices/nope")[0], 404)
        status, _, ended = ops.call("GET", "/api/v1/operations?limit=50")
        gone_op = next(o for o in ended if o.get("system_name") == "gone" and o["kind"] == "decompose")
        status, _, gone = ops.call("GET", f"/api/v1/operations/{gone_op['id']}")
        self.assertEqual((status, gone["system_name"], gone["system_ended"]), (200, "gone", True))

        # Usage by label: the decomposed system's group too (it had no team label); a tenant sees its own.
        status, _, usage = ops.call("GET", "/api/v1/usage?by=tenant,label:team")
        self.assertEqual(status, 200, usage)
        groups = {(r["tenant"], r["labels"].get("team")): r["systems"] for r in usage["rows"]}
        self.assertEqual(groups, {("default", None): 1, ("default", "vision"): 1, ("team-a", "speech"): 1})
        self.assertGreater(usage["total_gpu_hours"], 0)
        status, _, mine = alice.call("GET", "/api/v1/usage")
        self.assertEqual({r["system_name"] for r in mine["rows"]}, {"a1"})
        status, _, one = ops.call("GET", "/api/v1/usage?tenant=team-a&by=system")
        self.assertEqual([r["system_name"] for r in one["rows"]], ["a1"])
        for bad in ("by=label:", "by=colour", "since=yesterday"):
            status, _, body = ops.call("GET", f"/api/v1/usage?{bad}")
            self.assertEqual(status, 400, (bad, body))

    def test_a_session_ends_when_its_identity_changes(self):
        """A reload (SIGHUP) that changes an identity's password, role or tenant, or removes it, ends its console
        sessions at their next request, as it ends gRPC and Redfish logins; an unchanged identity stays logged in."""
        import signal
        ids = self.dir / "identities.json"
        write_people(ids)
        yardd = self.yardd("--identities", str(ids), metrics=True)
        alice, ops, vic = Http(yardd.metrics_url), Http(yardd.metrics_url), Http(yardd.metrics_url)
        self.assertEqual(alice.login("alice", "alice-pw")[0], 200)
        self.assertEqual(ops.login("ops", "ops-pw")[0], 200)
        self.assertEqual(vic.login("vic", "vic-pw")[0], 200)
        people = json.loads(ids.read_text())["identities"]
        for p in people:
            if p["name"] == "alice":
                p["password"] = hash_password("alice-new-pw")
            if p["name"] == "ops":
                p["role"] = "viewer"
        ids.write_text(json.dumps({"identities": people}))
        yardd.process.send_signal(signal.SIGHUP)
        wait_for(lambda: "identities reloaded" in yardd.log(), what="the reload")
        self.assertEqual(alice.call("GET", "/api/v1/systems")[0], 401, "a new password ends the old login")
        status, _, body = alice.change("POST", "/api/v1/systems", {"name": "a1", "gpus": 1})
        self.assertEqual(status, 401, body)
        self.assertEqual(ops.call("GET", "/api/v1/session")[0], 401, "a new role is a new login")
        status, _, body = ops.change("POST", "/api/v1/systems", {"name": "o1", "gpus": 1})
        self.assertEqual(status, 401, body)
        self.assertEqual(vic.call("GET", "/api/v1/session")[2]["role"], "viewer", "an unchanged identity stays logged in")
        self.assertEqual(alice.login("alice", "alice-new-pw")[0], 200)
        self.assertEqual(alice.call("GET", "/api/v1/systems")[0], 200)

    def test_without_identities_a_change_still_needs_the_pages_token(self):
        yardd = self.yardd(metrics=True)
        local = Http(yardd.metrics_url)
        status, _, session = local.call("GET", "/api/v1/session")
        self.assertEqual((status, session["login"], session["role"]), (200, False, "admin"))
        self.assertEqual(local.call("POST", "/api/v1/systems", {"name": "s1", "gpus": 1})[0], 403, "a page of another origin cannot read the token")
        self.assertEqual(local.call("POST", "/api/v1/login", {"name": "a", "password": "b"})[0], 400)
        status, _, op = local.call("POST", "/api/v1/systems", {"name": "s1", "gpus": 1}, csrf=session["csrf"])
        self.assertEqual(status, 202, op)

    def test_in_a_browser_log_in_compose_see_it_decompose_and_be_refused(self):
        yardd = self.start("--activity-interval", "1s")  # idle GPUs show within a second
        with Browser() as browser:
            def log_in(name, password):
                browser.wait_until("document.getElementById('login') !== null && !document.getElementById('login').hidden", what="the login form")
                browser.evaluate(f"document.getElementById('login-name').value = {json.dumps(name)};"
                                 f"document.getElementById('login-password').value = {json.dumps(password)};"
                                 "document.getElementById('login-submit').click()")
                browser.wait_until("document.body.dataset.loaded === 'true' && !document.getElementById('console').hidden",
                                   what=f"{name}'s console")

            def systems_table():
                return browser.evaluate("document.getElementById('systems').innerText")

            browser.open(yardd.metrics_url + "/")
            browser.wait_until("document.getElementById('login') !== null && !document.getElementById('login').hidden", what="the login form")
            browser.evaluate("document.getElementById('login-name').value = 'ops'; document.getElementById('login-password').value = 'nope';"
                             "document.getElementById('login-submit').click()")
            browser.wait_until("document.getElementById('login-error').textContent.includes('wrong name or password')", what="a refused login")
            log_in("ops", "ops-pw")
            self.assertIn("ops (operator)", browser.evaluate("document.getElementById('who').textContent"))
            self.assertNotIn("yard_session", browser.evaluate("document.cookie"), "HttpOnly: the page's scripts cannot read it")

            browser.evaluate("document.getElementById('compose-name').value = 'web1'; document.getElementById('compose-gpus').value = '2';"
                             "document.getElementById('compose-submit').click()")
            browser.wait_until("document.getElementById('systems').innerText.includes('web1') && "
                               "document.getElementById('systems').innerText.includes('composed')", timeout=30, what="web1 on the page")
            self.assertIn("compose web1: op-", browser.evaluate("document.getElementById('action-result').textContent"))

            # Attach one more GPU with its button, detach one with the × by its device; the idle view groups web1's idle
            # GPUs under its name, and Reclaim detaches one now.
            def device_count():
                return len(self.systems(_logged_in(yardd.metrics_url, "ops", "ops-pw"))["web1"]["devices"])
            browser.evaluate("document.querySelector('[data-testid=\"attach-web1\"]').click()")
            wait_for(lambda: device_count() == 3, timeout=30, what="web1 with a third GPU")
            first = self.systems(_logged_in(yardd.metrics_url, "ops", "ops-pw"))["web1"]["devices"][0]["id"]
            browser.wait_until(f"document.querySelector('[data-testid=\"detach-{first}\"]') !== null", what="the detach button")
            browser.evaluate(f"document.querySelector('[data-testid=\"detach-{first}\"]').click()")
            wait_for(lambda: device_count() == 2, timeout=30, what="web1 back to two GPUs")
            browser.wait_until("document.querySelectorAll('#idle tbody tr').length === 2 && "
                               "document.getElementById('idle').innerText.split('web1').length === 2 && "
                               f"!document.getElementById('idle').innerText.includes('{first}\t')", timeout=30,
                               what="web1's two idle GPUs (not the detached one), its name once")
            browser.evaluate("document.querySelector('#idle [data-testid^=\"reclaim-\"]').click()")
            wait_for(lambda: device_count() == 1, timeout=30,
                     what="an idle GPU reclaimed: " + browser.evaluate("document.getElementById('action-result').textContent"))

            # A change without the CSRF token, from the page itself, is refused.
            browser.evaluate("window.csrfStatus = 0; fetch('/api/v1/systems', {method: 'POST', credentials: 'same-origin', "
                             "headers: {'Content-Type': 'application/json'}, body: JSON.stringify({name: 'x', gpus: 1})})"
                             ".then((r) => { window.csrfStatus = r.status; })")
            self.assertEqual(browser.wait_until("window.csrfStatus", what="the token-less change's answer"), 403)

            # Pages per object (issue 63): the system's page from its name, an operation's steps from there, a device's page,
            # the tenant's usage; the back link returns to the pool.
            browser.evaluate("document.querySelector('[data-testid=\"link-system-web1\"]').click()")
            browser.wait_until("!document.getElementById('page').hidden && document.getElementById('page').innerText.includes('System web1') && "
                               "document.querySelector('[data-testid=\"page-devices\"]') !== null", what="web1's page")
            self.assertTrue(browser.evaluate("getComputedStyle(document.getElementById('systems').closest('section')).display === 'none'"),
                            "the pool's sections give way to the page")
            self.assertEqual(browser.evaluate("document.querySelectorAll('[data-testid=\"page-devices\"] tbody tr').length"), 1)
            browser.evaluate("document.querySelector('[data-testid=\"page-operations\"] a[href^=\"#/operation/\"]').click()")
            browser.wait_until("document.getElementById('page').innerText.includes('Operation op-') && "
                               "document.querySelector('[data-testid=\"page-steps\"]') !== null", what="an operation's page")
            self.assertIn("bind", browser.evaluate("document.querySelector('[data-testid=\"page-steps\"]').innerText"))
            browser.evaluate("document.querySelector('[data-testid=\"page-steps\"] a[href^=\"#/device/\"]').click()")
            browser.wait_until("document.getElementById('page').innerText.includes('Device ') && "
                               "document.querySelector('[data-testid=\"page-operations\"]') !== null", what="a device's page")
            browser.evaluate("location.hash = '#/tenant/default'")
            browser.wait_until("document.querySelector('[data-testid=\"page-usage\"]') !== null && "
                               "document.querySelector('[data-testid=\"page-usage\"]').innerText.includes('web1')", what="the tenant's usage")
            browser.evaluate("location.hash = '#/system/nope'")
            browser.wait_until("document.querySelector('[data-testid=\"page-error\"]') !== null", what="a missing system's page")
            self.assertIn("no system 'nope'", browser.evaluate("document.querySelector('[data-testid=\"page-error\"]').textContent"))
            browser.evaluate("document.querySelector('[data-testid=\"back\"]').click()")
            browser.wait_until("document.getElementById('page').hidden && "
                               "getComputedStyle(document.getElementById('systems').closest('section')).display !== 'none'", what="the pool again")

            browser.evaluate("document.querySelector('[data-testid=\"decompose-web1\"]').click()")
            browser.wait_until("!document.getElementById('systems').innerText.includes('web1')", timeout=30, what="web1 gone from the page")

            # A whole machine from a template (issue 62): the templates table says what each asks for and how many fit;
            # choosing one empties the GPU count, so the template's holds.
            browser.wait_until("document.getElementById('templates').innerText.includes('infer-1x')", what="the templates table")
            self.assertIn("1 GPU", browser.evaluate("document.getElementById('templates').innerText"))
            browser.evaluate("const t = document.getElementById('compose-template'); t.value = 'infer-1x'; t.dispatchEvent(new Event('change'));"
                             "document.getElementById('compose-name').value = 'svc'; document.getElementById('compose-submit').click()")
            wait_for(lambda: "svc" in self.systems(_logged_in(yardd.metrics_url, "ops", "ops-pw")), timeout=30,
                     what="svc composed: " + browser.evaluate("document.getElementById('action-result').textContent"))
            svc = wait_for(lambda: (lambda s: s if s["state"] == "composed" else None)(
                self.systems(_logged_in(yardd.metrics_url, "ops", "ops-pw"))["svc"]), timeout=30, what="svc composed")
            self.assertEqual(sorted(d["id"].split("-")[1].rstrip("0123456789") for d in svc["devices"]), ["gpu", "nic"], svc)
            browser.wait_until("document.querySelector('[data-testid=\"decompose-svc\"]') !== null", what="svc's row")
            browser.evaluate("document.querySelector('[data-testid=\"decompose-svc\"]').click()")
            browser.wait_until("!document.getElementById('systems').innerText.includes('svc')", timeout=30, what="svc gone from the page")

            # Pooled memory (issue 60): the Pooled memory table shows each switch's LDs; a compose from the form with
            # Memory GiB takes whole LDs from the host's switch, which the table and the system's page then show.
            browser.wait_until("document.getElementById('memory').innerText.includes('sw0') && "
                               "document.getElementById('summary').innerText.includes('512 GiB of 512 GiB')", what="the pooled memory table")
            browser.evaluate("{ const t = document.getElementById('compose-template'); t.value = ''; t.dispatchEvent(new Event('change')); }"
                             "document.getElementById('compose-name').value = 'mem'; document.getElementById('compose-gpus').value = '1';"
                             "document.getElementById('compose-memory').value = '128'; document.getElementById('compose-nics').value = '1';"
                             "document.getElementById('compose-nic-speed').value = '400'; document.getElementById('compose-submit').click()")
            mem = wait_for(lambda: (lambda s: s if s and s["state"] == "composed" else None)(
                self.systems(_logged_in(yardd.metrics_url, "ops", "ops-pw")).get("mem")), timeout=30,
                what="mem composed: " + browser.evaluate("document.getElementById('action-result').textContent"))
            self.assertEqual(sorted(d["id"].split("-")[1].rstrip("0123456789") for d in mem["devices"]), ["gpu", "mem", "mem", "nic"], mem)
            browser.wait_until("document.getElementById('summary').innerText.includes('384 GiB of 512 GiB')", timeout=30,
                               what="the free pooled memory less 128 GiB")
            browser.evaluate("document.querySelector('[data-testid=\"link-system-mem\"]').click()")
            browser.wait_until("document.getElementById('page').innerText.includes('System mem') && "
                               "document.getElementById('page').innerText.includes('128 GiB') && "
                               "document.getElementById('page').innerText.includes('(400 Gb/s)')", what="mem's page with its pooled memory and 400 Gb/s NIC")
            browser.evaluate("document.querySelector('[data-testid=\"back\"]').click()")
            browser.wait_until("document.querySelector('[data-testid=\"decompose-mem\"]') !== null", what="mem's row")
            browser.evaluate("document.querySelector('[data-testid=\"decompose-mem\"]').click()")
            browser.wait_until("!document.getElementById('systems').innerText.includes('mem')", timeout=30, what="mem gone from the page")

            browser.evaluate("document.getElementById('logout').click()")
            log_in("vic", "vic-pw")
            browser.evaluate("document.getElementById('compose-name').value = 'v1'; document.getElementById('compose-submit').click()")
            browser.wait_until("document.getElementById('action-result').textContent.includes('refused')", what="the viewer refused")
            self.assertIn("viewer role", browser.evaluate("document.getElementById('action-result').textContent"))
        self.assertEqual(set(self.systems(_logged_in(yardd.metrics_url, "ops", "ops-pw"))), set())

    def test_in_a_browser_other_device_classes_are_composed_by_name(self):
        """Issue 62: the compose form's Other devices field asks for devices of any other class by name (fpga=1), as
        yardctl's --endpoint does; the API refuses a class that has a field of its own, or a count out of range."""
        pool = write_fpga_pool(self.dir / "fpga-pool.json")
        yardd = self.start("--topology", str(pool))
        ops = _logged_in(yardd.metrics_url, "ops", "ops-pw")
        for bad, says in (({"nic": 1}, "'nic' is not another device class"), ({"fpga": 0}, "fpga: a count from 1 to 64"),
                          ({"fpga": "one"}, "fpga: a count from 1 to 64"), ({"FPGA": 1}, "'FPGA' is not another device class")):
            status, _, body = ops.change("POST", "/api/v1/systems", {"name": "x", "endpoints": bad})
            self.assertEqual(status, 400, body)
            self.assertIn(says, body["error"]["message"])
        status, _, body = ops.change("POST", "/api/v1/systems", {"name": "x", "endpoints": {"dpu": 2}})
        self.assertIn("no host can take 2 dpu(s)", body["error"]["message"])  # the pool has one
        with Browser() as browser:
            browser.open(yardd.metrics_url + "/")
            browser.wait_until("document.getElementById('login') !== null && !document.getElementById('login').hidden", what="the login form")
            browser.evaluate("document.getElementById('login-name').value = 'ops'; document.getElementById('login-password').value = 'ops-pw';"
                             "document.getElementById('login-submit').click()")
            browser.wait_until("document.body.dataset.loaded === 'true' && !document.getElementById('console').hidden", what="the console")
            browser.evaluate("document.getElementById('compose-name').value = 'infer'; document.getElementById('compose-gpus').value = '1';"
                             "document.getElementById('compose-endpoints').value = 'fpga=1, dpu=1'; document.getElementById('compose-submit').click()")
            infer = wait_for(lambda: (lambda s: s if s and s["state"] == "composed" else None)(self.systems(ops).get("infer")), timeout=30,
                             what="infer composed: " + browser.evaluate("document.getElementById('action-result').textContent"))
            self.assertEqual(sorted(d["id"] for d in infer["devices"]), ["sw0-dpu0", "sw0-fpga0", "sw0-gpu0"], infer)
            browser.wait_until("document.querySelector('[data-testid=\"link-system-infer\"]') !== null", timeout=30, what="infer's link")
            browser.evaluate("document.querySelector('[data-testid=\"link-system-infer\"]').click()")
            browser.wait_until("document.getElementById('page').innerText.includes('System infer') && "
                               "document.getElementById('page').innerText.includes('sw0-fpga0')", what="infer's page with its FPGA")
            browser.evaluate("document.querySelector('[data-testid=\"back\"]').click()")
            browser.wait_until("document.querySelector('[data-testid=\"decompose-infer\"]') !== null", what="infer's row")
            browser.evaluate("document.querySelector('[data-testid=\"decompose-infer\"]').click()")
            browser.wait_until("!document.getElementById('systems').innerText.includes('infer')", timeout=30, what="infer gone from the page")
            # A part without a count reaches yardd as 0 and is refused, saying which.
            browser.evaluate("document.getElementById('compose-name').value = 'y'; document.getElementById('compose-endpoints').value = 'fpga';"
                             "document.getElementById('compose-submit').click()")
            browser.wait_until("document.getElementById('action-result').textContent.includes('fpga: a count from 1 to 64')", what="a count-less class refused")

    def test_in_a_browser_a_quarantined_device_is_released_from_the_pool_view(self):
        """Issue 63, item 1: a device quarantined by a rollback the switch did not answer shows a release button in the
        pool view; an operator's click gives it back (the switch shows it unbound)."""
        yardd = self.start("--sim-timeout-next", "6", "--switch-timeout", "1", "--reconcile-interval", "3600")
        ops = _logged_in(yardd.metrics_url, "ops", "ops-pw")
        status, _, op = ops.change("POST", "/api/v1/systems", {"name": "doomed", "gpus": 1})
        self.assertEqual(status, 202, op)

        def state_of(device):
            _, _, pool = ops.call("GET", "/api/v1/pool")
            return next(d["state"] for sw in pool["switches"] for d in sw["devices"] if d["id"] == device)
        wait_for(lambda: any(d["state"] == "quarantined" for sw in ops.call("GET", "/api/v1/pool")[2]["switches"] for d in sw["devices"]),
                 timeout=60, what="a quarantined device")
        device = next(d["id"] for sw in ops.call("GET", "/api/v1/pool")[2]["switches"] for d in sw["devices"] if d["state"] == "quarantined")
        with Browser() as browser:
            browser.open(yardd.metrics_url + "/")
            browser.wait_until("document.getElementById('login') !== null && !document.getElementById('login').hidden", what="the login form")
            browser.evaluate("document.getElementById('login-name').value = 'ops'; document.getElementById('login-password').value = 'ops-pw';"
                             "document.getElementById('login-submit').click()")
            browser.wait_until(f"document.querySelector('[data-testid=\"release-{device}\"]') !== null", timeout=30, what="the release button")
            browser.evaluate(f"document.querySelector('[data-testid=\"release-{device}\"]').click()")
            wait_for(lambda: state_of(device) == "free", timeout=30,
                     what="the device back in the pool: " + browser.evaluate("document.getElementById('action-result').textContent"))
            browser.wait_until(f"document.querySelector('[data-testid=\"release-{device}\"]') === null", timeout=30, what="the button gone")


def _logged_in(base, name, password):
    http = Http(base)
    http.login(name, password)
    return http


if __name__ == "__main__":
    unittest.main()
