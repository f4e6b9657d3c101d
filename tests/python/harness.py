"""What the Python integration tests share: the real yardd started on loopback with port 0, its ports read
from its port files, a free port for tools that cannot report theirs (prometheus), and identities files.

Paths come from the environment ctest sets (tests/CMakeLists.txt): YARDD, YARDCTL, SWITCHYARD_SOURCE_DIR."""
import hashlib
import json
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import unittest
import urllib.request

YARDD = os.environ.get("YARDD", "build/bin/yardd")
YARDCTL = os.environ.get("YARDCTL", "build/bin/yardctl")
SOURCE_DIR = pathlib.Path(os.environ.get("SWITCHYARD_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2]))


def require_tool(name):
    """The tool's path. Missing: the test is skipped, unless SWITCHYARD_REQUIRE_TOOLS=1 (./test.sh sets it,
    since ./setup.sh installs them all): then it fails, so CI cannot pass by skipping."""
    path = shutil.which(name)
    if path:
        return path
    if os.environ.get("SWITCHYARD_REQUIRE_TOOLS") == "1":
        raise AssertionError(f"{name} is not installed; run ./setup.sh")
    raise unittest.SkipTest(f"needs {name} (./setup.sh installs it)")


def wait_for(predicate, timeout=20.0, interval=0.05, what="the condition"):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


def free_port():
    """A port free right now, for a program that cannot bind port 0 and tell us which it got."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def hash_password(password):
    """An identities file's password entry, made by yardd itself (yardd --hash-password reads it on stdin)."""
    return subprocess.run([YARDD, "--hash-password"], input=password, capture_output=True, text=True, check=True).stdout.strip()


def write_fpga_pool(path):
    """A one-switch pool with a GPU, an FPGA (class fpga) and a DPU (class dpu) on host0, for the other classes'
    tests (issue 62). Returns the path."""
    ports = [{"id": "sw0-usp0", "kind": "upstream"}] + [{"id": f"sw0-dsp{i}", "kind": "downstream"} for i in range(3)]
    path.write_text(json.dumps({
        "switches": [{"id": "sw0", "kind": "pcie", "model": "PEX89144", "ports": ports}],
        "hosts": [{"id": "host0", "upstreamPorts": [{"port": "sw0-usp0"}]}],
        "devices": [{"id": "sw0-gpu0", "kind": "gpu", "port": "sw0-dsp0", "model": "H100-SXM5-80GB", "memoryGiB": 80},
                    {"id": "sw0-fpga0", "kind": "fpga", "port": "sw0-dsp1", "model": "Alveo U55C"},
                    {"id": "sw0-dpu0", "kind": "dpu", "port": "sw0-dsp2", "model": "BlueField-3"}]}))
    return path


def write_identities(path, entries):
    """entries: (name, role, tenant or None, token); tokens are stored as their SHA-256, as yardd wants."""
    identities = []
    for name, role, tenant, token in entries:
        entry = {"name": name, "role": role, "token_sha256": hashlib.sha256(token.encode()).hexdigest()}
        if tenant:
            entry["tenant"] = tenant
        identities.append(entry)
    pathlib.Path(path).write_text(json.dumps({"identities": identities}), encoding="utf-8")
    os.chmod(path, 0o600)  # yardd refuses an identities file others may read


class Yardd:
    """yardd on 127.0.0.1 port 0 over plaintext gRPC (loopback), optionally with --metrics-listen."""

    def __init__(self, state_dir, *args, metrics=False, listen="127.0.0.1:0", env=None, tls=None):
        """tls: a directory of development certificates (./setup.sh dev-certs DIR): serve TLS with its yardd.pem
        instead of plaintext."""
        self.tls = tls
        self.env = None if env is None else {**os.environ, **env}
        self.state_dir = pathlib.Path(state_dir)
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.args = list(args)
        self.metrics = metrics
        self.listen = listen
        self.process = None

    def start(self, wait=True):
        """Starts yardd; with wait=False returns at once (a standby writes its port file only once it leads)."""
        port_file = self.state_dir / "port"
        metrics_file = self.state_dir / "metrics-port"
        for f in (port_file, metrics_file):
            f.unlink(missing_ok=True)
        transport = (["--tls-cert", str(self.tls / "yardd.pem"), "--tls-key", str(self.tls / "yardd.key")] if self.tls
                     else ["--plaintext"])
        command = [YARDD, "--state-dir", str(self.state_dir), "--listen", self.listen, *transport,
                   "--port-file", str(port_file), "--log-level", "info", *self.args]
        if self.metrics:
            command += ["--metrics-listen", "127.0.0.1:0", "--metrics-port-file", str(metrics_file)]
        self.log_path = self.state_dir / "yardd.log"
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=self.env)
        if not wait:
            return self
        return self.wait_serving()

    def wait_serving(self, timeout=20.0):
        port_file = self.state_dir / "port"
        metrics_file = self.state_dir / "metrics-port"
        wait_for(lambda: port_file.exists() or self.process.poll() is not None, timeout=timeout, what="yardd to serve")
        if self.process.poll() is not None:
            raise AssertionError(f"yardd exited with {self.process.returncode}:\n{self.log()}")
        self.port = int(port_file.read_text())
        self.address = f"127.0.0.1:{self.port}"
        if self.metrics:
            wait_for(metrics_file.exists, what="the metrics endpoint")
            self.metrics_port = int(metrics_file.read_text())
            self.metrics_url = f"http://127.0.0.1:{self.metrics_port}"
        return self

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def log(self):
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def yardctl(self, *args, check=True):
        result = subprocess.run([YARDCTL, "--plaintext", "--server", self.address, *args], capture_output=True, text=True, timeout=60)
        if check and result.returncode != 0:
            raise AssertionError(f"yardctl {' '.join(args)} exited {result.returncode}: {result.stderr}")
        return result

    def get(self, path, token=None, method="GET"):
        request = urllib.request.Request(self.metrics_url + path, method=method)
        if token:
            request.add_header("Authorization", f"Bearer {token}")
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.headers.get("Content-Type"), response.read().decode()


class YarddTestCase(unittest.TestCase):
    """A temporary directory per test, and the yardd processes it started stopped at the end (logs printed
    when the test failed)."""

    def setUp(self):
        self.dir = pathlib.Path(tempfile.mkdtemp(prefix="switchyard-py-"))
        self.daemons = []

    def tearDown(self):
        for d in self.daemons:
            d.stop()
        failed = any(error for _, error in getattr(self._outcome, "errors", []) if error) if hasattr(self._outcome, "errors") else False
        if not failed and hasattr(self._outcome, "result"):
            result = self._outcome.result
            failed = any(test is self for test, _ in result.failures + result.errors)
        if failed:
            for d in self.daemons:
                print(f"--- yardd log ({d.state_dir}) ---\n{d.log()[-6000:]}")
        shutil.rmtree(self.dir, ignore_errors=True)

    def yardd(self, *args, metrics=False, name="yardd", env=None):
        daemon = Yardd(self.dir / name, *args, metrics=metrics, env=env).start()
        self.daemons.append(daemon)
        return daemon
