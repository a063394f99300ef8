"""Fixtures: one ROS master, one proximityd (built-in KR5 scene) and one proximity_bridge node per test
module, a rospy client node in the test process, and a direct Python client as the oracle."""
from __future__ import annotations

from typing import Any, Dict, Iterator

import numpy as np
import pytest

import rosenv


@pytest.fixture(scope="module")
def master() -> Iterator[rosenv.RosMaster]:
    m = rosenv.RosMaster().start()
    rosenv.init_client_node(m)
    try:
        yield m
    finally:
        m.stop()


@pytest.fixture(scope="module")
def daemon() -> Iterator[rosenv.Daemon]:
    d = rosenv.Daemon().start()
    try:
        yield d
    finally:
        d.kill()


@pytest.fixture(scope="module")
def bridge(master: rosenv.RosMaster, daemon: rosenv.Daemon) -> Iterator[rosenv.BridgeProcess]:
    """proximity_bridge on the built-in scene (no robot given)."""
    node = rosenv.BridgeProcess(master, target=daemon.target)
    try:
        yield node.wait_ready()
    finally:
        node.stop()


@pytest.fixture(scope="module")
def client(daemon: rosenv.Daemon) -> Iterator[Any]:
    with daemon.client() as c:
        c.wait_until_serving()
        yield c


@pytest.fixture(scope="module")
def srv(bridge: rosenv.BridgeProcess) -> Dict[str, Any]:
    return rosenv.proxies(bridge)


@pytest.fixture
def rng(request: pytest.FixtureRequest) -> np.random.Generator:
    """A generator seeded from the test's name: fixed across runs, different between tests."""
    seed = sum(ord(c) * (i + 1) for i, c in enumerate(request.node.name)) % (2**32)
    return np.random.default_rng(seed)
