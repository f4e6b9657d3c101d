"""A small Python client for Switchyard's gRPC API (switchyard.v1), on Debian's python3-grpcio.

    from switchyard_client import Client
    with Client("127.0.0.1:7390", ca="/var/lib/switchyard/grpc-cert.pem", token_file="~/.yard-token") as yard:
        op = yard.compose("train-a", gpus=4)
        op = yard.wait(op.id)             # follows the operation until it ends
        for event in yard.watch():        # live events, as they happen
            print(event.type, event.message)

The generated modules (switchyard.v1.*_pb2) come from the build: put <build>/python on PYTHONPATH next to
this package (cli/python). See cli/python/README.md.
"""
from .client import Client, OperationFailed, ResourceStatus

__all__ = ["Client", "OperationFailed", "ResourceStatus"]
