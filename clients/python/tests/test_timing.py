"""Time-optimal timing of planned paths against a real daemon: the trajectory follows the certified path
exactly (every sample on its segments, at rest at every waypoint), never exceeds the velocity and
acceleration limits (the URDF's, a MoveIt joint_limits.yaml's, scaled), and lasts what the closed form
computed here says; through the client and the CLI; bad limits refused by name. With path_tolerance,
corners blended: samples within the tolerance of the path, limits kept, faster, and the samples' chords
certified free by CheckPath."""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Dict, List

import numpy as np
import pytest

import support
from proximity_client import Client, InvalidArgumentError, NotFoundError, SceneInfo, TimedTrajectory
from proximity_client.kinematics import read_joint_limits


def rest_to_rest(d: float, v: float, a: float) -> float:
    return d / v + v / a if d * a >= v * v else 2.0 * math.sqrt(d / a)


def expected_duration(path: np.ndarray, vel: np.ndarray, acc: np.ndarray) -> float:
    total = 0.0
    for p, q in zip(path[:-1], path[1:]):
        delta = q - p
        length = float(np.linalg.norm(delta))
        if length == 0:
            continue
        moving = np.abs(delta) > 0
        v = float(np.min(vel[moving] * length / np.abs(delta[moving])))
        a = float(np.min(acc[moving] * length / np.abs(delta[moving])))
        total += rest_to_rest(length, v, a)
    return total


def check_trajectory(tr: TimedTrajectory, path: np.ndarray, vel: np.ndarray, acc: np.ndarray) -> None:
    assert tr.positions.shape == tr.velocities.shape == tr.accelerations.shape == (len(tr.time), path.shape[1])
    assert tr.time[0] == 0 and np.all(np.diff(tr.time) > 0)
    assert len(tr.waypoint_samples) == len(path)
    for w, k in enumerate(tr.waypoint_samples):
        np.testing.assert_allclose(tr.positions[k], path[w], atol=1e-12)
        assert np.all(tr.velocities[k] == 0)
    assert np.all(np.abs(tr.velocities) <= vel * (1 + 1e-9))
    assert np.all(np.abs(tr.accelerations) <= acc * (1 + 1e-9))
    # Every sample on its segment: between waypoints w and w + 1, on the straight line joining them.
    for w in range(len(path) - 1):
        a, b = path[w], path[w + 1]
        d = b - a
        for k in range(tr.waypoint_samples[w], tr.waypoint_samples[w + 1] + 1):
            s = float(np.dot(tr.positions[k] - a, d) / np.dot(d, d)) if np.dot(d, d) > 0 else 0.0
            assert -1e-12 <= s <= 1 + 1e-12
            np.testing.assert_allclose(tr.positions[k], a + s * d, atol=1e-9)
    # Constant acceleration between samples: the velocities and positions integrate.
    dt = np.diff(tr.time)[:, None]
    np.testing.assert_allclose(tr.velocities[1:], tr.velocities[:-1] + tr.accelerations[:-1] * dt, atol=1e-9)
    np.testing.assert_allclose(tr.positions[1:], tr.positions[:-1] + tr.velocities[:-1] * dt +
                               0.5 * tr.accelerations[:-1] * dt * dt, atol=1e-9)
    assert tr.duration == pytest.approx(expected_duration(path, vel, acc), rel=1e-9)


def free_pair(client: Client, info: SceneInfo, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    states = info.sample(200, rng)
    return states[np.flatnonzero(client.check_states(states))[:2]]


def test_plans_are_timed_time_optimally_on_the_certified_path(client: Client, info: SceneInfo) -> None:
    start, goal = free_pair(client, info, 3)
    r = client.plan(start, goal, seed=2, default_acceleration=2.0, resample_dt=0.005)
    assert r.solved and r.trajectory is not None, r.message
    check_trajectory(r.trajectory, r.path, info.velocity, np.full(info.dof, 2.0))
    assert r.trajectory.duration >= r.time_from_start[-1]  # the velocity-only times are a lower bound
    # Half the velocity and acceleration: the same path, no faster than half speed allows.
    slow = client.plan(start, goal, seed=2, default_acceleration=2.0, velocity_scaling=0.5, acceleration_scaling=0.5)
    np.testing.assert_array_equal(slow.path, r.path)
    check_trajectory(slow.trajectory, slow.path, 0.5 * info.velocity, np.full(info.dof, 1.0))
    # Without timing asked: no trajectory.
    assert client.plan(start, goal, seed=2).trajectory is None


def test_joint_limits_yaml_through_the_cli(daemon: support.Daemon, client: Client, info: SceneInfo,
                                           tmp_path: Path) -> None:
    start, goal = free_pair(client, info, 9)
    names = info.joint_names
    # MoveIt's format: one joint's velocity switched off (the URDF's holds), one given no acceleration
    # (--default-acceleration holds).
    lines = ["joint_limits:"]
    vel = info.velocity.copy()
    acc = np.full(info.dof, 1.5)
    for j, n in enumerate(names):
        lines.append(f"  {n}:")
        lines.append(f"    has_velocity_limits: {'false' if j == 0 else 'true'}")
        lines.append(f"    max_velocity: {0.5 + 0.1 * j}")
        if j != 1:
            lines += ["    has_acceleration_limits: true", f"    max_acceleration: {1.0 + 0.5 * j}"]
            acc[j] = 1.0 + 0.5 * j
        if j != 0:
            vel[j] = 0.5 + 0.1 * j
    yaml_path = tmp_path / "joint_limits.yaml"
    yaml_path.write_text("\n".join(lines) + "\n")
    assert read_joint_limits(str(yaml_path))[names[0]] == {"max_acceleration": 1.0}
    q0, q1 = (",".join(f"{v:.12g}" for v in q) for q in (start, goal))
    out = support.run_cli(daemon, "plan", f"--start={q0}", f"--goal={q1}", "--joint-limits", str(yaml_path),
                          "--default-acceleration", "1.5", "--trajectory-out", str(tmp_path / "t.json"), "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    t = json.loads((tmp_path / "t.json").read_text())
    tr = TimedTrajectory(np.array(t["time_from_start"]), np.array(t["positions"]), np.array(t["velocities"]),
                         np.array(t["accelerations"]), t["joint_names"], t["waypoint_samples"])
    check_trajectory(tr, np.array(doc["waypoints"]), vel, acc)
    assert doc["trajectory_duration"] == pytest.approx(tr.duration)
    out = support.run_cli(daemon, "plan", f"--start={q0}", f"--goal={q1}", "--joint-limits", str(yaml_path),
                          "--default-acceleration", "1.5")
    assert out.returncode == 0 and "time-optimal with acceleration limits" in out.stdout, out.stderr
    # The YAML leaves one joint without an acceleration: without a default, refused naming it.
    out = support.run_cli(daemon, "plan", f"--start={q0}", f"--goal={q1}", "--joint-limits", str(yaml_path))
    assert out.returncode == 2 and f"joint '{names[1]}' may move but has no acceleration limit" in out.stderr


def polyline_distance(path: np.ndarray, q: np.ndarray) -> float:
    best = math.inf
    for a, b in zip(path[:-1], path[1:]):
        d = b - a
        s = float(np.clip(np.dot(q - a, d) / np.dot(d, d), 0.0, 1.0)) if np.dot(d, d) > 0 else 0.0
        best = min(best, float(np.linalg.norm(q - (a + s * d))))
    return best


def test_blended_corners_stay_within_tolerance_and_free(daemon: support.Daemon, client: Client, info: SceneInfo,
                                                        tmp_path: Path) -> None:
    acc = np.full(info.dof, 2.0)
    blended = corners = 0
    for seed in range(3):
        start, goal = free_pair(client, info, 20 + seed)
        # Unsimplified paths turn at every tree vertex.
        exact = client.plan(start, goal, seed=seed + 1, simplify=False, default_acceleration=2.0, resample_dt=0.005)
        r = client.plan(start, goal, seed=seed + 1, simplify=False, default_acceleration=2.0, resample_dt=0.005,
                        path_tolerance=0.1)
        assert r.solved and exact.solved, r.message
        np.testing.assert_array_equal(r.path, exact.path)
        tr = r.trajectory
        corners += len(r.path) - 2
        blended += tr.blended_corners
        assert 0 <= tr.max_deviation <= 0.1 + 1e-12
        assert tr.duration <= exact.trajectory.duration * (1 + 1e-12)
        assert np.all(np.abs(tr.velocities) <= info.velocity * (1 + 1e-9))
        assert np.all(np.abs(tr.accelerations) <= acc * (1 + 1e-9))
        np.testing.assert_allclose(tr.positions[0], r.path[0], atol=0)
        np.testing.assert_allclose(tr.positions[-1], r.path[-1], atol=0)
        assert max(polyline_distance(r.path, q) for q in tr.positions) <= 0.1 + 1e-9
        # No jump where a blend meets a segment: velocities change by at most the acceleration limit.
        dv = np.abs(np.diff(tr.velocities, axis=0))
        assert np.all(dv <= acc * np.diff(tr.time)[:, None] * (1 + 1e-9) + 1e-12)
        # The samples' chords (5 ms apart along the blends) certified free.
        check = client.check_path({"joint_names": tr.joint_names, "waypoints": tr.positions})
        assert check.free, check
    assert blended > 0 and corners > 0
    # The CLI: --path-tolerance, the count in the summary and the JSON document.
    start, goal = free_pair(client, info, 20)
    q0, q1 = (",".join(f"{v:.12g}" for v in q) for q in (start, goal))
    out = support.run_cli(daemon, "plan", f"--start={q0}", f"--goal={q1}", "--no-simplify", "--seed=1",
                          "--default-acceleration", "2", "--path-tolerance", "0.1", "--json",
                          "--trajectory-out", str(tmp_path / "t.json"))
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    t = json.loads((tmp_path / "t.json").read_text())
    assert doc["blended_corners"] == t["blended_corners"] and t["max_deviation"] <= 0.1 + 1e-12
    out = support.run_cli(daemon, "plan", f"--start={q0}", f"--goal={q1}", "--no-simplify", "--seed=1",
                          "--default-acceleration", "2", "--path-tolerance", "0.1")
    assert out.returncode == 0 and "corners blended" in out.stdout, out.stderr


def test_bad_limits_are_refused_by_name(client: Client, info: SceneInfo) -> None:
    start, goal = free_pair(client, info, 4)
    with pytest.raises(InvalidArgumentError, match=f"joint '{info.joint_names[0]}' may move but has no acceleration"):
        client.plan(start, goal, velocity_scaling=0.5)
    with pytest.raises(InvalidArgumentError, match="velocity_scaling must lie in"):
        client.plan(start, goal, default_acceleration=1.0, velocity_scaling=1.5)
    with pytest.raises(InvalidArgumentError, match="resample_dt"):
        client.plan(start, goal, default_acceleration=1.0, resample_dt=-1.0)
    with pytest.raises(InvalidArgumentError, match="timing.path_tolerance must be finite and >= 0"):
        client.plan(start, goal, default_acceleration=1.0, path_tolerance=-0.1)
    with pytest.raises(NotFoundError, match="timing.limits.0..joint_name"):
        client.plan(start, goal, default_acceleration=1.0, joint_limits={"no_such_joint": {"max_acceleration": 1.0}})
    with pytest.raises(InvalidArgumentError, match="max_velocity and max_acceleration"):
        client.plan(start, goal, joint_limits={info.joint_names[0]: {"max_acceleration": -2.0}})
