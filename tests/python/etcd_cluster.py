"""Real etcd members (Debian's etcd-server) on loopback for the Python tests: free ports, a data directory
each, the same settings as tests/support/etcd_cluster.h (election timeout 1 s, --max-txn-ops 16384)."""
import json
import subprocess
import time
import urllib.request

from harness import free_port, require_tool, wait_for


class EtcdCluster:
    def __init__(self, directory, members=3):
        self.dir = directory
        self.members = [{"name": f"m{i}", "client": free_port(), "peer": free_port(), "process": None} for i in range(members)]

    def start(self):
        etcd = require_tool("etcd")
        initial = ",".join(f"{m['name']}=http://127.0.0.1:{m['peer']}" for m in self.members)
        for m in self.members:
            self._start(etcd, m, initial)
        wait_for(self.healthy, timeout=30, what="etcd to elect a leader")
        return self

    def _start(self, etcd, m, initial):
        client = f"http://127.0.0.1:{m['client']}"
        peer = f"http://127.0.0.1:{m['peer']}"
        with open(self.dir / f"{m['name']}.log", "ab") as log:
            m["process"] = subprocess.Popen(
                [etcd, "--name", m["name"], "--data-dir", str(self.dir / m["name"]), "--listen-client-urls", client,
                 "--advertise-client-urls", client, "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                 "--initial-cluster", initial, "--initial-cluster-state", "new", "--initial-cluster-token", self.dir.name,
                 "--max-txn-ops", "16384", "--heartbeat-interval", "100", "--election-timeout", "1000", "--log-level", "warn"],
                stdout=log, stderr=subprocess.STDOUT)

    def healthy(self):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.members[0]['client']}/health", timeout=1) as r:
                return json.loads(r.read()).get("health") == "true"
        except OSError:
            return False

    def store_url(self, prefix="/switchyard/"):
        return "etcd://" + ",".join(f"127.0.0.1:{m['client']}" for m in self.members) + prefix

    def get(self, key):
        import base64
        body = json.dumps({"key": base64.b64encode(key.encode()).decode()}).encode()
        for m in self.members:
            try:
                with urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{m['client']}/v3/kv/range", data=body), timeout=2) as r:
                    kvs = json.loads(r.read()).get("kvs", [])
                    return base64.b64decode(kvs[0]["value"]).decode() if kvs else None
            except OSError:
                continue
        return None

    def stop(self):
        for m in self.members:
            if m["process"] and m["process"].poll() is None:
                m["process"].kill()
                m["process"].wait()
