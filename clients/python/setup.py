"""Builds the package with its gRPC stubs (pyproject.toml holds the metadata).

The stubs are generated while building, with the system's ``protoc`` (Debian: protobuf-compiler, the
version that matches python3-protobuf) and ``grpc_python_plugin`` (Debian: protobuf-compiler-grpc), from
``../../proto/proximity/v1/proximity.proto`` and grpc-proto's ``health.proto`` (staged as
``grpc_health/v1/health.proto`` so that it never shadows the ``grpc`` package). A wheel gets them next to
``proximity_client``; an editable install gets them in ``src/`` (git-ignored). Override the inputs with
PROXIMITY_PROTO_ROOT, PROXIMITY_HEALTH_PROTO, PROTOC and GRPC_PYTHON_PLUGIN.

    /usr/bin/python3 -m venv --system-site-packages /tmp/venv
    /tmp/venv/bin/pip install --no-build-isolation --no-index 'clients/python[progress]'
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
PROTO_ROOT = Path(os.environ.get("PROXIMITY_PROTO_ROOT", HERE.parent.parent / "proto"))
HEALTH_PROTO = Path(os.environ.get("PROXIMITY_HEALTH_PROTO", "/usr/share/grpc-proto/grpc/health/v1/health.proto"))


def generate_stubs(out: Path) -> None:
    """Writes proximity/v1/*_pb2*.py(i) and grpc_health/v1/*_pb2*.py(i) under ``out``."""
    protoc = os.environ.get("PROTOC") or shutil.which("protoc")
    plugin = os.environ.get("GRPC_PYTHON_PLUGIN") or shutil.which("grpc_python_plugin")
    if not protoc or not plugin:
        raise RuntimeError("protoc and grpc_python_plugin are needed to generate the gRPC stubs "
                           "(apt-get install protobuf-compiler protobuf-compiler-grpc)")
    for needed in (PROTO_ROOT / "proximity/v1/proximity.proto", HEALTH_PROTO):
        if not needed.is_file():
            raise RuntimeError(f"{needed} not found (set PROXIMITY_PROTO_ROOT / PROXIMITY_HEALTH_PROTO)")
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as staged:
        health = Path(staged) / "grpc_health/v1/health.proto"
        health.parent.mkdir(parents=True)
        shutil.copyfile(HEALTH_PROTO, health)
        for root, rel in ((PROTO_ROOT, "proximity/v1/proximity.proto"), (Path(staged), "grpc_health/v1/health.proto")):
            subprocess.run([protoc, f"-I{root}", f"--python_out={out}", f"--pyi_out={out}",
                            f"--grpc_python_out={out}", f"--plugin=protoc-gen-grpc_python={plugin}", str(root / rel)],
                           check=True)


class BuildPyWithStubs(build_py):
    """build_py that also generates the gRPC stubs."""

    def run(self) -> None:
        super().run()
        generate_stubs(HERE / "src" if getattr(self, "editable_mode", False) else Path(self.build_lib))


setup(cmdclass={"build_py": BuildPyWithStubs})
