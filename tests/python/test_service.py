"""yardd as a service manager runs it (packaging/systemd/yardd.service): it tells systemd when it is ready and
when it stops over $NOTIFY_SOCKET (Type=notify), and SIGHUP (ExecReload) reloads its identities file: new and
revoked tokens, changed quotas, and a broken file that leaves the identities in use as they were."""
import json
import os
import signal
import socket
import unittest

import grpc

from harness import YarddTestCase, wait_for, write_identities
from switchyard_client import Client


class NotifySocket:
    """systemd's end of sd_notify(3): a datagram socket that collects what the service says."""

    def __init__(self, path):
        self.path = str(path)
        self.socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.socket.bind(self.path)
        self.socket.settimeout(0.05)
        self.messages = []

    def poll(self):
        try:
            while True:
                self.messages.append(self.socket.recv(4096).decode())
        except (socket.timeout, BlockingIOError):
            pass
        return self.messages

    def said(self, line):
        return any(line in m.splitlines() for m in self.poll())

    def close(self):
        self.socket.close()


class ServiceTest(YarddTestCase):
    def test_yardd_tells_the_service_manager_it_is_ready_reloading_and_stopping(self):
        notify = NotifySocket(self.dir / "notify")
        self.addCleanup(notify.close)
        yardd = self.yardd(env={"NOTIFY_SOCKET": notify.path})
        wait_for(lambda: notify.said("READY=1"), what="READY=1")
        status = [line for m in notify.messages for line in m.splitlines() if line.startswith("STATUS=")]
        self.assertTrue(any(f"serving on 127.0.0.1:{yardd.port}" in s for s in status), status)
        yardd.process.send_signal(signal.SIGHUP)
        wait_for(lambda: notify.said("RELOADING=1"), what="RELOADING=1")
        wait_for(lambda: "SIGHUP: nothing to reload" in yardd.log(), what="the reload logged")
        with Client(yardd.address, plaintext=True) as yard:
            self.assertEqual(len(yard.hosts()), 4, "still serving after the reload")
        yardd.stop()
        wait_for(lambda: notify.said("STOPPING=1"), what="STOPPING=1")

    def test_sighup_reloads_identities_and_quotas_and_keeps_them_when_the_file_is_broken(self):
        ids = self.dir / "identities.json"

        def write(entries, quota_gpus):
            write_identities(ids, entries)
            doc = json.loads(ids.read_text())
            doc["tenants"] = {"team-a": {"max_gpus": quota_gpus}}
            ids.write_text(json.dumps(doc))
            os.chmod(ids, 0o600)

        write([("alice", "tenant", "team-a", "alice-token")], 2)
        yardd = self.yardd("--identities", str(ids))
        with Client(yardd.address, plaintext=True, token="alice-token") as alice:
            with self.assertRaises(grpc.RpcError) as over:
                alice.compose("big", gpus=4)
            self.assertEqual(over.exception.code(), grpc.StatusCode.RESOURCE_EXHAUSTED, over.exception.details())

        # Bob arrives, alice's token is revoked, team-a may have 8 GPUs: a reload, no restart.
        write([("bob", "tenant", "team-a", "bob-token")], 8)
        yardd.process.send_signal(signal.SIGHUP)
        wait_for(lambda: "SIGHUP: identities reloaded: 1" in yardd.log(), what="the reload")
        with Client(yardd.address, plaintext=True, token="bob-token") as bob:
            bob.wait(bob.compose("big", gpus=4).id)
        with Client(yardd.address, plaintext=True, token="alice-token") as alice:
            with self.assertRaises(grpc.RpcError) as revoked:
                alice.systems()
            self.assertEqual(revoked.exception.code(), grpc.StatusCode.UNAUTHENTICATED)

        # A broken file is refused and the identities in use stay.
        ids.write_text("{ not json")
        yardd.process.send_signal(signal.SIGHUP)
        wait_for(lambda: "keeping the identities in use" in yardd.log(), what="the broken file refused")
        with Client(yardd.address, plaintext=True, token="bob-token") as bob:
            self.assertEqual([s.name for s in bob.systems()], ["big"])


if __name__ == "__main__":
    unittest.main()
