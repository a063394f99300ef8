"""Locates the generated gRPC stubs (proximity.v1 and grpc_health.v1).

The stubs are generated at build time (clients/CMakeLists.txt) under ``<build>/clients/python/gen`` or,
for an installed package, by ``setup.py`` next to the package. They are found, in order:

1. on ``sys.path`` already (``PYTHONPATH=clients/python/src:<build>/clients/python/gen``, or installed);
2. in the directories listed in the ``PROXIMITY_STUBS_DIR`` environment variable (``os.pathsep``
   separated), which are then appended to ``sys.path``.
"""
from __future__ import annotations

import importlib
import os
import sys
from types import ModuleType
from typing import Tuple

_HINT = (
    "the generated gRPC stubs (proximity.v1.proximity_pb2) were not found: build the project "
    "(target proximity_python_stubs) and put <build>/clients/python/gen on PYTHONPATH, or set "
    "PROXIMITY_STUBS_DIR=<build>/clients/python/gen"
)


def _load() -> Tuple[ModuleType, ModuleType, ModuleType, ModuleType]:
    names = ("proximity.v1.proximity_pb2", "proximity.v1.proximity_pb2_grpc",
             "grpc_health.v1.health_pb2", "grpc_health.v1.health_pb2_grpc")
    try:
        return tuple(importlib.import_module(n) for n in names)  # type: ignore[return-value]
    except ImportError as first_error:
        extra = [d for d in os.environ.get("PROXIMITY_STUBS_DIR", "").split(os.pathsep) if d]
        if not extra:
            raise ImportError(_HINT) from first_error
        for d in extra:
            if d not in sys.path:
                sys.path.append(d)
        # A failed import of a namespace package is cached; forget it before retrying.
        for n in ("proximity", "proximity.v1", "grpc_health", "grpc_health.v1"):
            sys.modules.pop(n, None)
        importlib.invalidate_caches()
        try:
            return tuple(importlib.import_module(n) for n in names)  # type: ignore[return-value]
        except ImportError as second_error:
            raise ImportError(f"{_HINT} (PROXIMITY_STUBS_DIR={os.environ['PROXIMITY_STUBS_DIR']!r})") \
                from second_error


pb, pb_grpc, health_pb, health_pb_grpc = _load()

__all__ = ["pb", "pb_grpc", "health_pb", "health_pb_grpc"]
