"""The Slurm kit (cli/slurm) against the real yardd and yardctl, with a fake scontrol on PATH that records
what the kit asks of Slurm: ResumeProgram composes per the jobs' features in SLURM_RESUME_FILE (or the
node's), restarts slurmd, sets a node DOWN with the reason at once when it cannot be resumed; SuspendProgram
gives the GPUs back; ResumeFailProgram returns them and keeps the node DOWN."""
import json
import os
import pathlib
import shutil
import subprocess
import sys
import unittest

from harness import SOURCE_DIR, YARDCTL, YarddTestCase

KIT = SOURCE_DIR / "cli" / "slurm"
sys.path.insert(0, str(KIT))
import switchyard_slurm  # noqa: E402  (the kit's module, for what it makes of features)


class SlurmKitTest(YarddTestCase):
    def setUp(self):
        super().setUp()
        self.yard = self.yardd()
        self.bin = self.dir / "bin"
        self.bin.mkdir()
        shutil.copy(pathlib.Path(__file__).with_name("fake_scontrol.py"), self.bin / "scontrol")
        self.scontrol_log = self.dir / "scontrol.log"
        self.scontrol_log.touch()
        self.restarts = self.dir / "restarts"
        self.conf = self.dir / "slurm.conf"
        self.conf.write_text(f"""# the kit's settings, as an admin would write /etc/switchyard/slurm.conf
YARDCTL={YARDCTL}
YARD_SERVER={self.yard.address}
YARD_PLAINTEXT=1
DEFAULT_GPUS=1  # inline comments, as the kit's documented example has them
SLURMD_RESTART="echo {{node}} >> {self.restarts}"  # quoted: a '#' inside quotes stays
LOG={self.dir / 'kit.log'}
""", encoding="utf-8")

    def run_kit(self, program, hostlist, resume_file=None, features=None, conf_extra=""):
        if conf_extra:
            with open(self.conf, "a", encoding="utf-8") as f:
                f.write(conf_extra)
        env = {**os.environ, "PATH": f"{self.bin}:{os.environ['PATH']}", "SWITCHYARD_SLURM_CONF": str(self.conf),
               "FAKE_SCONTROL_LOG": str(self.scontrol_log), "FAKE_SCONTROL_FEATURES": json.dumps(features or {})}
        env.pop("SLURM_RESUME_FILE", None)
        if resume_file is not None:
            path = self.dir / "resume.json"
            path.write_text(json.dumps(resume_file), encoding="utf-8")
            env["SLURM_RESUME_FILE"] = str(path)
        return subprocess.run([str(KIT / f"switchyard-{program}"), hostlist], env=env, capture_output=True, text=True, timeout=120)

    def scontrol_calls(self):
        return [json.loads(line) for line in self.scontrol_log.read_text().splitlines()]

    def downs(self):
        return {c[1].split("=", 1)[1]: c[3].split("=", 1)[1] for c in self.scontrol_calls() if c[0] == "update" and "state=down" in c}

    def systems(self):
        out = json.loads(self.yard.yardctl("-o", "json", "systems").stdout)["systems"]
        return {s["name"]: s for s in out if s["state"] == "SYSTEM_STATE_COMPOSED"}

    def kit_log(self):
        return (self.dir / "kit.log").read_text()

    def test_resume_composes_what_the_jobs_ask_for_and_restarts_slurmd(self):
        resume = {"all_nodes_resume": "host[0-1]",
                  "jobs": [{"job_id": 140814, "features": "gpus_4&gpumodel_H100-SXM5-80GB", "nodes_alloc": "host[0-1]", "nodes_resume": "host[0-1]",
                            "partition": "gpu"}]}
        ran = self.run_kit("resume", "host[0-1]", resume_file=resume)
        self.assertEqual(ran.returncode, 0, ran.stderr + self.kit_log())
        systems = self.systems()
        self.assertEqual(sorted(systems), ["slurm-host0", "slurm-host1"])
        for node in ("host0", "host1"):
            s = systems[f"slurm-{node}"]
            self.assertEqual(s["host_id"], node)
            self.assertEqual(len(s["bindings"]), 4)
            self.assertEqual(s["labels"]["slurm.schedmd.com/job"], "140814")
        devices = {d["id"]: d for d in json.loads(self.yard.yardctl("-o", "json", "devices").stdout)["devices"]}
        for s in systems.values():
            for b in s["bindings"]:
                self.assertEqual(devices[b["device_id"]]["model"], "H100-SXM5-80GB")
        self.assertEqual(sorted(self.restarts.read_text().split()), ["host0", "host1"])
        self.assertIn(["show", "hostnames", "host[0-1]"], self.scontrol_calls())
        self.assertEqual(self.downs(), {})

        # Slurm may call again (a retry, a second job): nothing more is composed, nothing restarted.
        again = self.run_kit("resume", "host0", resume_file=resume)
        self.assertEqual(again.returncode, 0)
        self.assertEqual(len(self.systems()["slurm-host0"]["bindings"]), 4)
        self.assertIn("already has 4 GPU(s)", self.kit_log())
        self.assertEqual(sorted(self.restarts.read_text().split()), ["host0", "host1"])

    def test_without_a_job_the_nodes_features_decide_and_a_bigger_ask_attaches_the_rest(self):
        ran = self.run_kit("resume", "host2", features={"host2": "gpus_2,gpumodel_A100-SXM4-40GB"})
        self.assertEqual(ran.returncode, 0, self.kit_log())
        self.assertEqual(len(self.systems()["slurm-host2"]["bindings"]), 2)
        grown = self.run_kit("resume", "host2", resume_file={"jobs": [{"job_id": 7, "features": "gpus_3", "nodes_resume": "host2"}]})
        self.assertEqual(grown.returncode, 0, self.kit_log())
        self.assertEqual(len(self.systems()["slurm-host2"]["bindings"]), 3)
        self.assertIn("attaching 1 GPU(s) to slurm-host2 (job 7)", self.kit_log())

    def test_features_ask_for_nics_drives_and_templates_and_only_gpus_count_as_gpus(self):
        """Whole machines (issue 62): nics_N and nvme_N beside gpus_N, template_NAME for a machine template; a retry
        counts the system's GPUs (Binding.kind), not its NICs and drives, so nothing more is attached."""
        resume = {"jobs": [{"job_id": 9, "features": "gpus_2&nics_1&nvme_1", "nodes_resume": "host0"},
                           {"job_id": 10, "features": "template_infer-1x", "nodes_resume": "host1"},
                           {"job_id": 11, "features": "gpus_1&nics_2&nicspeed_400", "nodes_resume": "host2"}]}
        ran = self.run_kit("resume", "host[0-2]", resume_file=resume)
        self.assertEqual(ran.returncode, 0, ran.stderr + self.kit_log())
        kinds = {name: sorted(b.get("kind") for b in s["bindings"]) for name, s in self.systems().items()}
        self.assertEqual(kinds, {"slurm-host0": ["gpu", "gpu", "nic", "nvme"], "slurm-host1": ["gpu", "nic"],
                                 "slurm-host2": ["gpu", "nic", "nic"]})
        speeds = {d["id"]: d["speed_gbps"] for d in json.loads(self.yard.yardctl("devices", "--kind", "nic", "-o", "json").stdout)["devices"]}
        self.assertEqual([speeds[b["device_id"]] for b in self.systems()["slurm-host2"]["bindings"] if b["kind"] == "nic"], [400, 400],
                         "nicspeed_400: the NICs run at 400 Gb/s (the embedded pool's slowest are 200)")
        kit = switchyard_slurm.Kit(dict(switchyard_slurm.DEFAULTS))
        self.assertEqual(kit.wanted("gpus_1&endpoint_fpga_2&nicspeed_100")[2], ["--endpoint", "fpga=2"], "a speed without nics_N asks nothing")
        self.assertEqual(self.systems()["slurm-host1"]["labels"]["switchyard.io/template"], "infer-1x")
        again = self.run_kit("resume", "host0", resume_file={"jobs": [{"job_id": 9, "features": "gpus_2&nics_1&nvme_1", "nodes_resume": "host0"}]})
        self.assertEqual(again.returncode, 0, self.kit_log())
        self.assertIn("slurm-host0 already has 2 GPU(s) (wanted 2)", self.kit_log())
        self.assertEqual(len(self.systems()["slurm-host0"]["bindings"]), 4)

    def test_a_node_that_cannot_be_resumed_goes_down_at_once_with_the_reason(self):
        resume = {"jobs": [{"job_id": 1, "features": "gpus_2", "nodes_resume": "host0"},
                           {"job_id": 2, "features": "gpus_17", "nodes_resume": "host3"}]}
        ran = self.run_kit("resume", "host0,host3", resume_file=resume)
        self.assertEqual(ran.returncode, 1)
        self.assertIn("slurm-host0", self.systems(), "the node that fits is resumed all the same")
        downs = self.downs()
        self.assertEqual(list(downs), ["host3"])
        self.assertIn("switchyard: yardctl exit 3", downs["host3"])
        self.assertNotIn("hint:", downs["host3"], "the reason is yardctl's error, not its hint")
        self.assertIn("17", downs["host3"], downs["host3"])
        self.assertNotIn("slurm-host3", self.systems())

        # yardd unreachable: every node goes down, saying so.
        ran = self.run_kit("resume", "host1", conf_extra="YARD_SERVER=127.0.0.1:1\n")
        self.assertEqual(ran.returncode, 1)
        self.assertIn("host1", self.downs())

    def test_suspend_gives_the_gpus_back_and_resume_fail_keeps_the_node_down(self):
        self.assertEqual(self.run_kit("resume", "host[0-2]").returncode, 0, self.kit_log())
        self.assertEqual(len(self.systems()), 3)
        ran = self.run_kit("suspend", "host[0-1]")
        self.assertEqual(ran.returncode, 0, self.kit_log())
        self.assertEqual(list(self.systems()), ["slurm-host2"])
        self.assertEqual(self.run_kit("suspend", "host[0-1]").returncode, 0, "suspending twice is harmless")
        failed = self.run_kit("resume-fail", "host2")
        self.assertEqual(failed.returncode, 0, self.kit_log())
        self.assertEqual(self.systems(), {})
        self.assertIn("ResumeTimeout", self.downs()["host2"])

    def test_usage(self):
        ran = subprocess.run([str(KIT / "switchyard_slurm.py")], capture_output=True, text=True)
        self.assertEqual(ran.returncode, 2)
        self.assertIn("ResumeProgram", ran.stderr)


if __name__ == "__main__":
    unittest.main()
