"""The dashboard in a real browser: Debian's headless Chromium loads yardd's page, which draws from
/api/v1; a system composed through the API must show on it (its name, its devices' UUIDs, the operation
with its steps), and one composed while the page is open must appear without a reload, pushed by the
event stream. SWITCHYARD_SCREENSHOT=PATH also saves a picture (docs/images/dashboard.png is made so)."""
import html
import os
import re
import time
import unittest
import urllib.error

from browser import Browser
from harness import YarddTestCase, write_identities
from switchyard_client import Client
from switchyard.v1 import switchyard_pb2



def load(browser, url):
    """Opens the dashboard and waits for its first drawing."""
    browser.open(url)
    browser.wait_until("document.body && document.body.dataset.loaded === 'true'", what="the page to load its data")
    return browser.dom()


class DashboardTest(YarddTestCase):
    def test_a_composed_system_shows_on_the_dashboard(self):
        yardd = self.yardd("--capacity-sample-seconds", "0.2", metrics=True)
        with Client(yardd.address, plaintext=True, caller="dashboard-test") as yard:
            yard.wait(yard.compose("web-demo", gpus=4).id)
            yard.wait(yard.compose("small-job", gpus=1).id)
            system = yard.system("web-demo")
            waiting = yard.compose("big-wait", gpus=16, queue=True, priority_class="production", lease_seconds=9000)
            self.assertEqual(waiting.state, switchyard_pb2.OPERATION_STATE_QUEUED)
            self.assertEqual([e.name for e in yard.queue()], ["big-wait"])
        with Browser() as browser:
            load(browser, yardd.metrics_url + "/")
            # Two capacity samples, 0.2 s apart, make a line; the page redraws them within its 30 s refresh.
            browser.wait_until("document.querySelector('#capacity-chart polyline') !== null", timeout=40, what="the capacity history")
            dom = browser.dom()
            shot = os.environ.get("SWITCHYARD_SCREENSHOT")
            if shot:
                browser.screenshot(shot)
                self.assertTrue(os.path.getsize(shot) > 10000)
        self.assertNotIn("cannot reach yardd", dom)
        summary = dom[dom.index('data-testid="summary"'):dom.index('data-testid="capacity"')]
        self.assertRegex(summary, r'<div class="value">8 of 8</div><div class="label">free NICs</div>', "the pool's NICs and drives (issue 62)")
        self.assertRegex(summary, r'<div class="value">8 of 8</div><div class="label">free drives</div>')
        self.assertRegex(summary, r'<div class="value">512 GiB of 512 GiB</div><div class="label">free pooled memory</div>',
                         "pooled memory in GiB (issue 60), not a count of LDs")
        memory = dom[dom.index('data-testid="memory"'):dom.index('data-testid="hosts"')]
        self.assertIn("<td>sw0</td><td>default</td><td>256 GiB</td><td>4</td><td>256 GiB in 4 LDs</td><td>0%</td>", memory)
        systems = dom[dom.index('data-testid="systems"'):dom.index('data-testid="operations"')]
        self.assertIn("web-demo", systems)
        self.assertIn("small-job", systems)
        for binding in system.bindings:
            self.assertIn(binding.uuid, systems, "the system's GPUs with their host UUIDs")
        switches = dom[dom.index('data-testid="switches"'):dom.index('data-testid="hosts"')]
        self.assertEqual(len(re.findall(r'class="device allocated"', switches)), 5)
        self.assertEqual(len(re.findall(r'class="device free"', switches)), 35, "11 GPUs, 8 NICs, 8 drives and 8 pooled memory LDs")
        self.assertIn(html.escape("sw0-gpu0 · web-demo"), switches)
        queue = dom[dom.index('data-testid="queue"'):dom.index('data-testid="operations"')]
        self.assertIn("big-wait", queue, "the queue panel lists what waits")
        self.assertIn("production", queue)
        self.assertIn("16 GPU(s)", queue)
        self.assertIn("<td>2h30m</td>", queue, "the lease it will have once admitted")
        self.assertRegex(systems, r"web-demo</a></td>(<td>.*?</td>){5}<td>batch</td>", "the priority class of each system")
        operations = dom[dom.index('data-testid="operations"'):dom.index('data-testid="events"')]
        for step in ("reserve", "bind", "verify", "host-admit", "commit"):
            self.assertIn(f'class="step done"', operations)
            self.assertIn(step, operations)
        self.assertIn("dashboard-test", operations)
        self.assertIn("web-demo", operations, "operations name their system")
        capacity = dom[dom.index('data-testid="capacity"'):dom.index('data-testid="capacity-chart"')]
        self.assertRegex(capacity, r'<div class="value">1</div><div class="label">8-GPU requests')

    def test_the_chart_has_axes_systems_show_mig_and_shares_and_times_are_utc(self):
        yardd = self.yardd("--capacity-sample-seconds", "0.2", metrics=True)
        with Client(yardd.address, plaintext=True, caller="dashboard-test") as yard:
            yard.wait(yard.compose("infer", mig_profiles=["3g", "2g"]).id)
            yard.wait(yard.compose("notebook", share_milli=250).id)
        with Browser() as browser:
            load(browser, yardd.metrics_url + "/")
            browser.wait_until("document.querySelector('#capacity-chart polyline') !== null", timeout=40, what="the capacity history")
            dom = browser.dom()
        chart = dom[dom.index('data-testid="capacity-chart"'):dom.index('id="capacity-legend"')]
        self.assertGreaterEqual(chart.count('class="axis"'), 6, "three values up the side, three times along the bottom")
        self.assertGreaterEqual(chart.count("<polyline"), 2)
        widths = re.findall(r'<polyline[^>]*stroke-width="([0-9.]+)"', chart)
        self.assertEqual(len(set(widths)), len(widths), "each line thinner than the last, so equal ones stay visible")
        # Capacity is drawn as steps (issue 63): every segment is level or upright, never a slope between samples.
        for points in re.findall(r'<polyline[^>]*points="([^"]+)"', chart):
            xy = [tuple(float(v) for v in p.split(",")) for p in points.split()]
            self.assertGreaterEqual(len(xy), 3)
            for (x0, y0), (x1, y1) in zip(xy, xy[1:]):
                self.assertTrue(x0 == x1 or y0 == y1, f"a slope from {(x0, y0)} to {(x1, y1)}")
        systems = dom[dom.index('data-testid="systems"'):dom.index('data-testid="queue"')]
        self.assertIn("MIG / shares", systems)
        self.assertRegex(systems, r"3g on sw\d-gpu\d+, 2g on sw\d-gpu\d+")
        self.assertRegex(systems, r"25% of sw\d-gpu\d+")
        status = dom[dom.index('id="status"'):dom.index("</header>")]
        self.assertRegex(status, r"updated \d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ", "the page's own time is UTC, as every other time on it")
        events = dom[dom.index('data-testid="events"'):]
        self.assertRegex(events, r"<td>\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ</td>")

    def test_the_page_redraws_when_something_changes(self):
        yardd = self.yardd(metrics=True)
        with Browser() as browser, Client(yardd.address, plaintext=True, caller="dashboard-test") as yard:
            load(browser, yardd.metrics_url + "/")
            browser.wait_until("document.getElementById('status').textContent.startsWith('live')", what="the event stream to open")
            started = time.monotonic()
            yard.wait(yard.compose("pushed-job", gpus=2).id)
            # With the stream open the page polls only every 30 s: seeing it sooner means the change was pushed.
            browser.wait_until("document.getElementById('systems').textContent.includes('pushed-job')", timeout=10,
                               what="the new system on the page")
            self.assertLess(time.monotonic() - started, 10)
            browser.wait_until("document.getElementById('events').textContent.includes('operation.succeeded')", what="its events on the page")
            self.assertTrue(browser.evaluate("document.getElementById('status').textContent.startsWith('live')"))

    def test_when_yardd_cannot_be_reached_every_table_says_it_is_stale(self):
        """Issue 63, item 1: the page keeps what yardd last said, and says on every tile and table that it is stale."""
        yardd = self.yardd(metrics=True)
        with Browser() as browser:
            load(browser, yardd.metrics_url + "/")
            self.assertFalse(browser.evaluate("document.getElementById('console').classList.contains('stale')"))
            yardd.stop()
            browser.wait_until("document.getElementById('console').classList.contains('stale')", timeout=30, what="the page marked stale")
            self.assertTrue(browser.evaluate("document.getElementById('status').textContent.startsWith('stale: cannot reach yardd')"))
            marked = browser.evaluate("Array.from(document.querySelectorAll('#console section h2'))"
                                      ".map((h) => getComputedStyle(h, '::after').content)")
            self.assertTrue(marked and all("(stale)" in m for m in marked), marked)
            self.assertIn("GPUs in the pool", browser.evaluate("document.getElementById('summary').textContent"), "what it last said stays")

    def test_several_fabric_domains_show_their_own_capacity(self):
        yardd = self.yardd("--domain", "east=simulated,generate-gpus=32", "--domain", "west=simulated,generate-gpus=16,state=none",
                           metrics=True)
        with Client(yardd.address, plaintext=True, caller="dashboard-test") as yard:
            yard.wait(yard.compose("east-job", gpus=8, host="east-host0").id)
        with Browser() as browser:
            dom = load(browser, yardd.metrics_url + "/")
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
        # The page itself is open (it holds no data: it shows its login form); its data is not.
        status, _, page = yardd.get("/")
        self.assertEqual(status, 200)
        self.assertIn("<title>Switchyard</title>", page)
        with self.assertRaises(urllib.error.HTTPError) as refused:
            yardd.get("/api/v1/pool")
        self.assertEqual(refused.exception.code, 401)
        self.assertIn("Basic", refused.exception.headers.get("WWW-Authenticate"))
        status, _, _ = yardd.get("/api/v1/pool", token="view-token")
        self.assertEqual(status, 200)
        with self.assertRaises(urllib.error.HTTPError) as tenant:
            yardd.get("/metrics", token="a-token")
        self.assertEqual(tenant.exception.code, 403, "a tenant may not see the whole pool's metrics")
        status, _, body = yardd.get("/healthz")
        self.assertEqual((status, body), (200, "ok\n"))
        # HEAD of the event stream answers what a GET would start (its type), without starting it.
        status, kind, body = yardd.get("/api/v1/events/stream", token="view-token", method="HEAD")
        self.assertEqual((status, kind, body), (200, "text/event-stream", ""))
        with self.assertRaises(urllib.error.HTTPError) as posted:
            yardd.get("/api/v1/events/stream", token="view-token", method="POST")
        self.assertEqual(posted.exception.code, 405)
        self.assertEqual(posted.exception.headers.get("Allow"), "GET, HEAD")


if __name__ == "__main__":
    unittest.main()
