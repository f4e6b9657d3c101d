#!/usr/bin/env python3
"""How much memory cancelled WaitOperation calls leave in yardd (issue 58, N2): a table of yardd's RSS after
each batch of waits that their client cancels while yardd holds them.

  tests/bench/wait_cancel_rss.py --yardd build/composer/daemon/yardd --python build/python [--cancels 60000]

It starts the given yardd on loopback (port 0, a temporary state directory, the simulated fabric), fills the
pool, queues one compose that cannot fit, then sends WaitOperation calls for it with an hour's timeout and
cancels each from the client once sent. A yardd that releases a cancelled wait stays flat; one that keeps it
until the operation ends grows by the size of each call's state.
"""
import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--yardd", required=True)
    ap.add_argument("--python", required=True, help="the folder with switchyard/v1/*_pb2*.py (build/python)")
    ap.add_argument("--cancels", type=int, default=60000)
    ap.add_argument("--batch", type=int, default=500, help="waits open at once, then cancelled together")
    args = ap.parse_args()
    sys.path.insert(0, args.python)
    import grpc
    from switchyard.v1 import switchyard_pb2 as pb, switchyard_pb2_grpc as rpc

    state = tempfile.mkdtemp(prefix="wait-cancel-")
    port_file = os.path.join(state, "port")
    log = open(os.path.join(state, "yardd.log"), "w")
    yardd = subprocess.Popen([args.yardd, "--listen", "127.0.0.1:0", "--plaintext", "--state-dir", state, "--port-file", port_file,
                              "--log-level", "warn"], stdout=log, stderr=subprocess.STDOUT)
    try:
        for _ in range(500):
            if os.path.exists(port_file) and open(port_file).read().strip():
                break
            time.sleep(0.02)
        channel = grpc.insecure_channel("127.0.0.1:" + open(port_file).read().strip())
        stub = rpc.SwitchyardStub(channel)
        for i in range(64):
            try:
                op = stub.Compose(pb.ComposeRequest(name=f"fill-{i}", gpus=pb.GpuRequest(count=8)), timeout=30)
            except grpc.RpcError:
                break
            stub.WaitOperation(pb.WaitOperationRequest(id=op.id, timeout_ms=30000), timeout=60)
        queued = stub.Compose(pb.ComposeRequest(name="waits", gpus=pb.GpuRequest(count=8), queue=True), timeout=30)
        print(f"yardd {args.yardd}: {queued.id} queued; {args.cancels} waits cancelled by their client, {args.batch} at a time")
        print(f"{'cancelled':>10} {'RSS MiB':>9}")
        print(f"{0:>10} {rss_mib(yardd.pid):>9.1f}")
        done = 0
        step = max(args.cancels // 10, args.batch)
        while done < args.cancels:
            calls = [stub.WaitOperation.future(pb.WaitOperationRequest(id=queued.id, timeout_ms=3_600_000), timeout=7200)
                     for _ in range(min(args.batch, args.cancels - done))]
            time.sleep(0.05)
            for c in calls:
                c.cancel()
            done += len(calls)
            if done % step < args.batch or done == args.cancels:
                time.sleep(0.2)
                print(f"{done:>10} {rss_mib(yardd.pid):>9.1f}", flush=True)
    finally:
        yardd.send_signal(signal.SIGTERM)
        try:
            yardd.wait(20)
        except subprocess.TimeoutExpired:
            yardd.kill()


if __name__ == "__main__":
    main()
