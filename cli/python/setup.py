"""Builds switchyard_client with the generated switchyard.v1 modules (the metadata is in pyproject.toml).

The generated modules are made at build time from the .proto files, never committed: from
$SWITCHYARD_PROTO_DIR, else ../../proto (this directory inside a Switchyard checkout)."""
import os
import pathlib
import shutil
import subprocess
import sys

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = pathlib.Path(__file__).resolve().parent
PROTOS = ["switchyard/v1/switchyard.proto", "switchyard/v1/agent.proto", "switchyard/v1/provider.proto",
          "switchyard/v1/accounting.proto"]


def proto_dir():
    candidates = [os.environ.get("SWITCHYARD_PROTO_DIR", ""), str(HERE.parent.parent / "proto")]
    for candidate in filter(None, candidates):
        if all((pathlib.Path(candidate) / p).is_file() for p in PROTOS):
            return pathlib.Path(candidate)
    sys.exit("switchyard-client: cannot find the switchyard.v1 .proto files: build from a Switchyard checkout "
             "(cli/python) or set SWITCHYARD_PROTO_DIR to its proto/ directory")


def generate(out):
    """protoc --python_out and the gRPC stubs for every .proto, into `out`, with package __init__ files."""
    source = proto_dir()
    out.mkdir(parents=True, exist_ok=True)
    protoc, plugin = shutil.which("protoc"), shutil.which("grpc_python_plugin")
    if protoc and plugin:
        command = [protoc, f"--plugin=protoc-gen-grpc={plugin}", "--grpc_out", str(out)]
    else:
        try:
            import grpc_tools  # noqa: F401
        except ImportError:
            sys.exit("switchyard-client: generating the switchyard.v1 modules needs protoc and grpc_python_plugin "
                     "(apt-get install protobuf-compiler protobuf-compiler-grpc) or grpc_tools")
        command = [sys.executable, "-m", "grpc_tools.protoc", "--grpc_python_out", str(out)]
    subprocess.run(command + [f"--proto_path={source}", f"--python_out={out}"] + [str(source / p) for p in PROTOS], check=True)
    for package in (out / "switchyard", out / "switchyard" / "v1"):
        (package / "__init__.py").touch()


class BuildWithGeneratedModules(build_py):
    def run(self):
        super().run()
        generate(pathlib.Path(self.build_lib))


setup(cmdclass={"build_py": BuildWithGeneratedModules})
