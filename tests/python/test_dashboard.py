"""The dashboard in a real browser: Debian's headless Chromium loads yardd's page, which draws from
/api/v1; a system composed through the API must show on it (its name, its devices' UUIDs, the operation
with its steps). SWITCHYARD_SCREENSHOT=PATH also saves a picture (docs/images/dashboard.png is made so)."""
import html
import os
import re
import subprocess
import unittest
import urllib.error

from harness import YarddTestCase, require_tool, write_identities
from switchyard_client import Client
from switchyard.v1 import switchyard_pb2



def chromium(*args, timeout=90):
    command = [require_tool("chromium"), "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
               "--disable-dev-shm-usage", "--virtual-time-budget=8000", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, env={**os.environ, "HOME": os.environ.get("TMPDIR", "/tmp")})


class DashboardTest(YarddTestCase):
    def test_a_composed_system_shows_on_the_dashboard(self):
        require_tool("chromium")
        yardd = self.yardd("--capacity-sample-seconds", "0.2", metrics=True)
        with Client(yardd.address, plaintext=True, caller="dashboard-test") as yard:
            yard.wait(yard.compose("web-demo", gpus=4).id)
            yard.wait(yard.compose("small-job", gpus=1).id)
            system = yard.system("web-demo")
            waiting = yard.compose("big-wait", gpus=16, queue=True, priority_class="production")
            self.assertEqual(waiting.state, switchyard_pb2.OPERATION_STATE_QUEUED)
            self.assertEqual([e.name for e in yard.queue()], ["big-wait"])
        dom = chromium("--dump-dom", yardd.metrics_url + "/").stdout
        self.assertIn('data-loaded="true"', dom, "the page loaded its data")
        self.assertNotIn("cannot reach yardd", dom)
        systems = dom[dom.index('data-testid="systems"'):dom.index('data-testid="operations"')]
        self.assertIn("web-demo", systems)
        self.assertIn("small-job", systems)
        for binding in system.bindings:
            self.assertIn(binding.uuid, systems, "the system's GPUs with their host UUIDs")
        switches = dom[dom.index('data-testid="switches"'):dom.index('data-testid="hosts"')]
        self.assertEqual(len(re.findall(r'class="device allocated"', switches)), 5)
        self.assertEqual(len(re.findall(r'class="device free"', switches)), 11)
        self.assertIn(html.escape("sw0-gpu0 · web-demo"), switches)
        queue = dom[dom.index('data-testid="queue"'):dom.index('data-testid="operations"')]
        self.assertIn("big-wait", queue, "the queue panel lists what waits")
        self.assertIn("production", queue)
        self.assertIn("16 GPU(s)", queue)
        operations = dom[dom.index('data-testid="operations"'):dom.index('data-testid="events"')]
        for step in ("reserve", "bind", "verify", "host-admit", "commit"):
            self.assertIn(f'class="step done"', operations)
            self.assertIn(step, operations)
        self.assertIn("dashboard-test", operations)
        self.assertIn("web-demo", operations, "operations name their system")
        capacity = dom[dom.index('data-testid="capacity"'):dom.index('data-testid="capacity-chart"')]
        self.assertRegex(capacity, r'<div class="value">1</div><div class="label">8-GPU requests')
        self.assertIn("<polyline", dom, "the capacity history is drawn once samples exist")

        shot = os.environ.get("SWITCHYARD_SCREENSHOT")
        if shot:
            chromium("--window-size=1400,1650", f"--screenshot={shot}", yardd.metrics_url + "/")
            self.assertTrue(os.path.getsize(shot) > 10000)

    def test_several_fabric_domains_show_their_own_capacity(self):
        require_tool("chromium")
        yardd = self.yardd("--domain", "east=simulated,generate-gpus=32", "--domain", "west=simulated,generate-gpus=16,state=none",
                           metrics=True)
        with Client(yardd.address, plaintext=True, caller="dashboard-test") as yard:
            yard.wait(yard.compose("east-job", gpus=8, host="east-host0").id)
        dom = chromium("--dump-dom", yardd.metrics_url + "/").stdout
        self.assertIn('data-loaded="true"', dom, "the page loaded its data")
        start = dom.index('data-testid="domains"')
        domains = dom[dom.rindex("<table", 0, start):dom.index("</table>", start)]
        self.assertNotIn("hidden", domains, "two domains: the per-domain table is shown")
        rows = re.findall(r"<tr><td>(\w+)</td><td>(\d+)</td><td>(\d+)</td>", domains)
        self.assertEqual(rows, [("east", "24", "0"), ("west", "16", "0")], domains)
        switches = dom[dom.index('data-testid="switches"'):dom.index('data-testid="hosts"')]
        self.assertIn("domain east", switches)
        self.assertIn("domain west", switches)

    def test_with_identities_the_page_asks_for_credentials(self):
        ids = self.dir / "identities.json"
        write_identities(ids, [("viewer", "viewer", None, "view-token"), ("tenant-a", "tenant", "team-a", "a-token")])
        yardd = self.yardd("--identities", str(ids), metrics=True)
        with self.assertRaises(urllib.error.HTTPError) as refused:
            yardd.get("/")
        self.assertEqual(refused.exception.code, 401)
        self.assertIn("Basic", refused.exception.headers.get("WWW-Authenticate"))
        status, _, page = yardd.get("/", token="view-token")
        self.assertEqual(status, 200)
        self.assertIn("<title>Switchyard</title>", page)
        with self.assertRaises(urllib.error.HTTPError) as tenant:
            yardd.get("/metrics", token="a-token")
        self.assertEqual(tenant.exception.code, 403, "a tenant may not see the whole pool's metrics")
        status, _, body = yardd.get("/healthz")
        self.assertEqual((status, body), (200, "ok\n"))


if __name__ == "__main__":
    unittest.main()
