#!/usr/bin/python3
"""Slurm power-saving programs that compose and decompose nodes' GPUs through yardctl.

slurm.conf:
    ResumeProgram=/usr/lib/switchyard/slurm/switchyard-resume
    SuspendProgram=/usr/lib/switchyard/slurm/switchyard-suspend
    ResumeFailProgram=/usr/lib/switchyard/slurm/switchyard-resume-fail

Slurm runs each with one argument, a hostlist expression ("gpu[01-04]"); ResumeProgram also gets
SLURM_RESUME_FILE, a JSON file naming the jobs the nodes are resumed for and their features. Each node
gets (or gives back) one yardd system, "<SYSTEM_PREFIX><node>", on the yardd host of the same name (or the
one HOST_MAP names). How many GPUs, and which model, come from features: the job's (--constraint) first,
then the node's active features, then DEFAULT_GPUS: "gpus_4" asks for 4 GPUs, "gpumodel_H100-SXM5-80GB"
for that model, "nics_2" and "nvme_1" for NICs and NVMe drives beside them ("nicspeed_400": NICs of 400 Gb/s or
more), "endpoint_fpga_1" for one endpoint of another class (fpga) by name, "template_train-8x" for a machine
template (its GPUs unless gpus_N says otherwise). A node that cannot be resumed is set DOWN with the reason at once, instead of Slurm
waiting out ResumeTimeout. docs/slurm.md has the whole story.

Settings (environment, or KEY=VALUE lines in $SWITCHYARD_SLURM_CONF, default /etc/switchyard/slurm.conf):
    YARDCTL=yardctl   SCONTROL=scontrol   YARD_SERVER / YARD_CA / YARD_TOKEN_FILE (read by yardctl)
    YARD_PLAINTEXT=0  DEFAULT_GPUS=1  GPU_FEATURE_PREFIX=gpus_  MODEL_FEATURE_PREFIX=gpumodel_
    NIC_FEATURE_PREFIX=nics_  NIC_SPEED_FEATURE_PREFIX=nicspeed_  NVME_FEATURE_PREFIX=nvme_
    ENDPOINT_FEATURE_PREFIX=endpoint_  TEMPLATE_FEATURE_PREFIX=template_
    SYSTEM_PREFIX=slurm-  TENANT=  HOST_MAP=node1=host-a,node2=host-b  PARALLEL=8  TIMEOUT=300
    SLURMD_RESTART='ssh {node} systemctl restart slurmd'  (run after GPUs were added; empty: never)
    LOG=/var/log/switchyard/slurm.log  (default: stderr; slurmctld discards the programs' output)
"""
import concurrent.futures
import datetime
import json
import os
import re
import shlex
import subprocess
import sys

DEFAULTS = {
    "YARDCTL": "yardctl", "SCONTROL": "scontrol", "YARD_PLAINTEXT": "0", "DEFAULT_GPUS": "1",
    "GPU_FEATURE_PREFIX": "gpus_", "MODEL_FEATURE_PREFIX": "gpumodel_", "SYSTEM_PREFIX": "slurm-", "TENANT": "",
    "NIC_FEATURE_PREFIX": "nics_", "NVME_FEATURE_PREFIX": "nvme_", "TEMPLATE_FEATURE_PREFIX": "template_",
    "NIC_SPEED_FEATURE_PREFIX": "nicspeed_", "ENDPOINT_FEATURE_PREFIX": "endpoint_",
    "HOST_MAP": "", "PARALLEL": "8", "TIMEOUT": "300", "SLURMD_RESTART": "", "LOG": "",
}


def _setting_value(text):
    """A value as a shell reads it: quoted whole, or up to an inline comment (whitespace, then #)."""
    text = text.strip()
    if text[:1] in ("'", '"'):
        end = text.find(text[0], 1)
        if end > 0:
            return text[1:end]
    return re.split(r"\s#", text, maxsplit=1)[0].strip()


def load_settings():
    settings = dict(DEFAULTS)
    path = os.environ.get("SWITCHYARD_SLURM_CONF", "/etc/switchyard/slurm.conf")
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                line = line.strip()
                if not line or line.startswith("#"):
                    continue
                key, eq, value = line.partition("=")
                if not eq:
                    raise SystemExit(f"{path}:{number}: expected KEY=VALUE, got {line!r}")
                settings[key.strip()] = _setting_value(value)
    for key in list(settings) + ["YARD_SERVER", "YARD_CA", "YARD_TOKEN_FILE"]:
        if key in os.environ:
            settings[key] = os.environ[key]
    return settings


class Kit:
    def __init__(self, settings):
        self.s = settings
        self.host_map = dict(pair.split("=", 1) for pair in settings["HOST_MAP"].split(",") if "=" in pair)
        log = settings["LOG"]
        self.log_file = open(log, "a", encoding="utf-8") if log else sys.stderr

    def log(self, message):
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        print(f"{stamp} switchyard-slurm[{os.getpid()}] {message}", file=self.log_file, flush=True)

    # Slurm.

    def scontrol(self, *args):
        return subprocess.run([self.s["SCONTROL"], *args], capture_output=True, text=True, timeout=60)

    def hostnames(self, expression):
        result = self.scontrol("show", "hostnames", expression)
        if result.returncode != 0:
            raise SystemExit(f"scontrol show hostnames {expression}: {result.stderr.strip()}")
        return result.stdout.split()

    def node_features(self, node):
        result = self.scontrol("show", "node", "-o", node)
        match = re.search(r"\bActiveFeatures=(\S*)", result.stdout) if result.returncode == 0 else None
        return match.group(1) if match and match.group(1) != "(null)" else ""

    def set_down(self, node, reason):
        reason = ("switchyard: " + reason.replace("\n", " "))[:250]
        result = self.scontrol("update", f"nodename={node}", "state=down", f"reason={reason}")
        self.log(f"{node}: set DOWN ({reason})" + ("" if result.returncode == 0 else f"; scontrol failed: {result.stderr.strip()}"))

    # yardd.

    def yardctl(self, *args):
        command = [self.s["YARDCTL"], "-o", "json", "--timeout", "60"]
        if self.s["YARD_PLAINTEXT"] == "1":
            command.append("--plaintext")
        env = dict(os.environ)
        for key in ("YARD_SERVER", "YARD_CA", "YARD_TOKEN_FILE"):
            if self.s.get(key):
                env[key] = self.s[key]
        return subprocess.run(command + list(args), capture_output=True, text=True, timeout=int(self.s["TIMEOUT"]), env=env)

    def system_of(self, node):
        result = self.yardctl("systems")
        if result.returncode != 0:
            raise RuntimeError(f"yardctl systems: {result.stderr.strip() or result.stdout.strip()}")
        name = self.s["SYSTEM_PREFIX"] + node
        for system in json.loads(result.stdout).get("systems", []):
            if system.get("name") == name and system.get("state") not in ("SYSTEM_STATE_DECOMPOSED", "SYSTEM_STATE_FAILED"):
                return system
        return None

    # What a node asks for.

    def wanted(self, features):
        """(GPUs, model, the compose's other flags): NICs, drives and a template from the features. GPUs is None when
        a template is asked for without gpus_N (the template's count holds)."""
        gpus, model, extra, template, nic_speed = None, "", [], "", ""
        for token in re.split(r"[,&|()\[\]*\s]+", features or ""):
            value = lambda prefix: token[len(self.s[prefix]):] if self.s[prefix] and token.startswith(self.s[prefix]) else None
            # endpoint_CLASS_COUNT: a class name has no '_', so the count is what follows the last one.
            if value("NIC_SPEED_FEATURE_PREFIX") is not None and value("NIC_SPEED_FEATURE_PREFIX").isdigit():
                nic_speed = value("NIC_SPEED_FEATURE_PREFIX")
            elif value("ENDPOINT_FEATURE_PREFIX") and re.fullmatch(r"[a-z][a-z0-9-]*_[0-9]+", value("ENDPOINT_FEATURE_PREFIX")):
                name, count = value("ENDPOINT_FEATURE_PREFIX").rsplit("_", 1)
                extra += ["--endpoint", f"{name}={count}"]
            elif value("GPU_FEATURE_PREFIX") is not None and value("GPU_FEATURE_PREFIX").isdigit():
                gpus = int(value("GPU_FEATURE_PREFIX"))
            elif value("MODEL_FEATURE_PREFIX"):
                model = value("MODEL_FEATURE_PREFIX")
            elif value("NIC_FEATURE_PREFIX") is not None and value("NIC_FEATURE_PREFIX").isdigit():
                extra += ["--nic", value("NIC_FEATURE_PREFIX")]
            elif value("NVME_FEATURE_PREFIX") is not None and value("NVME_FEATURE_PREFIX").isdigit():
                extra += ["--nvme", value("NVME_FEATURE_PREFIX")]
            elif value("TEMPLATE_FEATURE_PREFIX"):
                template = value("TEMPLATE_FEATURE_PREFIX")
        if nic_speed and "--nic" in extra:  # a speed without a count of NICs asks for nothing
            extra += ["--nic-speed", nic_speed]
        if template:
            extra += ["--template", template]
        elif gpus is None:
            gpus = int(self.s["DEFAULT_GPUS"])
        return gpus, model, extra

    def job_features(self):
        """node -> (job id, features) from SLURM_RESUME_FILE, when Slurm gave one."""
        path = os.environ.get("SLURM_RESUME_FILE")
        if not path:
            return {}
        try:
            with open(path, encoding="utf-8") as f:
                resume = json.load(f)
        except (OSError, ValueError) as error:
            self.log(f"cannot read SLURM_RESUME_FILE {path}: {error}; using node features")
            return {}
        out = {}
        for job in resume.get("jobs", []):
            for node in self.hostnames(job.get("nodes_resume") or job.get("nodes_alloc") or ""):
                out[node] = (job.get("job_id"), job.get("features", ""))
        return out

    # The programs.

    def resume_node(self, node, job):
        job_id, features = job if job else (None, self.node_features(node))
        gpus, model, extra = self.wanted(features)
        host = self.host_map.get(node, node)
        name = self.s["SYSTEM_PREFIX"] + node
        why = f"job {job_id}" if job_id is not None else "node features" if features else "DEFAULT_GPUS"
        try:
            system = self.system_of(node)
            # GPUs only: a system's drives and NICs are bound too (a yardd before Binding.kind says none: all GPUs).
            have = sum(1 for b in system.get("bindings", []) if b.get("kind", "gpu") == "gpu") if system else 0
            model_flag = ["--model", model] if model else []
            if system and (gpus is None or have >= gpus):
                self.log(f"{node}: {name} already has {have} GPU(s) (wanted {'its template' if gpus is None else gpus}); nothing to do")
                return True
            if system:
                self.log(f"{node}: attaching {gpus - have} GPU(s) to {name} ({why})")
                result = self.yardctl("attach", name, "--gpus", str(gpus - have), *model_flag)
            else:
                asked = " ".join(([f"{gpus} GPU(s)" + (" of " + model if model else "")] if gpus is not None else []) + extra)
                self.log(f"{node}: composing {name} on host {host} with {asked} ({why})")
                tenant = ["--tenant", self.s["TENANT"]] if self.s["TENANT"] else []
                gpu_flags = ["--gpus", str(gpus)] if gpus is not None else []
                result = self.yardctl("compose", name, "--host", host, *gpu_flags, *model_flag, *extra, *tenant,
                                      "--label", "slurm.schedmd.com/node=" + node,
                                      *(["--label", f"slurm.schedmd.com/job={job_id}"] if job_id is not None else []))
            if result.returncode != 0:
                message = _yardctl_error(result)
                self.log(f"{node}: {message}")
                self.set_down(node, message)
                return False
            if self.s["SLURMD_RESTART"]:
                command = self.s["SLURMD_RESTART"].format(node=node, host=host)
                restart = subprocess.run(command, shell=True, capture_output=True, text=True, timeout=int(self.s["TIMEOUT"]))
                if restart.returncode != 0:
                    message = f"GPUs attached but restarting slurmd failed ({command}: exit {restart.returncode} {restart.stderr.strip()})"
                    self.set_down(node, message)
                    return False
                self.log(f"{node}: slurmd restarted ({command})")
            self.log(f"{node}: resumed" + (f" with {gpus} GPU(s)" if gpus is not None else f" ({' '.join(extra)})"))
            return True
        except (RuntimeError, subprocess.TimeoutExpired, ValueError) as error:
            self.set_down(node, str(error))
            return False

    def release_node(self, node, reason_if_failed):
        name = self.s["SYSTEM_PREFIX"] + node
        try:
            if not self.system_of(node):
                self.log(f"{node}: no system {name}; nothing to give back")
                return True
            result = self.yardctl("decompose", name)
            if result.returncode != 0:
                message = _yardctl_error(result)
                self.log(f"{node}: {message}")
                self.set_down(node, f"{reason_if_failed}: {message}")
                return False
            self.log(f"{node}: {name} decomposed; its GPUs are back in the pool")
            return True
        except (RuntimeError, subprocess.TimeoutExpired, ValueError) as error:
            self.set_down(node, f"{reason_if_failed}: {error}")
            return False

    def run(self, program, expression):
        nodes = self.hostnames(expression)
        self.log(f"{program} {expression} ({len(nodes)} node(s))")
        jobs = self.job_features() if program == "resume" else {}
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, int(self.s["PARALLEL"]))) as pool:
            if program == "resume":
                results = list(pool.map(lambda n: self.resume_node(n, jobs.get(n)), nodes))
            elif program == "suspend":
                results = list(pool.map(lambda n: self.release_node(n, "suspend could not give the GPUs back"), nodes))
            else:  # resume-fail: Slurm gave up on these nodes; give their GPUs back and keep them DOWN
                results = list(pool.map(lambda n: self.release_node(n, "resume failed and the GPUs could not be given back"), nodes))
                for node in nodes:
                    self.set_down(node, "resume did not finish within ResumeTimeout; GPUs returned to the pool")
        failed = [n for n, ok in zip(nodes, results) if not ok]
        self.log(f"{program} done: {len(nodes) - len(failed)} ok" + (f", failed: {','.join(failed)}" if failed else ""))
        return 0 if not failed else 1


def _yardctl_error(result):
    """The reason a node goes DOWN: yardctl's error line (its hints and progress lines are not the reason)."""
    lines = [line.strip() for line in (result.stderr.strip() or result.stdout.strip()).splitlines() if line.strip()]
    for line in lines:  # the kit runs yardctl with -o json: its errors come as {"error": {...}}
        try:
            error = json.loads(line).get("error", {})
        except (ValueError, AttributeError):
            continue
        if isinstance(error, dict) and error.get("message"):
            return f"yardctl exit {result.returncode}: {error['message']}"
    errors = [line[len("error:"):].strip() for line in lines if line.startswith("error:")]
    others = [line for line in lines if not line.startswith("hint:")]
    detail = errors[0] if errors else others[-1] if others else lines[-1] if lines else "no output"
    return f"yardctl exit {result.returncode}: {detail}"


def main(argv):
    programs = ("resume", "suspend", "resume-fail")
    if len(argv) != 3 or argv[1] not in programs:
        print(f"usage: {os.path.basename(argv[0])} {{{'|'.join(programs)}}} HOSTLIST\n\n{__doc__}", file=sys.stderr)
        return 2
    return Kit(load_settings()).run(argv[1], argv[2])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
