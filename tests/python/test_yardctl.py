"""yardctl for daily work, against the real yardd: `whoami`, `login`/`logout` (a password-only identity gets a
short-lived token), contexts (named servers and credentials, with their precedence), label selectors on
`systems`, filters on `ops` and `watch`."""
import hashlib
import json
import time
import os
import shlex
import subprocess
import unittest
from pathlib import Path

from harness import YARDCTL, YARDD, YarddTestCase, wait_for, write_fpga_pool
from switchyard_client import Client


def hash_password(password):
    return subprocess.run([YARDD, "--hash-password"], input=password, capture_output=True, text=True, check=True).stdout.strip()


class YardctlTest(YarddTestCase):
    def setUp(self):
        super().setUp()
        # Every context file and login token of these tests lives in the test's directory, not in ~/.config.
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("YARD_")}
        self.env["YARD_CONFIG"] = str(self.dir / "config" / "config.json")

    def yardctl(self, *args, input=None, env=None):
        return subprocess.run([YARDCTL, *args], capture_output=True, text=True, timeout=60, input=input, env={**self.env, **(env or {})})

    def ok(self, *args, **kw):
        r = self.yardctl(*args, **kw)
        self.assertEqual(r.returncode, 0, f"yardctl {' '.join(args)}: {r.stderr}")
        return r.stdout

    def test_contexts_login_whoami_and_logout(self):
        ids = self.dir / "identities.json"
        ids.write_text(json.dumps({"identities": [{"name": "carol", "role": "tenant", "tenant": "team-a",
                                                    "password": hash_password("carol-secret")}]}))
        os.chmod(ids, 0o600)
        yardd = self.yardd("--identities", str(ids))

        # A context says where yardd is; commands without --server go there.
        self.ok("context", "set", "lab", "--server", yardd.address, "--plaintext")
        listed = self.ok("context", "list")
        self.assertRegex(listed, r"\* lab +" + yardd.address.replace(".", r"\."))
        refused = self.yardctl("systems")
        self.assertEqual(refused.returncode, 3, "no credentials yet: UNAUTHENTICATED")
        self.assertIn("`yardctl login NAME`", refused.stderr, "the hint names login for an identity with a password")
        # With no name and $USER unset, login says so before asking for a password.
        nameless = self.yardctl("login", input="carol-secret\n", env={"USER": ""})
        self.assertEqual(nameless.returncode, 2, nameless.stderr)
        self.assertIn("$USER is not set", nameless.stderr)

        # login: the password on stdin (not a terminal), the token kept for the context.
        out = self.ok("login", "carol", "--ttl", "1h", input="carol-secret\n")
        self.assertIn("logged in as carol (tenant, tenant team-a)", out)
        token_file = self.dir / "config" / "tokens" / "lab.token"
        self.assertTrue(token_file.exists())
        self.assertEqual(token_file.stat().st_mode & 0o777, 0o600)
        self.assertIn("no composed systems", self.ok("systems"))
        who = json.loads(self.ok("whoami", "-o", "json"))
        self.assertEqual((who["identity"], who["role"], who["tenant"], who["authenticated"]), ("carol", "tenant", "team-a", True))
        self.assertTrue(who["token_expires_at"])
        self.assertIn("yardd 0.", who["server_version"])
        self.assertIn("context:   lab", self.ok("whoami"))

        wrong = self.yardctl("login", "carol", input="not-her-password\n")
        self.assertEqual(wrong.returncode, 3)
        self.assertIn("wrong name or password", wrong.stderr)

        # The variables override the context, and a context that does not exist is an error.
        elsewhere = self.yardctl("systems", env={"YARD_SERVER": "127.0.0.1:1"})
        self.assertEqual(elsewhere.returncode, 4, elsewhere.stderr)
        missing = self.yardctl("--context", "nope", "systems")
        self.assertEqual(missing.returncode, 2)
        self.assertIn("no context 'nope'", missing.stderr)

        self.assertIn("logged out", self.ok("logout"))
        self.assertFalse(token_file.exists())
        self.assertEqual(self.yardctl("systems").returncode, 3)
        self.ok("context", "delete", "lab")
        self.assertIn("no contexts", self.ok("context"))

    def test_password_guessing_from_one_address_locks_it_and_is_audited(self):
        ids = self.dir / "identities.json"
        ids.write_text(json.dumps({"identities": [
            {"name": "carol", "role": "tenant", "tenant": "team-a", "password": hash_password("carol-secret")},
            {"name": "root", "role": "admin", "token_sha256": hashlib.sha256(b"root-token").hexdigest()}]}))
        os.chmod(ids, 0o600)
        yardd = self.yardd("--identities", str(ids))
        self.env.update({"YARD_SERVER": yardd.address, "YARD_PLAINTEXT": "1"})
        # A guesser sprays a few passwords at each of several names: no name reaches its own limit (5 in a row) ...
        names = ["carol", "alice", "bob", "admin", "dave"]
        for i in range(20):
            wrong = self.yardctl("login", names[i % len(names)], input=f"guess-{i}\n")
            self.assertEqual(wrong.returncode, 3, wrong.stderr)
        # ... but its address did (20 in a row): from now on every password from there is refused unchecked (for
        # 1 s, then 2, 4, ... while the failures go on), and the 20th refusal says so.
        self.assertIn("after 20 failed tries from 127.0.0.1 every password from there is refused for 1 s", wrong.stderr)
        audit = self.ok("audit", env={"YARD_TOKEN": "root-token"})
        self.assertRegex(audit, r"yardd +admin +- +lockout +source:127\.0\.0\.1 +LOCKED")
        self.assertNotIn("identity:", audit, "no name was locked")
        self.assertIn("20 wrong passwords in a row from 127.0.0.1", yardd.log(), "and the log says so")
        # The lock lasts 1 s; then the right password works, and starts the count again.
        wait_for(lambda: self.yardctl("login", "carol", input="carol-secret\n").returncode == 0,
                 timeout=30, what="the source's lock to end")

    def test_whoami_without_identities_says_so(self):
        yardd = self.yardd()
        out = self.ok("--server", yardd.address, "--plaintext", "--as", "dave", "whoami")
        self.assertIn("identity:  dave", out)
        self.assertIn("no identities file", out)

    def test_bash_completion_completes_flags_values_and_names(self):
        # Issue 63: `--p` offered instead of `--p2p`, flag values not completed, device ids not offered.
        yardd = self.yardd()
        self.ok("context", "set", "lab", "--server", yardd.address, "--plaintext")
        self.ok("compose", "train", "--gpus", "1")
        completion = Path(__file__).resolve().parents[2] / "cli" / "completion" / "yardctl.bash"
        path = f"{Path(YARDCTL).parent}:{os.environ['PATH']}"

        def complete(line):
            words = line.split(" ")
            script = (f"source {shlex.quote(str(completion))}; COMP_WORDS=({' '.join(shlex.quote(w) for w in words)}); "
                      f"COMP_CWORD={len(words) - 1}; _yardctl; printf '%s\\n' \"${{COMPREPLY[@]}}\"")
            r = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60, env={**self.env, "PATH": path})
            self.assertEqual(r.returncode, 0, r.stderr)
            return r.stdout.split()

        self.assertIn("compose", complete("yardctl comp"))
        self.assertIn("--p2p", complete("yardctl compose x --p"))
        self.assertEqual(complete("yardctl compose x --p2p "), ["required", "preferred", "none"])
        self.assertEqual(complete("yardctl usage --by "), ["tenant", "system", "model"])
        self.assertEqual(complete("yardctl -o j"), ["json"])
        self.assertEqual(complete("yardctl ops --state f"), ["failed"])
        self.assertIn("train", complete("yardctl decompose "))
        self.assertIn("forget", complete("yardctl systems "))
        self.assertIn("train", complete("yardctl systems forget "))
        device = json.loads(self.ok("systems", "train", "-o", "json"))["bindings"][0]["device_id"]
        self.assertIn(device, complete("yardctl detach train -d "))
        self.assertNotIn("--gpus", complete("yardctl decompose --"), "only the flags decompose takes")
        self.assertEqual(complete("yardctl compose x --template tr"), ["train-8x"])
        self.assertEqual(complete("yardctl compose x --affinity nic:gpu=s"), ["nic:gpu=switch"])
        self.assertIn("--nvme-size", complete("yardctl compose x --nv"))

    def test_mixed_compose_and_templates_from_the_command_line(self):
        yardd = self.yardd()
        self.ok("context", "set", "lab", "--server", yardd.address, "--plaintext")
        listing = self.ok("templates")
        self.assertIn("train-8x", listing)
        self.assertIn("8 GPU(s) (p2p required), 4 NIC(s) >= 200 Gb/s under the GPUs' switches, 2 NVMe drive(s)", listing)
        shown = self.ok("templates", "infer-1x")
        self.assertIn("compose one: yardctl compose NAME --template infer-1x", shown)
        self.assertEqual(self.yardctl("templates", "nope").returncode, 3)
        composed = self.yardctl("compose", "net", "--gpus", "2", "--nic", "1", "--nvme", "1", "--affinity", "nic:gpu=switch")
        self.assertEqual(composed.returncode, 0, composed.stderr)
        self.assertIn("1 nic", composed.stdout + composed.stderr, "the placement says where the NIC went")
        system = json.loads(self.ok("systems", "net", "-o", "json"))
        ids = [b["device_id"] for b in system["bindings"]]
        self.assertEqual(sum("-nic" in d for d in ids), 1)
        self.assertEqual(sum("-nvme" in d for d in ids), 1)
        # NICs by port speed: the embedded pool has two 400 and two 200 Gb/s NICs under each switch.
        listed = self.ok("devices", "--kind", "nic")
        self.assertIn("400Gb/s", listed)
        self.assertNotIn("gpu", listed.split("\n", 1)[1], "--kind nic lists NICs only")
        speeds = {d["id"]: d["speed_gbps"] for d in json.loads(self.ok("devices", "--kind", "nic", "-o", "json"))["devices"]}
        self.assertEqual(sorted(set(speeds.values())), [200, 400])
        fast = self.yardctl("compose", "fast", "--gpus", "1", "--nic", "2", "--nic-speed", "400", "--affinity", "nic:gpu=switch")
        self.assertEqual(fast.returncode, 0, fast.stderr)
        bound = [b["device_id"] for b in json.loads(self.ok("systems", "fast", "-o", "json"))["bindings"]]
        self.assertEqual(sorted(speeds[d] for d in bound if d in speeds), [400, 400])
        too_fast = self.yardctl("compose", "x", "--nic", "1", "--nic-speed", "800")
        self.assertEqual(too_fast.returncode, 3)
        self.assertIn("1 NIC(s) >= 800 Gb/s", too_fast.stderr)
        lone = self.yardctl("compose", "x", "--gpus", "1", "--nic-speed", "400")
        self.assertEqual(lone.returncode, 2, "a NIC filter without --nic would be dropped")
        self.assertIn("--nic", lone.stderr)
        self.ok("decompose", "fast")
        self.ok("compose", "svc", "--template", "infer-1x", "--label", "team=web")
        labels = json.loads(self.ok("systems", "svc", "-o", "json"))["labels"]
        self.assertEqual(labels, {"switchyard.io/template": "infer-1x", "team": "web"})
        self.assertIn("svc", self.ok("systems", "-l", "switchyard.io/template=infer-1x"))
        bad = self.yardctl("compose", "x", "--gpus", "1", "--affinity", "gpu:nic=switch")
        self.assertNotEqual(bad.returncode, 0)
        self.assertIn("nic:gpu=switch", bad.stderr)
        too_many = self.yardctl("compose", "x", "--nvme", "20")
        self.assertEqual(too_many.returncode, 3)
        self.assertIn("no host can take 20 NVMe drive(s)", too_many.stderr)

    def test_endpoints_of_other_classes_by_name(self):
        """Issue 62: any other endpoint class by name (an FPGA, a DPU) is a kind of its own, listed and composed by count."""
        pool = write_fpga_pool(self.dir / "fpga-pool.json")
        yardd = self.yardd("--topology", str(pool))
        base = ["--server", yardd.address, "--plaintext"]
        listed = self.ok(*base, "devices", "--kind", "fpga")
        self.assertIn("sw0-fpga0", listed)
        self.assertNotIn("sw0-gpu0", listed)
        composed = self.yardctl(*base, "compose", "infer", "--gpus", "1", "--endpoint", "fpga=1", "--affinity", "fpga:gpu=switch")
        self.assertEqual(composed.returncode, 0, composed.stderr)
        bindings = json.loads(self.ok(*base, "systems", "infer", "-o", "json"))["bindings"]
        self.assertEqual(sorted((b["device_id"], b["kind"]) for b in bindings), [("sw0-fpga0", "fpga"), ("sw0-gpu0", "gpu")])
        refused = self.yardctl(*base, "compose", "more", "--endpoint", "dpu=2")
        self.assertEqual(refused.returncode, 3, refused.stderr)
        self.assertIn("2 dpu(s)", refused.stderr)
        for bad, why in (("fpga", "CLASS=COUNT"), ("nic=1", "--nic"), ("FPGA=1", "CLASS=COUNT"), ("fpga=0", "1-64")):
            r = self.yardctl(*base, "compose", "x", "--endpoint", bad)
            self.assertEqual(r.returncode, 2, bad)
            self.assertIn(why, r.stderr, bad)
        self.ok(*base, "decompose", "infer")  # the pool's one host is free again
        # Usage accounts the FPGA as device-hours in a row of its class, as drives and NICs have theirs.
        rows = json.loads(self.ok(*base, "usage", "--by", "model", "-o", "json")).get("rows", [])
        fpga = [r for r in rows if r.get("model") == "fpga"]
        self.assertEqual(len(fpga), 1, rows)
        self.assertGreater(fpga[0]["device_hours"], 0, fpga)
        self.ok(*base, "compose", "dpu", "--endpoint", "dpu=1")
        self.assertIn("sw0-dpu0", self.ok(*base, "devices", "--kind", "dpu", "--system", "dpu"))
        self.ok(*base, "decompose", "dpu")

    def test_label_selectors_and_filters_on_ops_and_watch(self):
        yardd = self.yardd()
        base = ["--server", yardd.address, "--plaintext"]
        self.ok(*base, "compose", "vision-a", "--gpus", "1", "--label", "team=vision", "--label", "env=prod")
        self.ok(*base, "compose", "vision-b", "--gpus", "1", "--label", "team=vision")
        self.ok(*base, "compose", "nlp-a", "--gpus", "1", "--label", "team=nlp", "--label", "spot")  # spot= (issue 63)
        names = lambda selector: sorted(s["name"] for s in json.loads(self.ok(*base, "systems", "-l", selector, "-o", "json")).get("systems", []))
        self.assertEqual(names("team=vision"), ["vision-a", "vision-b"])
        self.assertEqual(names("team=vision,!env"), ["vision-b"])
        self.assertEqual(names("env"), ["vision-a"])
        self.assertEqual(names("team!=vision"), ["nlp-a"])
        self.assertEqual(names("spot"), ["nlp-a"])
        self.assertEqual(names("team in (vision, nlp),env notin (dev)"), ["nlp-a", "vision-a", "vision-b"])
        self.assertEqual(names("env in (prod,dev)"), ["vision-a"])
        self.assertEqual(names("team notin (vision)"), ["nlp-a"])
        self.assertEqual(json.loads(self.ok(*base, "systems", "nlp-a", "-o", "json"))["labels"], {"team": "nlp", "spot": ""})
        none = self.ok(*base, "systems", "-l", "team=nobody")
        self.assertIn("no system matches -l team=nobody (`yardctl systems` lists them all)", none)
        for selector in ("team=a=b", "env in (dev"):
            bad = self.yardctl(*base, "systems", "-l", selector)
            self.assertEqual(bad.returncode, 2)
            self.assertIn("label selector", bad.stderr)

        self.ok(*base, "decompose", "nlp-a")
        failing = self.yardctl(*base, "compose", "too-big", "--gpus", "64")
        self.assertNotEqual(failing.returncode, 0)
        ops = lambda *f: json.loads(self.ok(*base, "ops", *f, "-o", "json")).get("operations", [])
        system_id = json.loads(self.ok(*base, "systems", "vision-a", "-o", "json"))["id"]
        self.assertEqual([o["system_id"] for o in ops("--system", "vision-a")], [system_id])
        self.assertEqual(len(ops("--type", "compose")), 3)
        self.assertEqual([o["kind"] for o in ops("--type", "decompose")], ["OPERATION_KIND_DECOMPOSE"])
        self.assertEqual(len(ops("--state", "succeeded", "--limit", "2")), 2)
        self.assertEqual(ops("--state", "failed"), [])
        self.assertIn("no operation matches --state failed", self.ok(*base, "ops", "--state", "failed"))
        self.assertEqual(self.yardctl(*base, "ops", "--state", "sleeping").returncode, 2)

        # watch --after 0 replays the record; --type keeps one family, --subject one id.
        def watched(*f):
            try:
                r = subprocess.run([YARDCTL, *base, "watch", "--after", "0", *f, "-o", "json"], capture_output=True, text=True,
                                   timeout=3, env=self.env)
                out = r.stdout
            except subprocess.TimeoutExpired as e:  # watch follows until interrupted
                out = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
            events, decoder, at = [], json.JSONDecoder(), 0
            while out[at:].strip():  # one pretty-printed JSON object per event
                at += len(out[at:]) - len(out[at:].lstrip())
                event, at = decoder.raw_decode(out, at)
                events.append(event)
            return events
        families = {e["type"].split(".")[0] for e in watched("--type", "operation")}
        self.assertEqual(families, {"operation"})
        about = watched("--subject", system_id)
        self.assertTrue(about)
        self.assertTrue(all(e["subject"] == system_id for e in about))
        # --system: the system's own events, its operations' and its devices', by name.
        of_system = watched("--system", "vision-a")
        self.assertEqual({e["system_id"] for e in of_system}, {system_id})
        types = {e["type"] for e in of_system}
        self.assertTrue({"operation.accepted", "operation.succeeded", "device.bound"} <= types, types)
        self.assertFalse(any(e["system_id"] != system_id for e in of_system))


    def test_a_queued_compose_says_what_it_waits_for_and_where_it_was_admitted(self):
        """Issue 63, item 3: `compose --queue` echoes a preemption it waits for and the placement once admitted; `queue`
        prints a reason of several lines in full; `systems NAME` shows its recent operations and events."""
        yardd = self.yardd("--preemption-grace", "2s")
        base = ["--plaintext", "--server", yardd.address]
        self.ok(*base, "compose", "s1", "--gpus", "8", "--priority", "spot")
        self.ok(*base, "compose", "s2", "--gpus", "8", "--priority", "spot")
        self.ok(*base, "compose", "q", "--gpus", "8", "--queue", "--no-wait")
        table = self.ok(*base, "queue")
        self.assertIn("q (op-", table)
        self.assertIn("waits for:\n  no host can take 8 GPU(s):\n    host0:", table, "every line of the reason, under the table")
        self.ok(*base, "queue", "cancel", "q")
        waited = self.yardctl(*base, "compose", "p", "--gpus", "8", "--queue", "--priority", "production")
        self.assertEqual(waited.returncode, 0, waited.stderr)
        self.assertRegex(waited.stderr, r"now waiting for: .*\n(.*\n)*.*preempting sys-\d+ at ")
        self.assertRegex(waited.stderr, r"op-\d+ admitted on host\d: ")
        shown = self.ok(*base, "systems", "p")
        self.assertRegex(shown, r"recent operations \(yardctl ops --system p\):\n  \S+  compose +succeeded op-\d+ by ")
        events = shown.split("recent events (yardctl watch --system p --after 0):\n")[1].splitlines()
        self.assertTrue(events and len(events) <= 8, shown)
        self.assertRegex(events[-1], r"^  \S+  operation.succeeded +compose op-\d+ succeeded$", "the newest last, p's own")
        self.assertTrue(all("s1" not in e and "s2" not in e for e in events), "only p's events: " + shown)
        # The same over the API (Python client): a tenant-blind list, and one system's.
        with Client(yardd.address, plaintext=True) as client:
            mine = client.events(system="p", limit=3)
            self.assertEqual(len(mine), 3)
            self.assertEqual(mine[-1].type, "operation.succeeded")
            self.assertGreater(len(client.events(limit=50)), len(client.events(system="p", limit=50)))


    def test_watch_flag_redraws_a_list_when_yardd_reports_a_change(self):
        """Issue 63, item 3: `-w/--watch` on list commands: the list, then the list again after each burst of events
        (one redraw for a compose's several), until interrupted; -o json writes one document per redraw."""
        import select
        import signal
        yardd = self.yardd()
        base = ["--plaintext", "--server", yardd.address]
        watcher = subprocess.Popen([YARDCTL, *base, "systems", "-w"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=self.env)
        as_json = subprocess.Popen([YARDCTL, *base, "-o", "json", "queue", "--watch"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   env=self.env)
        try:
            seen = []
            unread = {watcher.pid: "", as_json.pid: ""}

            def read_until(process, text, timeout=20):
                """Reads the process' output (unbuffered: select() sees only what the pipe holds) up to `text`."""
                deadline = time.time() + timeout
                while time.time() < deadline:
                    if text in unread[process.pid]:
                        at = unread[process.pid].index(text) + len(text)
                        seen.extend(unread[process.pid][:at].splitlines(keepends=True))
                        unread[process.pid] = unread[process.pid][at:]
                        return True
                    ready, _, _ = select.select([process.stdout], [], [], 0.5)
                    if ready:
                        chunk = os.read(process.stdout.fileno(), 65536)
                        if not chunk:
                            break
                        unread[process.pid] += chunk.decode()
                seen.append(unread[process.pid])
                return False

            self.assertTrue(read_until(watcher, "no composed systems"), "".join(seen))
            self.assertTrue(read_until(as_json, "{"), "the first document")
            # Watch has no "subscribed" answer: a change made before the stream reached yardd is not seen, so on a
            # loaded machine compose again until a redraw comes.
            composed = 0
            for attempt in range(6):
                self.ok(*base, "compose", f"watched{attempt}", "--gpus", "1")
                composed += 1
                if read_until(watcher, "--- ", timeout=3):
                    break
            self.assertTrue(read_until(watcher, f"watched{composed - 1}"), "".join(seen))
            for attempt in range(6):
                self.ok(*base, "compose", f"later{attempt}", "--gpus", "16", "--queue", "--no-wait")
                if read_until(as_json, '"name": "later', timeout=3):
                    break
            else:
                self.fail("the JSON watcher never redrew: " + "".join(seen))
            time.sleep(1)  # the rest of the last burst
        finally:
            for process in (watcher, as_json):
                process.send_signal(signal.SIGINT)
                process.wait(timeout=10)
        redraws = sum(1 for line in seen if line.startswith("--- "))
        # A compose makes about six events (accepted, one bound per device, succeeded, ...): one redraw or two each.
        self.assertLessEqual(redraws, 2 * composed, "a burst of events is one redraw, not one per event: " + "".join(seen))


if __name__ == "__main__":
    unittest.main()
