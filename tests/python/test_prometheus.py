"""yardd's /metrics scraped by Debian's real Prometheus server (started here on loopback with a generated
config), asserted through Prometheus' own query API: the exposition parses, the counters, histograms and
pool gauges are there with the right values, and the scrape authenticates with a bearer token."""
import json
import pathlib
import subprocess
import unittest
import urllib.error
import urllib.parse
import urllib.request

from harness import YarddTestCase, require_tool, free_port, wait_for, write_identities
from switchyard_client import Client

MONITORING = pathlib.Path(__file__).resolve().parents[2] / "packaging" / "monitoring"


class PrometheusTest(YarddTestCase):
    def start_prometheus(self, target, token_file):
        port = free_port()
        config = self.dir / "prometheus.yml"
        config.write_text(f"""
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files: ["{MONITORING / 'switchyard-alerts.yml'}"]
scrape_configs:
  - job_name: switchyard
    metrics_path: /metrics
    authorization:
      type: Bearer
      credentials_file: {token_file}
    static_configs:
      - targets: ["{target}"]
""", encoding="utf-8")
        self.prometheus_log = self.dir / "prometheus.log"
        with open(self.prometheus_log, "wb") as log:
            self.prometheus = subprocess.Popen(
                [require_tool("prometheus"), f"--config.file={config}", f"--storage.tsdb.path={self.dir / 'tsdb'}",
                 f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"], stdout=log, stderr=subprocess.STDOUT)
        self.addCleanup(self.stop_prometheus)
        self.prometheus_url = f"http://127.0.0.1:{port}"
        wait_for(lambda: self.api("/-/ready", raw=True) is not None or self.prometheus.poll() is not None, what="prometheus to be ready")
        self.assertIsNone(self.prometheus.poll(), self.prometheus_log.read_text())

    def stop_prometheus(self):
        self.prometheus.terminate()
        try:
            self.prometheus.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.prometheus.kill()

    def api(self, path, raw=False):
        try:
            with urllib.request.urlopen(self.prometheus_url + path, timeout=5) as response:
                body = response.read().decode()
                return body if raw else json.loads(body)
        except (urllib.error.URLError, ConnectionError):
            return None

    def query(self, expression):
        reply = self.api("/api/v1/query?" + urllib.parse.urlencode({"query": expression}))
        if not reply or reply.get("status") != "success":
            return None
        return reply["data"]["result"]

    def value(self, expression):
        result = self.query(expression)
        return float(result[0]["value"][1]) if result else None

    def test_prometheus_scrapes_yardd_and_answers_queries_about_the_pool(self):
        require_tool("prometheus")
        token = "prometheus-secret-token"
        ids = self.dir / "identities.json"
        write_identities(ids, [("prometheus", "viewer", None, token), ("ops", "operator", None, "ops-token")])
        token_file = self.dir / "prometheus.token"
        token_file.write_text(token, encoding="utf-8")
        yardd = self.yardd("--identities", str(ids), metrics=True)

        # Without the token the endpoint refuses; with it, the exposition says what it is.
        with self.assertRaises(urllib.error.HTTPError) as refused:
            yardd.get("/metrics")
        self.assertEqual(refused.exception.code, 401)
        status, content_type, text = yardd.get("/metrics", token=token)
        self.assertEqual(status, 200)
        self.assertEqual(content_type, "text/plain; version=0.0.4; charset=utf-8")
        self.assertIn("# TYPE switchyard_operation_duration_seconds histogram", text)

        with Client(yardd.address, plaintext=True, token="ops-token") as yard:
            for name, gpus in (("train-a", 4), ("train-b", 2), ("infer-c", 1)):
                yard.wait(yard.compose(name, gpus=gpus).id)
            yard.wait(yard.decompose("infer-c").id)
            with self.assertRaises(Exception):
                yard.compose("train-a", gpus=1)  # refused: the name is taken

        self.start_prometheus(f"127.0.0.1:{yardd.metrics_port}", token_file)
        wait_for(lambda: self.value('up{job="switchyard"}') == 1, timeout=30, what="a successful scrape")
        targets = self.api("/api/v1/targets")["data"]["activeTargets"]
        self.assertEqual(targets[0]["lastError"], "", "Prometheus parsed the exposition without complaint")

        self.assertEqual(self.value('switchyard_operations_total{kind="compose",result="succeeded"}'), 3)
        self.assertEqual(self.value('switchyard_operations_total{kind="decompose",result="succeeded"}'), 1)
        self.assertEqual(self.value('switchyard_requests_refused_total{action="compose",code="ALREADY_EXISTS"}'), 1)
        self.assertEqual(self.value('sum(switchyard_devices{state="allocated"})'), 6)
        self.assertEqual(self.value('sum(switchyard_devices)'), 40, "the embedded pool: 16 GPUs, 8 NICs, 8 drives, 8 pooled memory LDs")
        self.assertEqual(self.value('sum(switchyard_devices{kind="gpu"})'), 16, "devices by kind (issue 62)")
        self.assertEqual(self.value('sum(switchyard_devices{kind="nic",state="free"})'), 8)
        self.assertEqual(self.value('sum(switchyard_endpoints_beside_free_gpus{kind="nic"})'), 8, "every switch still has a free GPU")
        self.assertEqual(self.value('switchyard_systems{state="composed"}'), 2)
        self.assertEqual(self.value('count(switchyard_device_info{UUID=~"GPU-.+", pci_bus_id!=""})'), 6,
                         "each device in a system carries its host UUID and PCI address, named as DCGM exporter names them")
        # The capacity gauges come from a cache that serves a costly report as it stands while it makes the next
        # (under ASan even 16 GPUs can be costly): a later scrape has the current one.
        wait_for(lambda: self.value('switchyard_gpus_free') == 10, timeout=30, what="the capacity gauges to catch up")
        self.assertEqual(self.value('switchyard_gpus_stranded'), 0)
        # Two 8-GPU switches; train-a (4) and train-b (2) share one of them: one 8-GPU group is left.
        self.assertEqual(self.value('switchyard_capacity_placeable{gpus="8"}'), 1)
        self.assertEqual(self.value('switchyard_capacity_placeable{gpus="16"}'), 0)
        # One driver: one fabric domain, "default", holding all of it.
        self.assertEqual(self.value('switchyard_domain_gpus_free{domain="default"}'), 10)
        self.assertEqual(self.value('switchyard_domain_capacity_placeable{domain="default",gpus="8"}'), 1)
        self.assertEqual(self.value('sum(switchyard_pooled_memory_gib{state="free"})'), 512, "pooled memory in GiB (issue 60)")
        self.assertEqual(self.value('switchyard_pooled_memory_gib{switch="sw0",state="total"}'), 256)
        self.assertEqual(self.value('switchyard_step_duration_seconds_count{step="bind",result="ok"}'), 3)
        self.assertGreaterEqual(self.value('switchyard_switch_calls_total{call="bind",result="ok"}'), 3)
        self.assertGreater(self.value('switchyard_store_write_duration_seconds_count'), 5)
        self.assertIsNotNone(self.query('switchyard_mig_capacity{profile="1g",on="free_gpus"}'))
        # Histograms are usable as histograms.
        p50 = self.value('histogram_quantile(0.5, sum by (le) (switchyard_operation_duration_seconds_bucket{kind="compose"}))')
        self.assertIsNotNone(p50)
        self.assertGreater(p50, 0)
        self.assertLess(p50, 10)

        self.check_shipped_monitoring(yardd)

    def check_shipped_monitoring(self, yardd):
        """The alert rules load and evaluate, and every query of the Grafana dashboard parses and finds data in a
        Prometheus that scrapes a real yardd (with a queue: one request waits, one was cancelled)."""
        with Client(yardd.address, plaintext=True, token="ops-token") as yard:
            yard.compose("big", gpus=16, queue=True)
            cancelled = yard.compose("big-later", gpus=16, queue=True)
            yard.cancel_queued(cancelled.id)
        wait_for(lambda: self.value('sum(switchyard_queue_requests)') == 1, timeout=30, what="the queue in a scrape")
        wait_for(lambda: self.value('sum(switchyard_queue_wait_seconds_count)') == 1, timeout=30, what="the cancel in a scrape")
        # rate() over the dashboard's window needs a few samples of the new series.
        wait_for(lambda: (self.value('min(count_over_time(switchyard_queue_entered_total[15s]))') or 0) >= 3, timeout=30,
                 what="three scrapes of the queue's counters")

        groups = wait_for(lambda: (self.api("/api/v1/rules") or {}).get("data", {}).get("groups"), timeout=30, what="rules loaded")
        rules = [r for g in groups for r in g["rules"]]
        self.assertEqual(len(rules), 12, [r["name"] for r in rules])
        wait_for(lambda: all(r.get("health") == "ok" for g in self.api("/api/v1/rules")["data"]["groups"] for r in g["rules"]),
                 timeout=30, what="every alert rule evaluated without error")
        firing = {a["labels"]["alertname"] for a in self.api("/api/v1/alerts")["data"]["alerts"]}
        self.assertNotIn("SwitchyardDown", firing)
        self.assertNotIn("SwitchyardStoreWriteErrors", firing)

        dashboard = json.loads((MONITORING / "switchyard-dashboard.json").read_text(encoding="utf-8"))
        # Series that appear only once the event has happened (nobody's lease expired, nobody was preempted,
        # nothing drifted, no switch call failed, no GPU was sampled idle or reclaimed): their queries must parse, and may be empty.
        # A subquery stepped on whole minutes ([24h:1m]) finds data only from the first whole minute of scrapes on.
        only_after_the_event = ("switchyard_lease_expiries_total", "switchyard_preemptions_total", "switchyard_drifts_total",
                                "switchyard_gpus_idle", "switchyard_reclaimed_gpus_total", "[24h:1m]")
        queries = [(panel["title"], t["expr"]) for panel in dashboard["panels"] for t in panel.get("targets", [])]
        self.assertGreater(len(queries), 25)
        for title, expr in queries:
            with self.subTest(panel=title, expr=expr):
                concrete = expr.replace("$__rate_interval", "15s").replace("$instance", ".+")
                reply = self.api("/api/v1/query?" + urllib.parse.urlencode({"query": concrete}))
                self.assertIsNotNone(reply, "Prometheus refused the query")
                self.assertEqual(reply.get("status"), "success", reply)
                if not any(name in expr for name in only_after_the_event):
                    self.assertTrue(reply["data"]["result"], "no data: does the metric or label exist?")
        instance_values = [v for v in dashboard["templating"]["list"] if v["name"] == "instance"][0]["definition"]
        self.assertEqual(instance_values, "label_values(switchyard_build_info, instance)")
        self.assertTrue(self.query("switchyard_build_info"))


if __name__ == "__main__":
    unittest.main()
