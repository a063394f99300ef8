"""Fixtures: one real proximityd per test module (on free loopback ports) and clients to it."""
from __future__ import annotations

from typing import Iterator

import numpy as np
import pytest

import support
from proximity_client import Client, SceneInfo


@pytest.fixture(scope="module")
def daemon() -> Iterator[support.Daemon]:
    """A proximityd with the built-in default scene, killed at teardown."""
    d = support.Daemon().start()
    try:
        yield d
    finally:
        d.kill()


@pytest.fixture(scope="module")
def client(daemon: support.Daemon) -> Iterator[Client]:
    with daemon.client() as c:
        c.wait_until_serving()
        yield c


@pytest.fixture(scope="module")
def info(client: Client) -> SceneInfo:
    """The built-in scene as the daemon describes it."""
    return client.get_scene("default")


@pytest.fixture
def rng(request: pytest.FixtureRequest) -> np.random.Generator:
    """A generator seeded from the test's name: fixed across runs, different between tests."""
    seed = sum(ord(c) * (i + 1) for i, c in enumerate(request.node.name)) % (2**32)
    return np.random.default_rng(seed)
