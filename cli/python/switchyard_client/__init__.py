"""A small Python client for Switchyard's gRPC API (switchyard.v1), on Debian's python3-grpcio.

    from switchyard_client import Client
    with Client("127.0.0.1:7390", ca="/var/lib/switchyard/grpc-cert.pem", token_file="~/.yard-token") as yard:
        op = yard.compose("train-a", gpus=4)
        op = yard.wait(op.id)             # follows the operation until it ends
        for event in yard.watch():        # live events, as they happen
            print(event.type, event.message)

Results are the API's own protobuf messages (switchyard.v1), typed and documented in proto/. Install with
`pip install ./cli/python` (which generates the switchyard.v1 modules from proto/) or the python3-switchyard
package. See cli/python/README.md.
"""
from .client import Client, OperationFailed, ResourceStatus, endpoint_request, gpu_request, peer_to_peer_value
from .version import __version__

__all__ = ["Client", "OperationFailed", "ResourceStatus", "endpoint_request", "gpu_request", "peer_to_peer_value", "__version__"]
