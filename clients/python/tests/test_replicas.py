"""Riding through replica loss: real proximityd replicas on loopback ports behind one client target.

The kill test drives batches of states (CheckStates: 96 x 2,000), motion checks and path streams
(ValidatePaths: 8 x 128 paths) over three replicas from a worker thread, SIGKILLs one replica while calls are in flight, then starts
a fresh replica on the dead one's port (it lacks the client's scene). Every call must succeed, every
answer must equal the answer of a single replica, and the fresh replica must have been sent the scene
by the client. Expected answers come from one replica alone; the client's own counters say how many
calls it repeated and how many scenes it re-sent.
"""
from __future__ import annotations

import threading
from typing import Any, Dict, List

import grpc
import numpy as np
import pytest

import support
from proximity_client import Client, RetryPolicy, UnavailableError, geometry

# Faster reconnects than gRPC's defaults (1 s, growing to 120 s), so that a restarted replica is
# picked up within the test. Also what a planner wants in front of a Kubernetes Service.
FAST_RECONNECT = [("grpc.initial_reconnect_backoff_ms", 100), ("grpc.min_reconnect_backoff_ms", 100),
                  ("grpc.max_reconnect_backoff_ms", 1000)]


def _world() -> list:
    return [geometry.collision_object("wall", [geometry.box((0.05, 2.0, 2.0))], at=(0.5, 0.0, 0.5)),
            geometry.collision_object("ball", [geometry.sphere(0.15, at=(0.0, 0.0, 0.2))], at=(0.3, 0.3, 0.9))]


def _replicas(n: int, metrics: bool = False) -> List[support.Daemon]:
    out = []
    try:
        for _ in range(n):
            out.append(support.Daemon("--threads", "1", "--log-level", "warn", metrics=metrics).start())
    except BaseException:
        for d in out:
            d.kill()
        raise
    return out


@pytest.mark.parametrize("target, message", [
    ("", "target is empty"),
    ("127.0.0.1", "is not host:port"),
    ("127.0.0.1:0", "no port in [1, 65535]"),
    ("127.0.0.1:5,,127.0.0.1:6", "an empty address"),
    ("localhost:5,127.0.0.1:6", "is a name, not an IP address"),
    ("127.0.0.1:5,[::1]:6", "cannot be mixed"),
    ("dns:///proximityd", "is not host:port"),
    (["127.0.0.1:5", "127.0.0.1:99999"], "no port in [1, 65535]"),
])
def test_bad_targets_are_clear_errors(target: Any, message: str) -> None:
    with pytest.raises(ValueError) as e:
        Client(target)
    assert message in str(e.value)


@pytest.mark.parametrize("kwargs, message", [
    (dict(max_attempts=6), "max_attempts must be an integer in [2, 5]"),
    (dict(max_attempts=1), "max_attempts must be an integer in [2, 5]"),
    (dict(initial_backoff=0.0), "initial_backoff must be > 0"),
    (dict(initial_backoff=1.0, max_backoff=0.5), "max_backoff (0.5) must be >= initial_backoff (1.0)"),
    (dict(backoff_multiplier=0.5), "backoff_multiplier must be >= 1"),
    (dict(backoff_multiplier=float("inf")), "backoff_multiplier must be finite"),
    (dict(rounds=-1), "rounds must be an integer >= 0"),
])
def test_bad_retry_settings_are_clear_errors(kwargs: Dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError) as e:
        RetryPolicy(**kwargs)
    assert message in str(e.value)
    with pytest.raises(ValueError, match="retry must be a RetryPolicy"):
        Client("127.0.0.1:50051", retry={"max_attempts": 3})  # type: ignore[arg-type]


def test_address_lists_spread_calls_over_every_replica() -> None:
    """A list and a comma string reach every replica (round robin is on by default for several
    addresses): each replica's CheckStates count grows."""
    replicas = _replicas(2, metrics=True)
    try:
        probe = np.zeros((4, 6))
        for target in ([d.target for d in replicas], ",".join(d.target for d in replicas)):
            with Client(target, timeout=60) as c:
                assert c.target.startswith("ipv4:")
                before = [_served(d, "CheckStates") for d in replicas]
                counts: List[List[int]] = []

                # A subchannel may still be connecting when the first calls go out (round robin sends
                # them to the ready ones), so calls continue until every replica has served one: with
                # round robin that takes a few calls, with a policy that sticks to one replica it never
                # happens.
                def every_replica_served() -> bool:
                    c.check_states(probe)
                    counts.append([_served(d, "CheckStates") for d in replicas])
                    return all(a > b for a, b in zip(counts[-1], before))

                assert support.eventually(every_replica_served, timeout=30, interval=0.01), (before, counts[-1])
                assert len(counts) <= 200, f"{len(counts)} calls before every replica served one"
    finally:
        for d in replicas:
            d.kill()


def _served(d: support.Daemon, rpc: str) -> int:
    """How many calls of `rpc` replica `d` has completed (its grpc_server_handled_total)."""
    samples = support.metric_samples(support.fetch(d.metrics_url))
    return int(sum(s.value for s in samples.get("grpc_server_handled_total", [])
                   if s.labels.get("grpc_method") == rpc))


def test_dns_name_with_round_robin() -> None:
    """``dns:///localhost:PORT`` resolves to the loopback addresses; the replica binds 127.0.0.1 only,
    and round robin uses the address that answers."""
    with support.Daemon("--threads", "1", metrics=False) as d, \
            Client(f"dns:///localhost:{d.port}", timeout=60) as c:
        c.wait_until_serving(timeout=30)
        info = c.get_scene()
        assert info.dof == 6
        assert c.check_states(np.zeros((3, 6))).shape == (3,)


def test_every_replica_down_is_unavailable_after_the_retries() -> None:
    d = support.Daemon("--threads", "1", metrics=False).start()
    target = d.target
    d.kill()
    policy = RetryPolicy(max_attempts=3, initial_backoff=0.01, max_backoff=0.05, rounds=2)
    with Client([target, target], timeout=10, retry=policy) as c:
        with pytest.raises(UnavailableError):
            c.check_state(np.zeros(6))
        assert c.unavailable_retries == 2
    with Client(target, timeout=10, retry=None) as c:
        with pytest.raises(UnavailableError):
            c.check_state(np.zeros(6))
        assert c.unavailable_retries == 0


def test_a_replica_killed_mid_run_and_a_fresh_one_lose_no_query(tmp_path: Any) -> None:
    rng = np.random.default_rng(17)
    replicas = _replicas(3)
    fresh = None
    try:
        # The reference: one replica alone, the scene uploaded (URDF, SRDF-less, meshes read here).
        with Client(replicas[0].target, timeout=120) as single:
            scene = single.create_scene_from_files(support.KR5_URDF, objects=_world())
            info = single.get_scene(scene.scene_id)
            lower, upper = np.array([l.lower for l in info.limits]), np.array([l.upper for l in info.limits])
            chunks = [lower + rng.random((2000, info.dof)) * (upper - lower) for _ in range(96)]
            q0, q1 = support.random_motions(rng, lower, upper, 40)
            # 8 rounds of 128 paths: 1,024 paths validated over the replicas during the run.
            paths = [np.vstack([lower + rng.random((1, info.dof)) * (upper - lower) for _ in range(6)])
                     for _ in range(128)]
            expect_states = [single.check_states(c, scene=scene.scene_id) for c in chunks]
            expect_motions = [single.check_motion(a, b, scene=scene.scene_id) for a, b in zip(q0, q1)]
            expect_paths = single.validate_paths(paths, progress=False, scene=scene.scene_id)
        # Only replica 0 has the scene: the others get it from the client on their first NOT_FOUND.
        victim = replicas[1]
        client = Client([d.target for d in replicas], timeout=120, options=FAST_RECONNECT)
        client.create_scene_from_files(support.KR5_URDF, objects=_world())
        assert client.owns_scene(scene.scene_id)

        got_states: Dict[int, np.ndarray] = {}
        got_motions: Dict[int, Any] = {}
        got_paths: List[Any] = []

        def step(i: int) -> None:
            got_states[i] = client.check_states(chunks[i], scene=scene.scene_id, batch_size=500)
            j = i % len(q0)
            got_motions[j] = client.check_motion(q0[j], q1[j], scene=scene.scene_id)
            if i % 12 == 11:
                got_paths.append(client.validate_paths(paths, progress=False, scene=scene.scene_id))

        # A fresh replica where the dead one listened: it has only the built-in scene.
        fresh = support.run_through_a_kill(len(chunks), step, victim, lambda: support.Daemon(
            "--threads", "1", "--log-level", "warn", metrics=False, port=victim.port).start())

        # Every answer equals the single replica's.
        for i, expect in enumerate(expect_states):
            np.testing.assert_array_equal(got_states[i], expect)
        for j, r in got_motions.items():
            e = expect_motions[j]
            assert (r.free, r.t_free, r.t_collide) == (e.free, e.t_free, e.t_collide), j
        assert len(got_paths) == len(chunks) // 12
        assert len(got_paths) * len(paths) >= 1000
        for results in got_paths:
            assert [(r.free, r.segment, r.motion.t_free, r.motion.t_collide) for r in results] == \
                   [(r.free, r.segment, r.motion.t_free, r.motion.t_collide) for r in expect_paths]

        # The fresh replica is reached (round robin reconnects) and receives the scene from the client.
        def fresh_has_scene() -> bool:
            client.check_states(chunks[0], scene=scene.scene_id, batch_size=500)
            with fresh.client(timeout=30) as f:
                return scene.scene_id in {s.scene_id for s in f.list_scenes()}
        assert support.eventually(fresh_has_scene, timeout=60, interval=0.1)
        with fresh.client(timeout=60) as f:
            np.testing.assert_array_equal(f.check_states(chunks[0], scene=scene.scene_id), expect_states[0])
        assert client.scene_restores >= 2  # replica 2 and the fresh one at least (and maybe the victim)
        print(f"\n[replicas] {len(chunks)} batches of {len(chunks[0])} states, {len(chunks)} motions, "
              f"{len(got_paths)} x {len(paths)} paths over 3 replicas, one SIGKILLed mid-run and replaced: "
              f"0 failed; the client repeated {client.unavailable_retries} calls after UNAVAILABLE and re-sent "
              f"the scene {client.scene_restores} times")
        client.close()
    finally:
        for d in replicas + ([fresh] if fresh is not None else []):
            d.kill()


def test_a_session_whose_replica_is_killed_is_opened_again_on_another() -> None:
    """A session on the client's own scene over two replicas: opened where the scene may be missing
    (NOT_FOUND at open: the client re-sends it), then its replica SIGKILLed between round trips. The
    next round trip fails UNAVAILABLE, the session is opened again on the other replica, and every answer
    equals a third replica's reached alone."""
    rng = np.random.default_rng(31)
    replicas = _replicas(2, metrics=True)
    reference = support.Daemon("--threads", "1", "--log-level", "warn", metrics=False).start()
    try:
        with Client([d.target for d in replicas], timeout=60, options=FAST_RECONNECT) as client, \
                reference.client(timeout=60) as direct:
            scene = client.create_scene_from_files(support.KR5_URDF, objects=_world())
            assert direct.create_scene_from_files(support.KR5_URDF, objects=_world()).scene_id == scene.scene_id
            info = direct.get_scene(scene.scene_id)
            lower, upper = np.array([l.lower for l in info.limits]), np.array([l.upper for l in info.limits])
            chunks = [lower + rng.random((100, info.dof)) * (upper - lower) for _ in range(6)]
            q0, q1 = support.random_motions(rng, lower, upper, 6)
            expect = [direct.check_states(c, scene=scene.scene_id) for c in chunks]
            expect_motions = [direct.check_motion(a, b, scene=scene.scene_id) for a, b in zip(q0, q1)]
            with client.session(scene=scene.scene_id) as s:
                victim = None
                for i, (c, a, b) in enumerate(zip(chunks, q0, q1)):
                    np.testing.assert_array_equal(s.check_states(c), expect[i])
                    r, e = s.check_motion(a, b), expect_motions[i]
                    assert (r.free, r.t_free, r.t_collide) == (e.free, e.t_free, e.t_collide)
                    if i == 2:
                        serving = [d for d in replicas if _in_flight(d, "Session") > 0]
                        assert len(serving) == 1, "one replica should hold the session's stream"
                        victim = serving[0]
                        victim.proc.send_signal(9)
                        victim.proc.wait()
                assert victim is not None and s.reopened >= 1
            assert client.unavailable_retries >= 1
    finally:
        for d in replicas + [reference]:
            d.kill()


def _in_flight(d: support.Daemon, rpc: str) -> int:
    """Calls of `rpc` replica `d` has started and not yet finished."""
    samples = support.metric_samples(support.fetch(d.metrics_url))

    def total(name: str) -> float:
        return sum(s.value for s in samples.get(name, []) if s.labels.get("grpc_method") == rpc)
    return int(total("grpc_server_started_total") - total("grpc_server_handled_total"))


def test_max_connection_age_makes_the_client_reconnect() -> None:
    """With --max-connection-age-seconds 1 the server closes the connection after about a second
    (GOAWAY): the channel leaves READY by itself, and the next call connects again and succeeds."""
    with support.Daemon("--threads", "1", "--max-connection-age-seconds", "1",
                        "--max-connection-age-grace-seconds", "1", metrics=False) as d:
        with Client(d.target, timeout=30) as c:
            c.wait_until_serving(timeout=30)
            states: List[grpc.ChannelConnectivity] = []
            left_ready = threading.Event()

            def watch(state: grpc.ChannelConnectivity) -> None:
                states.append(state)
                if grpc.ChannelConnectivity.READY in states and state != grpc.ChannelConnectivity.READY:
                    left_ready.set()
            c._channel.subscribe(watch, try_to_connect=False)
            assert c.check_state(np.zeros(6)).free
            assert left_ready.wait(timeout=30), states
            c._channel.unsubscribe(watch)
            assert c.check_state(np.zeros(6)).free
