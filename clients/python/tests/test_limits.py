"""Server limits against real proximityd processes: scenes, memory and versions kept within bounds by
least-recently-used eviction (counted), RESOURCE_EXHAUSTED naming the limit when nothing can give,
triangle limits checked before anything is built, a duplicate CreateScene answered without building,
paginated ListScenes, responses over the message limit refused (not counted as OK), failed calls
logged at a bounded rate, and request strings echoed only in bounded form."""
from __future__ import annotations

import json
import time
from typing import Dict, List

import grpc
import numpy as np
import pytest

import support
from proximity_client import Client, NotFoundError, ResourceExhaustedError, geometry
from proximity_client.client import configurations, pb


def _metric(daemon: support.Daemon, name: str) -> float:
    samples = support.metric_samples(support.fetch(daemon.metrics_url))
    return sum(s.value for s in samples.get(name, []))


def _box_scene(c: Client, x: float) -> str:
    """A small scene of our own: the built-in robot and one box at x (each x is distinct content)."""
    box = geometry.collision_object("box", [geometry.box([0.1, 0.1, 0.1])], at=[x, 0.6, 0.3])
    return c.create_scene(urdf_path=support.KR5_URDF, objects=[box]).scene_id


def _ids(c: Client) -> List[str]:
    return [s.scene_id for s in c.list_scenes()]


def test_scene_count_evicts_least_recently_used() -> None:
    with support.Daemon("--max-scenes", "3") as d, d.client(timeout=60) as c:
        c.wait_until_serving()
        default = c.get_scene("default").scene_id
        a = _box_scene(c, 0.50)
        b = _box_scene(c, 0.51)
        assert set(_ids(c)) == {default, a, b}
        c.check_state(np.zeros(6), scene=a)  # a is now used more recently than b
        e = _box_scene(c, 0.52)
        ids = set(_ids(c))
        assert ids == {default, a, e}, "b, the least recently used, should have gone"
        assert _metric(d, "proximity_scene_evictions_total") == 1
        # (the raw stub: the client itself would re-send a scene it created)
        with pytest.raises(grpc.RpcError) as e:
            c._stub.GetScene(pb.GetSceneRequest(scene_id=b), timeout=10)
        assert e.value.code() == grpc.StatusCode.NOT_FOUND
        assert c.get_scene("default").scene_id == default  # never evicted


def test_versions_of_one_scene_are_bounded() -> None:
    with support.Daemon("--max-versions", "2") as d, d.client(timeout=60) as c:
        c.wait_until_serving()
        base = _box_scene(c, 0.5)
        v1 = c.update_world(move={"box": [0.5, 0.6, 0.35]}, scene=base).scene_id
        v2 = c.update_world(move={"box": [0.5, 0.6, 0.40]}, scene=v1).scene_id
        ids = set(_ids(c))
        assert v1 in ids and v2 in ids and base not in ids
        assert _metric(d, "proximity_scene_evictions_total") == 1


def test_memory_limit_evicts_then_refuses() -> None:
    # Meshes of about 0.2 MiB each (a 4,000-triangle soup with its hierarchies); a 1 MiB budget holds a few.
    rng = np.random.default_rng(8)

    def mesh_scene(c: Client, n_tri: int, x: float) -> str:
        v = rng.uniform(-0.05, 0.05, (3 * n_tri, 3))
        t = np.arange(3 * n_tri).reshape(n_tri, 3)
        part = geometry.mesh(v, t)
        return c.create_scene(urdf_path=support.KR5_URDF,
                              objects=[geometry.collision_object("soup", [part], at=[x, 0.6, 0.3])]).scene_id

    with support.Daemon("--max-memory-mb", "12") as d, d.client(timeout=60) as c:
        c.wait_until_serving()
        loaded = [mesh_scene(c, 4000, 0.5 + 0.01 * i) for i in range(12)]
        held = _metric(d, "proximity_scene_bytes")
        assert 0 < held <= 12 * 2**20, held
        assert _metric(d, "proximity_scene_evictions_total") > 0
        assert loaded[-1] in _ids(c)
        # A scene that cannot fit even alone: refused by name, nothing evicted for it.
        before = set(_ids(c))
        with pytest.raises(ResourceExhaustedError) as e:
            mesh_scene(c, 60_000, 0.9)
        assert "--max-memory-mb" in e.value.details
        assert set(_ids(c)) == before


def test_triangle_limit_is_checked_before_building() -> None:
    with support.Daemon("--max-scene-triangles", "5000") as d, d.client(timeout=60) as c:
        c.wait_until_serving()
        builds = _metric(d, "proximity_scene_builds_total")
        v = np.zeros((3 * 6000, 3))
        v[:, 0] = np.arange(3 * 6000) * 1e-4
        v[1::3, 1] = 0.01
        v[2::3, 2] = 0.01
        big = geometry.mesh(v, np.arange(3 * 6000).reshape(6000, 3))
        with pytest.raises(ResourceExhaustedError) as e:
            c.create_scene(urdf_path=support.KR5_URDF, objects=[geometry.collision_object("big", [big])])
        assert "--max-scene-triangles" in e.value.details
        assert _metric(d, "proximity_scene_builds_total") == builds, "the scene was built before refusing"


def test_duplicate_create_is_answered_without_building(client: Client, daemon: support.Daemon) -> None:
    first = client.create_scene(urdf_path=support.KR5_URDF,
                                objects=[geometry.collision_object("b", [geometry.box([0.2, 0.2, 0.2])],
                                                                   at=[0.6, 0.1, 0.2])])
    builds = _metric(daemon, "proximity_scene_builds_total")
    again = client.create_scene(urdf_path=support.KR5_URDF,
                                objects=[geometry.collision_object("b", [geometry.box([0.2, 0.2, 0.2])],
                                                                   at=[0.6, 0.1, 0.2])])
    assert again.scene_id == first.scene_id and not again.created
    assert _metric(daemon, "proximity_scene_builds_total") == builds
    moved = client.update_world(move={"b": [0.6, 0.1, 0.25]}, scene=first.scene_id)
    builds = _metric(daemon, "proximity_scene_builds_total")
    assert client.update_world(move={"b": [0.6, 0.1, 0.25]}, scene=first.scene_id).scene_id == moved.scene_id
    assert _metric(daemon, "proximity_scene_builds_total") == builds


def test_list_scenes_is_paginated(client: Client) -> None:
    made = [_box_scene(client, 0.3 + 0.01 * i) for i in range(7)]
    stub = client._stub
    seen: List[str] = []
    token = ""
    pages = 0
    while True:
        r = stub.ListScenes(pb.ListScenesRequest(page_size=3, page_token=token), timeout=10)
        assert len(r.scenes) <= 3
        seen += [s.scene_id for s in r.scenes]
        pages += 1
        token = r.next_page_token
        if not token:
            break
    assert seen == sorted(seen) and len(seen) == len(set(seen))
    assert set(made) <= set(seen)
    assert pages >= 3
    assert seen == [s.scene_id for s in client.list_scenes()]  # the client pages through all of them
    with pytest.raises(grpc.RpcError) as e:
        stub.ListScenes(pb.ListScenesRequest(page_size=-1), timeout=10)
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_oversize_responses_are_refused_not_counted_ok() -> None:
    with support.Daemon("--max-message-bytes", str(256 * 1024)) as d, d.client(timeout=60) as c:
        c.wait_until_serving()
        # 1,500 small boxes: a distance query with per-pair intervals answers for every robot part and
        # box, far more than the 256 KiB the request itself needs.
        boxes = [geometry.collision_object(f"b{i}", [geometry.box([0.02, 0.02, 0.02])],
                                           at=[2.0 + 0.05 * (i % 40), 0.05 * (i // 40), 0.5]) for i in range(1500)]
        scene = c.create_scene(urdf_path=support.KR5_URDF, objects=boxes).scene_id
        request = pb.ComputeDistanceRequest(scene_id=scene, state=pb.JointPositions(positions=[0.0] * 6),
                                            per_pair=True)
        with pytest.raises(grpc.RpcError) as e:
            c._stub.ComputeDistance(request, timeout=60)
        assert e.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "--max-message-bytes" in e.value.details()
        assert _metric(d, "proximity_oversize_responses_total") == 1
        samples = support.metric_samples(support.fetch(d.metrics_url))
        handled = {s.labels.get("grpc_code"): s.value for s in samples["grpc_server_handled_total"]
                   if s.labels.get("grpc_method") == "ComputeDistance"}
        assert handled.get("ResourceExhausted") == 1 and not handled.get("OK"), handled
        # The same query without the per-pair list fits.
        request.per_pair = False
        assert c._stub.ComputeDistance(request, timeout=60).upper_bound > 0


def test_a_timed_trajectory_too_large_for_a_message_is_refused_by_name() -> None:
    with support.Daemon("--max-message-bytes", str(256 * 1024)) as d, d.client(timeout=60) as c:
        c.wait_until_serving()
        info = c.get_scene("default")
        rng = np.random.default_rng(5)
        states = info.sample(100, rng)
        start, goal = states[np.flatnonzero(c.check_states(states))[:2]]
        # 0.1 ms samples of a motion of seconds: tens of thousands of rows of positions, velocities and
        # accelerations, far beyond 256 KiB.
        with pytest.raises(ResourceExhaustedError, match="timing.resample_dt"):
            c.plan(start, goal, seed=1, default_acceleration=1.0, resample_dt=1e-4)
        r = c.plan(start, goal, seed=1, default_acceleration=1.0, resample_dt=0.05)
        assert r.solved and r.trajectory is not None and len(r.trajectory.time) > 2


def _failed_lines(d: support.Daemon) -> List[Dict]:
    return d.log_records(msg="rpc failed")


def test_abuse_is_logged_at_a_bounded_rate_with_bounded_strings() -> None:
    with support.Daemon() as d, d.client(timeout=10) as c:
        c.wait_until_serving()
        huge_id = "x" * 100_000
        start = time.monotonic()
        n = 600
        for _ in range(n):
            with pytest.raises(NotFoundError) as e:
                c.get_scene(huge_id)
            assert len(e.value.details) < 400, len(e.value.details)
        elapsed = time.monotonic() - start
        assert support.eventually(lambda: _metric(d, "proximity_log_lines_suppressed_total") > 0, timeout=5)
        lines = _failed_lines(d)
        # The bucket: a burst of 50, then 20 a second.
        assert len(lines) <= 50 + 20 * (elapsed + 1) + 5, (len(lines), elapsed)
        assert len(lines) + _metric(d, "proximity_log_lines_suppressed_total") == n
        assert all(len(json.dumps(rec)) < 2000 for rec in lines)
        # After a pause the next failure is logged and says how many it stands for.
        time.sleep(1.0)
        with pytest.raises(NotFoundError):
            c.get_scene("no-such-scene")
        assert support.eventually(lambda: any(r.get("suppressed_before", 0) > 0 for r in _failed_lines(d)), timeout=5)


def test_concurrent_calls_beyond_the_quota_are_refused() -> None:
    """--max-concurrent-calls bounds the handler threads: calls beyond it get RESOURCE_EXHAUSTED at
    once instead of queueing without bound, and the server answers normally afterwards."""
    import threading
    from proximity_client import ProximityError
    with support.Daemon("--max-concurrent-calls", "4") as d, d.client(timeout=60) as c:
        c.wait_until_serving()
        q0 = np.zeros(6)
        short = np.stack([q0, q0 + 1e-3])
        # Just under the 1e7 states a call may ask: seconds of work, so that the admitted calls are still
        # running when the others arrive.
        resolution = float(np.linalg.norm(short[1] - short[0])) / 0.99e7
        codes: List[str] = []
        messages: List[str] = []

        def call() -> None:
            try:
                with Client(d.target, timeout=1) as cc:
                    cc.check_motion(*short, mode="discrete", resolution=resolution)
                codes.append("OK")
            except ProximityError as e:
                codes.append(e.code.name)
                if e.code.name == "RESOURCE_EXHAUSTED":
                    messages.append(str(e))

        threads = [threading.Thread(target=call) for _ in range(10)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert len(codes) == 10
        assert codes.count("RESOURCE_EXHAUSTED") >= 5, codes
        # An admitted call ends at its deadline or, on a machine fast enough, with its answer: how long
        # the work takes is not what this test is about.
        assert set(codes) <= {"RESOURCE_EXHAUSTED", "DEADLINE_EXCEEDED", "OK"}, codes
        # The refusals name the limit and its value.
        assert all("--max-concurrent-calls" in m and " 4 " in m for m in messages), messages
        # The refused and expired calls' handlers end within their deadline check; once their threads are
        # back the server answers normally (a few retries cover the threads' release after the replies).
        give_up = time.monotonic() + 10.0
        while True:
            try:
                state = c.check_state(q0)
                break
            except ProximityError as e:
                assert e.code.name == "RESOURCE_EXHAUSTED" and time.monotonic() < give_up, e
                time.sleep(0.1)
        assert state.free is not None and c.health() == "SERVING"
