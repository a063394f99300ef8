"""Operations: health, Prometheus metrics that count the calls made, and SIGTERM while a long batch runs.

SIGTERM contract checked here: the daemon stops accepting calls, lets the batch in flight finish (its
answers equal the same batch's on another daemon) or ends it cleanly with UNAVAILABLE or CANCELLED (never
a wrong answer or another error), and exits 0.
"""
from __future__ import annotations

import threading
import time
from typing import Any, Dict

import grpc
import numpy as np
import pytest

import support
from proximity_client import Client, InvalidArgumentError, ProximityError, SceneInfo, UnavailableError


def test_health_serving(client: Client) -> None:
    assert client.health() == "SERVING"


def _handled(samples: Dict[str, list], method: str, code: str) -> float:
    """grpc_server_handled_total{grpc_method=method, grpc_code=code}. go-grpc-prometheus spells codes as
    Go does ("InvalidArgument"); "INVALID_ARGUMENT" is accepted too."""
    def norm(c: str) -> str:
        return c.replace("_", "").lower()
    total = 0.0
    for s in samples.get("grpc_server_handled_total", []):
        if s.labels.get("grpc_method") == method and norm(s.labels.get("grpc_code", "")) == norm(code):
            total += s.value
    return total


def test_metrics_count_the_calls(info: SceneInfo) -> None:
    with support.Daemon() as d, d.client() as c:
        c.wait_until_serving()
        before = support.metric_samples(support.fetch(d.metrics_url))
        q = info.sample(20, np.random.default_rng(9))
        for row in q[:7]:
            c.check_state(row)
        for _ in range(3):
            c.check_states(q)
        bad = q[0].copy()
        bad[0] = float("nan")
        with pytest.raises(InvalidArgumentError):
            c.check_state(bad)
        c.check_motion(q[0], q[1])
        text = support.fetch(d.metrics_url)
        after = support.metric_samples(text)  # parses as Prometheus text, or raises
        assert _handled(after, "CheckState", "OK") - _handled(before, "CheckState", "OK") == 7
        assert _handled(after, "CheckState", "INVALID_ARGUMENT") - _handled(before, "CheckState",
                                                                            "INVALID_ARGUMENT") == 1
        assert _handled(after, "CheckStates", "OK") - _handled(before, "CheckStates", "OK") == 3
        assert _handled(after, "CheckMotion", "OK") - _handled(before, "CheckMotion", "OK") == 1
        started = sum(s.value for s in after.get("grpc_server_started_total", [])
                      if s.labels.get("grpc_method") == "CheckState")
        assert started >= 8
        # A latency histogram with the calls in it.
        counts = [s for s in after.get("grpc_server_handling_seconds_count", [])
                  if s.labels.get("grpc_method") == "CheckStates"]
        assert counts and sum(s.value for s in counts) >= 3
        # Domain counters: CLEAR counts states (7 single + 3 batches of 20), LINK counts segments.
        def queries(samples: Dict[str, list], kind: str) -> float:
            return sum(x.value for x in samples.get("proximity_queries_total", []) if x.labels.get("kind") == kind)
        assert queries(after, "clear") - queries(before, "clear") == 7 + 3 * 20
        assert queries(after, "link") - queries(before, "link") == 1
        loaded = after.get("proximity_scenes_loaded", [])
        assert loaded and loaded[0].value == len(c.list_scenes())


def test_sigterm_during_a_long_batch(client: Client, info: SceneInfo) -> None:
    states = info.sample(150_000, np.random.default_rng(15))
    expect = client.check_states(states)  # the answers, from the module's daemon
    d = support.Daemon().start()
    try:
        outcome: Dict[str, Any] = {}
        with d.client(timeout=120) as c:
            c.wait_until_serving()

            def run() -> None:
                try:
                    t0 = time.monotonic()
                    outcome["answer"] = c.check_states(states, batch_size=150_000)
                    outcome["seconds"] = time.monotonic() - t0
                except ProximityError as e:
                    outcome["error"] = e

            worker = threading.Thread(target=run)
            worker.start()
            # SIGTERM once the server has started the call (its started counter says so).
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                started = support.metric_samples(support.fetch(d.metrics_url)).get("grpc_server_started_total", [])
                if any(s.labels.get("grpc_method") == "CheckStates" and s.value >= 1 for s in started):
                    break
                time.sleep(0.01)
            assert worker.is_alive(), "the batch finished before SIGTERM; make it longer"
            rc = d.terminate(timeout=60)
            worker.join(timeout=60)
            assert not worker.is_alive()
        assert rc == 0, d.stderr_text()
        if "answer" in outcome:
            np.testing.assert_array_equal(outcome["answer"], expect)
            print("SIGTERM: the in-flight batch completed with correct answers, then the daemon exited 0")
        else:
            err: ProximityError = outcome["error"]
            assert err.code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED), err
            print(f"SIGTERM: the in-flight batch ended with {err.code.name}, then the daemon exited 0")
        with Client(d.target, timeout=2) as late:
            with pytest.raises(UnavailableError):
                late.check_state(states[0])
    finally:
        d.kill()
