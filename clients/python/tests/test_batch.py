"""Large batches: 100,000 states round trip through the chunked, pipelined CheckStates path."""
from __future__ import annotations

import time

import numpy as np

import support
from proximity_client import Client, SceneInfo


def test_100k_state_batch_round_trip(client: Client, info: SceneInfo) -> None:
    rng = np.random.default_rng(100_000)
    states = info.sample(100_000, rng)
    t0 = time.perf_counter()
    free = client.check_states(states)  # default chunking: 64 Ki rows per request, 2 in flight
    elapsed = time.perf_counter() - t0
    assert free.shape == (100_000,) and free.dtype == bool
    print(f"100k states: {free.sum()} free, {elapsed:.2f} s, {100_000 / elapsed:,.0f} states/s")

    # One request with every row (5.6 MB, above gRPC's 4 MiB default: the raised limits carry it).
    one = client.check_states(states, batch_size=100_000)
    np.testing.assert_array_equal(one, free)
    # Rows land at their index: reversed input, reversed answers.
    np.testing.assert_array_equal(client.check_states(states[::-1], batch_size=30_000), free[::-1])

    # An independent check of a spread-out sample against the core in process.
    idx = rng.choice(len(states), 600, replace=False)
    expect = np.array([a["free"] for a in support.tool_states(states[idx])])
    np.testing.assert_array_equal(free[idx], expect)
    assert 0.05 < free.mean() < 0.95


def test_single_row_batch_equals_check_state(client: Client, info: SceneInfo) -> None:
    q = np.zeros((1, info.dof))
    assert client.check_states(q).tolist() == [client.check_state(q[0]).free]
