"""Real etcd members (Debian's etcd-server) on loopback for the Python tests: free ports, a data directory
each, the same settings as tests/support/etcd_cluster.h (election timeout 1 s, --max-txn-ops 16384).

Secured as an operator would run it (issue 39 item 10): with `tls` (a ./setup.sh dev-certs directory and the
client certificate to present) clients reach the members over https and must show a certificate the CA
signed; enable_auth() turns etcd's users on through etcdctl."""
import base64
import json
import os
import ssl
import subprocess
import time
import urllib.request

from harness import free_port, require_tool, wait_for


class EtcdCluster:
    def __init__(self, directory, members=3, tls=None):
        """tls: {"certs": DIR (ca.pem, etcd.pem/.key), "cert": client PEM, "key": its key} or None for plain HTTP."""
        self.dir = directory
        self.tls = tls
        self.auth = None  # (user, password) once enable_auth ran
        self.scheme = "https" if tls else "http"
        self.members = [{"name": f"m{i}", "client": free_port(), "peer": free_port(), "process": None} for i in range(members)]

    def start(self):
        etcd = require_tool("etcd")
        initial = ",".join(f"{m['name']}=http://127.0.0.1:{m['peer']}" for m in self.members)
        for m in self.members:
            self._start(etcd, m, initial)
        wait_for(self.healthy, timeout=30, what="etcd to elect a leader")
        return self

    def _start(self, etcd, m, initial):
        client = f"{self.scheme}://127.0.0.1:{m['client']}"
        secured = []
        if self.tls:
            certs = self.tls["certs"]
            secured = ["--cert-file", str(certs / "etcd.pem"), "--key-file", str(certs / "etcd.key"), "--client-cert-auth",
                       "--trusted-ca-file", str(certs / "ca.pem")]
        peer = f"http://127.0.0.1:{m['peer']}"
        with open(self.dir / f"{m['name']}.log", "ab") as log:
            m["process"] = subprocess.Popen(
                [etcd, "--name", m["name"], "--data-dir", str(self.dir / m["name"]), "--listen-client-urls", client,
                 "--advertise-client-urls", client, "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                 "--initial-cluster", initial, "--initial-cluster-state", "new", "--initial-cluster-token", self.dir.name,
                 "--max-txn-ops", "16384", "--heartbeat-interval", "100", "--election-timeout", "1000", "--log-level", "warn",
                 *secured],
                stdout=log, stderr=subprocess.STDOUT)

    def _context(self):
        if not self.tls:
            return None
        context = ssl.create_default_context(cafile=str(self.tls["certs"] / "ca.pem"))
        context.load_cert_chain(str(self.tls["cert"]), str(self.tls["key"]))
        return context

    def _url(self, m, path):
        return f"{self.scheme}://127.0.0.1:{m['client']}{path}"

    def healthy(self):
        try:
            with urllib.request.urlopen(self._url(self.members[0], "/health"), timeout=1, context=self._context()) as r:
                return json.loads(r.read()).get("health") == "true"
        except OSError:
            return False

    def enable_auth(self, user, password, prefix):
        """A root user, a role with read-write on `prefix` for `user`, then `auth enable`, through etcdctl."""
        etcdctl = require_tool("etcdctl")
        base = [etcdctl, "--endpoints", ",".join(self._url(m, "") for m in self.members)]
        if self.tls:
            base += ["--cacert", str(self.tls["certs"] / "ca.pem"), "--cert", str(self.tls["cert"]), "--key", str(self.tls["key"])]
        for step in (["user", "add", f"root:root-{password}"], ["user", "grant-role", "root", "root"], ["role", "add", "switchyard"],
                     ["role", "grant-permission", "switchyard", "--prefix=true", "readwrite", prefix], ["user", "add", f"{user}:{password}"],
                     ["user", "grant-role", user, "switchyard"], ["auth", "enable"]):
            subprocess.run(base + step, check=True, capture_output=True, env={**os.environ, "ETCDCTL_API": "3"}, timeout=30)
        self.auth = (user, password)

    def _token(self, m):
        if not self.auth:
            return None
        body = json.dumps({"name": self.auth[0], "password": self.auth[1]}).encode()
        with urllib.request.urlopen(urllib.request.Request(self._url(m, "/v3/auth/authenticate"), data=body), timeout=2,
                                    context=self._context()) as r:
            return json.loads(r.read())["token"]

    def store_url(self, prefix="/switchyard/"):
        return ("etcds://" if self.tls else "etcd://") + ",".join(f"127.0.0.1:{m['client']}" for m in self.members) + prefix

    def get(self, key):
        body = json.dumps({"key": base64.b64encode(key.encode()).decode()}).encode()
        for m in self.members:
            try:
                token = self._token(m)
                request = urllib.request.Request(self._url(m, "/v3/kv/range"), data=body, headers={"Authorization": token} if token else {})
                with urllib.request.urlopen(request, timeout=2, context=self._context()) as r:
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
