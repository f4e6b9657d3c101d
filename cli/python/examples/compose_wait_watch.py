#!/usr/bin/python3
"""Compose a system, follow it to the end, print the events it caused, and give it back.

    PYTHONPATH=cli/python:build/python python3 cli/python/examples/compose_wait_watch.py \\
        --server 127.0.0.1:7390 --ca ~/.local/state/switchyard/grpc-cert.pem --gpus 2 demo-py
"""
import argparse
import sys
import threading
import time

import grpc

from switchyard_client import Client, OperationFailed


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("name", help="the system's name")
    parser.add_argument("--gpus", type=int, default=1)
    parser.add_argument("--server", default="127.0.0.1:7390")
    parser.add_argument("--ca", help="PEM to trust for yardd's TLS (its grpc-cert.pem)")
    parser.add_argument("--token-file", help="a bearer token from the identities file")
    parser.add_argument("--plaintext", action="store_true", help="yardd runs with --plaintext (loopback only)")
    parser.add_argument("--keep", action="store_true", help="leave the system composed")
    args = parser.parse_args()

    with Client(args.server, ca=args.ca, token_file=args.token_file, plaintext=args.plaintext, caller="python-example") as yard:
        events = []
        ended = set()  # operations whose end event the stream has delivered
        changed = threading.Condition()
        stream = yard.watch()  # live events from now on

        def collect():
            try:
                for event in stream:
                    with changed:
                        events.append(event)
                        if event.type in ("operation.succeeded", "operation.failed"):
                            ended.add(event.subject)
                        changed.notify_all()
            except grpc.RpcError:
                pass  # cancelled below

        last_op = [""]
        reader = threading.Thread(target=collect, daemon=True)
        reader.start()
        time.sleep(0.3)  # Watch has no "subscribed" reply: give the stream a moment to reach yardd
        try:
            op = yard.compose(args.name, gpus=args.gpus)
            print(f"{op.id}: compose {args.name} accepted on {op.host_id}")
            last_op[0] = op.id
            op = yard.wait(op.id)
            system = yard.system(args.name)
            for b in system.bindings:
                print(f"  {b.device_id}  {b.uuid or '-'}  {b.host_pci_address or '-'}")
            if not args.keep:
                op = yard.decompose(args.name)
                last_op[0] = op.id
                yard.wait(op.id)
                print(f"{args.name} decomposed")
            # The last operation's own end event (not the compose's, which may arrive after it was waited for).
            with changed:
                changed.wait_for(lambda: last_op[0] in ended, timeout=5)
        except OperationFailed as failed:
            print(failed, file=sys.stderr)
            return 1
        except grpc.RpcError as error:
            print(f"yardd said {error.code().name}: {error.details()}", file=sys.stderr)
            return 1
        finally:
            stream.cancel()
            reader.join(timeout=5)
        for event in events:
            print(f"  event {event.sequence} {event.type} {event.subject}: {event.message}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
