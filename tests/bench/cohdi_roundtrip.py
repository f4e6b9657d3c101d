#!/usr/bin/env python3
"""Round trips of CoHDI's fabric-manager API as the operator makes them: attach one GPU (PATCH .../update, answered
once the GPU is bound and verified), read the machine, detach it (DELETE .../update), N times against a yardd started
here on the simulated fabric. Each request opens its own HTTPS connection, as the operator's client does per call.

    tests/bench/cohdi_roundtrip.py build/bin/yardd [--rounds 20]

Prints the median and the slowest of each call (milliseconds)."""
import argparse
import json
import pathlib
import ssl
import statistics
import subprocess
import tempfile
import time
import urllib.request


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("yardd")
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as state:
        state = pathlib.Path(state)
        log = open(state / "yardd.log", "wb")
        yardd = subprocess.Popen([args.yardd, "--state-dir", str(state), "--listen", "127.0.0.1:0", "--plaintext", "--cohdi-listen", "127.0.0.1:0",
                                  "--cohdi-port-file", str(state / "cohdi-port")], stdout=log, stderr=subprocess.STDOUT)
        try:
            for _ in range(100):
                if (state / "cohdi-port").exists():
                    break
                time.sleep(0.1)
            base = f"https://127.0.0.1:{(state / 'cohdi-port').read_text().strip()}"
            context = ssl.create_default_context(cafile=str(state / "cohdi-cert.pem"))
            headers = {"Authorization": "Bearer open", "Content-Type": "application/json"}

            def call(method, path, body=None):
                request = urllib.request.Request(base + path, method=method, headers=headers, data=None if body is None else json.dumps(body).encode())
                with urllib.request.urlopen(request, context=context, timeout=60) as response:
                    return json.load(response)

            tenant = call("GET", "/fabric_manager/api/v1/tenants")["data"]["tenants"][0]["tenant_uuid"]
            machine = call("GET", f"/fabric_manager/api/v1/machines?tenant_uuid={tenant}")["data"]["machines"][0]["mach_uuid"]
            model = call("GET", f"/cluster_manager/cluster_autoscaler/v3/tenants/{tenant}/clusters/c/machines/{machine}")["data"]["cluster"]["machine"][
                "resspecs"][0]["selector"]["expression"]["conditions"][0]["value"]
            update = f"/fabric_manager/api/v1/machines/{machine}/update?tenant_uuid={tenant}"
            times = {"attach": [], "read": [], "detach": []}
            for _ in range(args.rounds):
                started = time.perf_counter()
                added = call("PATCH", update, {"tenants": {"tenant_uuid": tenant, "machines": [{"mach_uuid": machine, "resources": [{"res_specs": [
                    {"res_type": "gpu", "res_spec": {"condition": [{"column": "model", "operator": "eq", "value": model}]}, "res_num": 1}]}]}]}})
                times["attach"].append(time.perf_counter() - started)
                device = added["data"]["machines"][0]["resources"][0]["res_uuid"]
                started = time.perf_counter()
                call("GET", f"/fabric_manager/api/v1/machines/{machine}?tenant_uuid={tenant}")
                times["read"].append(time.perf_counter() - started)
                started = time.perf_counter()
                call("DELETE", update, {"tenants": {"tenant_uuid": tenant, "machines": [{"mach_uuid": machine, "resources": [{"res_specs": [
                    {"res_type": "gpu", "res_uuid": device, "res_num": 1}]}]}]}})
                times["detach"].append(time.perf_counter() - started)
            print(f"{'call':<8} {'median ms':>10} {'max ms':>8}   ({args.rounds} rounds)")
            for name, values in times.items():
                print(f"{name:<8} {statistics.median(values) * 1000:>10.1f} {max(values) * 1000:>8.1f}")
        finally:
            yardd.terminate()
            yardd.wait(timeout=20)
            log.close()


if __name__ == "__main__":
    main()
