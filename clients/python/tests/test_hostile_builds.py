"""A hostile or careless caller against a real proximityd, second round: far and sliver triangles that
used to be dropped before any check saw them (a state through them answered free), robots too large to
build (a chain of 10,000 joints built for minutes past every memory limit and past SIGTERM's drain), and
error messages that told a remote caller the daemon's working directory.
"""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Optional

import numpy as np
import pytest

import support
from proximity_client import (Client, DeadlineExceededError, InvalidArgumentError, ProximityError,
                              ResourceExhaustedError, SceneInfo, geometry)


def _chain_urdf(joints: int) -> str:
    """A serial chain of `joints` revolute joints, each link a small box."""
    links = "".join(f'<link name="l{i}"><collision><geometry><box size="0.02 0.02 0.05"/></geometry>'
                    f'</collision></link>\n' for i in range(joints + 1))
    chain = "".join(f'<joint name="j{i}" type="revolute"><parent link="l{i}"/><child link="l{i + 1}"/>'
                    f'<origin xyz="0 0 0.06"/><axis xyz="0 1 0"/>'
                    f'<limit lower="-1" upper="1" effort="1" velocity="1"/></joint>\n' for i in range(joints))
    return f'<?xml version="1.0"?>\n<robot name="chain">\n{links}{chain}</robot>\n'


def _cpu_seconds(pid: int) -> float:
    """User and system processor time of a process so far, seconds."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _segment_mesh(a: np.ndarray, b: np.ndarray, height: float, far: Optional[float] = None) -> "geometry.pb.ObjectPart":
    """A triangle from a to b whose third corner lies `height` off the middle of ab (or at x = `far`),
    and an ordinary small triangle 3 m away, so the mesh has a triangle with an area."""
    d = (b - a) / np.linalg.norm(b - a)
    side = np.cross(d, [0.0, 0.0, 1.0] if abs(d[2]) < 0.9 else [1.0, 0.0, 0.0])
    side /= np.linalg.norm(side)
    c = np.array([far, 0.5, a[2]]) if far is not None else (a + b) / 2 + height * side
    extra = np.array([[3.0, 3.0, 0.0], [3.2, 3.0, 0.0], [3.0, 3.2, 0.0]])
    vertices = np.vstack([a, c, b, extra])
    return geometry.mesh(vertices, [[0, 1, 2], [0, 2, 1], [3, 4, 5]])


def test_a_sliver_through_a_link_collides_and_a_far_vertex_is_refused(client: Client, info: SceneInfo) -> None:
    home = np.zeros(info.dof)
    assert client.check_state(home, scene=info.scene_id).free
    poses = client.link_poses(home, scene=info.scene_id).poses[0]
    found = 0
    for link, pose in zip(info.links if hasattr(info, "links") else range(len(poses)), poses):
        p = np.asarray(pose[:3])
        for axis in np.eye(3):
            a, b = p - axis, p + axis
            # A visibly thick triangle along the same line: where it collides, its sliver must too.
            thick = client.update_world(add=[geometry.collision_object("probe", [_segment_mesh(a, b, 1e-3)])],
                                        scene=info.scene_id)
            if client.check_state(home, scene=thick.scene_id).free:
                client.delete_scene(thick.scene_id)
                continue
            client.delete_scene(thick.scene_id)
            # Height 1e-16 of a 2 m edge: zero area to mesh cleaning, which used to drop it (answer: free).
            sliver = client.update_world(add=[geometry.collision_object("probe", [_segment_mesh(a, b, 2e-16)])],
                                         scene=info.scene_id)
            assert not client.check_state(home, scene=sliver.scene_id).free, f"free through a sliver at {link}"
            assert any("zero area" in w for w in sliver.warnings), sliver.warnings
            client.delete_scene(sliver.scene_id)
            found += 1
    assert found >= 3, "too few links with a segment through them to test"
    # The far vertex: at 1e6 m the scene was refused, at 1e15 and 1e30 the triangle was dropped and the
    # state answered free.
    p = np.asarray(poses[len(poses) // 2][:3])
    for far in (1e6, 1e15, 1e30):
        with pytest.raises(InvalidArgumentError) as e:
            client.update_world(add=[geometry.collision_object("far_probe", [_segment_mesh(p - [1, 0, 0], p + [1, 0, 0],
                                                                                           0.0, far=far)])],
                                scene=info.scene_id)
        assert "extent" in str(e.value) and "far_probe" in str(e.value), str(e.value)
    assert client.health() == "SERVING"


def test_a_robot_of_ten_thousand_joints_is_refused_before_building(client: Client) -> None:
    start = time.monotonic()
    with pytest.raises(ResourceExhaustedError) as e:
        client.create_scene(urdf=_chain_urdf(10_000), timeout=60)
    assert "max_links" in str(e.value) and "10001" in str(e.value), str(e.value)
    assert time.monotonic() - start < 10.0
    # Self pairs: a 500-link chain is within the link caps but has about 125,000 pairs of links.
    with pytest.raises(ResourceExhaustedError) as e:
        client.create_scene(urdf=_chain_urdf(499), timeout=60)
    assert "max_self_pairs" in str(e.value), str(e.value)
    assert client.health() == "SERVING"


def test_caps_and_memory_are_flags_and_a_build_stops_at_its_deadline() -> None:
    with support.Daemon("--max-links", "50", "--max-memory-mb", "64", "--max-self-pairs", "10000000") as d:
        with d.client() as c:
            c.wait_until_serving()
            with pytest.raises(ResourceExhaustedError) as e:
                c.create_scene(urdf=_chain_urdf(60))
            assert "max_links" in str(e.value), str(e.value)
            assert c.create_scene(urdf=_chain_urdf(20)).dof == 20
    # A chain within every cap whose build takes long (its self pairs): the deadline ends it promptly and
    # the server stays responsive; its memory stays bounded.
    with support.Daemon("--max-self-pairs", "10000000", "--max-links", "3000", "--max-joints", "3000",
                        "--max-memory-mb", "8192") as d:
        with d.client() as c:
            c.wait_until_serving()
            # The built-in scene's self-clearance maps fill in the background after start-up: done
            # before the processor time below is measured.
            c.wait_until_self_clearance_filled("default")  # raises DeadlineExceededError if it never fills
            start = time.monotonic()
            with pytest.raises(DeadlineExceededError):
                c.create_scene(urdf=_chain_urdf(2500), timeout=1.0)
            elapsed = time.monotonic() - start
            assert elapsed < 4.0, f"the build ran {elapsed:.1f} s past a 1 s deadline"
            # The server stopped building (the client's deadline alone would not stop it): idle within
            # half a second, it then spends little processor time.
            time.sleep(0.5)
            busy = _cpu_seconds(d.proc.pid)
            time.sleep(1.0)
            busy = _cpu_seconds(d.proc.pid) - busy
            assert busy < 0.3, f"the server used {busy:.2f} s of processor time in 1 s after the deadline"
            assert c.health() == "SERVING"
            assert c.check_state(np.zeros(c.get_scene("default").dof), scene="default") is not None
            rss_kb = int(next(line.split()[1] for line in open(f"/proc/{d.proc.pid}/status")
                              if line.startswith("VmRSS")))
            assert rss_kb < 4 << 20, f"resident {rss_kb} kB after a stopped build"


def test_sigterm_ends_a_long_build_within_the_drain() -> None:
    with support.Daemon("--drain-seconds", "1", "--max-self-pairs", "10000000", "--max-links", "3000",
                        "--max-joints", "3000", "--max-memory-mb", "8192") as d:
        with d.client() as c:
            c.wait_until_serving()
            _, elapsed, _, running = support.terminate_during(
                d, lambda: c.create_scene(urdf=_chain_urdf(2500), timeout=120), after=1.0)
            assert elapsed < 1.0 + 4.0, f"SIGTERM took {elapsed:.1f} s with a 1 s drain"
            assert not running


def test_errors_never_name_the_working_directory(client: Client, daemon: support.Daemon, tmp_path: Path) -> None:
    cwd = os.readlink(f"/proc/{daemon.proc.pid}/cwd")
    urdf = ('<?xml version="1.0"?><robot name="r"><link name="a"><collision><geometry>'
            '<mesh filename="meshes/none.stl"/></geometry></collision></link></robot>')
    messages = []
    for call in (lambda: client.create_scene(urdf=urdf),
                 lambda: client.update_world(add=[geometry.collision_object(
                     "m", [geometry.mesh_file("relative/none.stl")])], scene="default")):
        with pytest.raises(ProximityError) as e:
            call()
        messages.append(str(e.value))
    for m in messages:
        assert "none.stl" in m, m
        if cwd != "/":
            assert cwd not in m, f"the daemon's working directory {cwd} in: {m}"
