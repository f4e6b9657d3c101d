"""Debian's headless Chromium, driven over the DevTools protocol on a pipe (--remote-debugging-pipe: JSON
messages ending in NUL on fds 3 and 4), so a test can load a page, wait until the page says it is ready,
act meanwhile, and read the DOM again. `--dump-dom` cannot serve a page that keeps a request open (the
dashboard's event stream): its virtual time never advances while a fetch is pending."""
import base64
import json
import os
import select
import subprocess
import time

from harness import require_tool


class Browser:
    def __init__(self, width=1400, height=1650):
        read_theirs, self._write = os.pipe()  # we write commands; Chromium reads them on its fd 3
        self._read, write_theirs = os.pipe()  # Chromium writes replies and events on its fd 4
        home = os.environ.get("TMPDIR", "/tmp")
        command = [require_tool("chromium"), "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
                   "--disable-dev-shm-usage", "--remote-debugging-pipe", f"--window-size={width},{height}", "about:blank"]
        self._process = subprocess.Popen(["bash", "-c", f'exec "$@" 3<&{read_theirs} 4>&{write_theirs}', "chromium", *command],
                                         pass_fds=(read_theirs, write_theirs), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                         env={**os.environ, "HOME": home})
        os.close(read_theirs)
        os.close(write_theirs)
        self._buffer = b""
        self._next_id = 0
        page = next(t for t in self._call("Target.getTargets")["targetInfos"] if t["type"] == "page")
        self._session = self._call("Target.attachToTarget", targetId=page["targetId"], flatten=True)["sessionId"]

    def close(self):
        if self._process.poll() is None:
            self._process.kill()
        self._process.wait(timeout=10)
        os.close(self._write)
        os.close(self._read)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _call(self, method, session=None, timeout=30, **params):
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        os.write(self._write, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            while b"\0" in self._buffer:
                raw, self._buffer = self._buffer.split(b"\0", 1)
                reply = json.loads(raw)
                if reply.get("id") == self._next_id:
                    if "error" in reply:
                        raise RuntimeError(f"{method}: {reply['error']}")
                    return reply["result"]
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._read], [], [], left)[0]:
                raise TimeoutError(f"Chromium did not answer {method} in {timeout} s")
            chunk = os.read(self._read, 1 << 20)
            if not chunk:
                raise RuntimeError("Chromium exited")
            self._buffer += chunk

    def open(self, url):
        self._call("Page.navigate", self._session, url=url)

    def evaluate(self, expression):
        result = self._call("Runtime.evaluate", self._session, expression=expression, returnByValue=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_until(self, expression, timeout=20.0, what=None):
        """Polls a JavaScript expression until it is truthy; returns its value."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.evaluate(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout} s waiting for {what or expression}")
            time.sleep(0.1)

    def dom(self):
        return self.evaluate("document.documentElement.outerHTML")

    def screenshot(self, path):
        with open(path, "wb") as f:
            f.write(base64.b64decode(self._call("Page.captureScreenshot", self._session, format="png")["data"]))
