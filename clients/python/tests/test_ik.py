"""Inverse kinematics and pose-goal planning against a real daemon: every solution and every plan's last
waypoint put the link at the pose by an independent forward-kinematics oracle (urdf_fk: the URDF read
with xml.etree, composed with numpy), within the joint limits, free when asked; the CLI's ik and
plan --goal-pose as a user runs them; malformed goals refused by name."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

import support
from proximity_client import Client, InvalidArgumentError, NotFoundError, SceneInfo, geometry
from urdf_fk import UrdfChain, pose_matrix, rpy_matrix, transform

KR5 = Path(support.KR5_URDF)
BASE_XYZ = (0.31, -0.22, 0.12)
BASE_RPY = (0.1, -0.2, 0.7)
TIP = "palm"


@pytest.fixture(scope="module")
def kr5(client: Client) -> SceneInfo:
    """The KR5 on a tilted base among two boxes (the world frame is not the robot's)."""
    if not KR5.exists():
        pytest.skip("Debian dart-doc's KR5 is not installed")
    info = client.create_scene(urdf_path=str(KR5), base_pose=geometry.pose(BASE_XYZ, rpy=BASE_RPY),
                               objects=[geometry.collision_object("shelf", [geometry.box([0.3, 0.6, 0.02], (0.9, -0.2, 0.5))]),
                                        geometry.collision_object("post", [geometry.box([0.1, 0.1, 1.0], (-0.5, 0.4, 0.5))])])
    return info


def base() -> np.ndarray:
    return transform(rpy_matrix(*BASE_RPY), np.array(BASE_XYZ))


def oracle_pose(info: SceneInfo, q: np.ndarray) -> np.ndarray:
    """The tip's pose (4x4) in the world at q, by the independent oracle."""
    chain = UrdfChain(KR5)
    return chain.link_poses(dict(zip(info.joint_names, map(float, q))), base())[TIP]


def pose7(m: np.ndarray) -> list:
    """A 4x4 pose as x, y, z, qx, qy, qz, qw."""
    r = m[:3, :3]
    w = math.sqrt(max(0.0, 1.0 + r[0, 0] + r[1, 1] + r[2, 2])) / 2.0
    if w > 1e-3:
        x, y, z = (r[2, 1] - r[1, 2]) / (4 * w), (r[0, 2] - r[2, 0]) / (4 * w), (r[1, 0] - r[0, 1]) / (4 * w)
    else:  # near a half turn: from the largest diagonal
        i = int(np.argmax(np.diag(r)))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = math.sqrt(max(0.0, 1.0 + r[i, i] - r[j, j] - r[k, k])) * 2.0
        v = [0.0, 0.0, 0.0]
        v[i] = s / 4.0
        v[j] = (r[j, i] + r[i, j]) / s
        v[k] = (r[k, i] + r[i, k]) / s
        w = (r[k, j] - r[j, k]) / s
        x, y, z = v
    n = math.sqrt(x * x + y * y + z * z + w * w)
    return [*m[:3, 3].tolist(), x / n, y / n, z / n, w / n]


def assert_meets(info: SceneInfo, q: np.ndarray, target: np.ndarray, position_only: bool = False,
                 radius: float = 1e-4) -> None:
    at = oracle_pose(info, q)
    assert np.linalg.norm(at[:3, 3] - target[:3, 3]) <= radius * (1 + 1e-9)
    if not position_only:
        err = target[:3, :3].T @ at[:3, :3]
        angle = math.acos(max(-1.0, min(1.0, (np.trace(err) - 1.0) / 2.0)))
        assert angle <= math.sqrt(3.0) * 1e-3 * (1 + 1e-9)
    assert np.all(q >= info.lower) and np.all(q <= info.upper), "the solution leaves the joint limits"


def free_targets(client: Client, info: SceneInfo, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    states = info.sample(10 * n, rng)
    return states[np.flatnonzero(client.check_states(states, scene=info.scene_id))[:n]]


def test_ik_solutions_meet_the_pose_by_an_independent_oracle(client: Client, kr5: SceneInfo) -> None:
    found = 0
    targets = free_targets(client, kr5, 20, 5)
    for i, q in enumerate(targets):
        target = oracle_pose(kr5, q)
        r = client.ik(geometry.pose_goal(TIP, pose7(target)), random_seed=i, scene=kr5.scene_id)
        if not r:
            continue
        found += 1
        assert r.joint_names == kr5.joint_names
        assert_meets(kr5, r.solution, target)
        assert client.check_state(r.solution, scene=kr5.scene_id).free, "avoid_collisions returned a collision"
        assert r.position_error <= 1e-4 and r.orientation_error <= math.sqrt(3) * 1e-3
    assert found >= 19, f"{found} of 20 reachable collision-free poses solved"


def test_regions_position_goals_and_seeds(client: Client, kr5: SceneInfo) -> None:
    q = free_targets(client, kr5, 1, 8)[0]
    target = oracle_pose(kr5, q)
    # Position only, 5 mm sphere: the orientation may be anything.
    r = client.ik(geometry.pose_goal(TIP, target[:3, 3].tolist(), position_only=True, region_size=0.005),
                  scene=kr5.scene_id)
    assert r.found
    assert_meets(kr5, r.solution, target, position_only=True, radius=0.005)
    # Seeded at the answer itself: found at once (one descent), and the same answer for the same seed.
    a = client.ik(geometry.pose_goal(TIP, pose7(target)), q, scene=kr5.scene_id)
    b = client.ik(geometry.pose_goal(TIP, pose7(target)), q, scene=kr5.scene_id)
    assert a.found and a.attempts == 1 and np.array_equal(a.solution, b.solution)
    assert np.allclose(a.solution, q, atol=1e-3)
    # Far out of reach: an answer, not an error.
    far = client.ik(geometry.pose_goal(TIP, [30.0, 0.0, 0.0]), search_time=0.2, scene=kr5.scene_id)
    assert not far.found and "no collision-free solution" in far.message and far.attempts > 0


def test_plan_to_a_pose_ends_there_on_a_certified_path(client: Client, kr5: SceneInfo) -> None:
    start, goal_q = free_targets(client, kr5, 2, 13)
    target = oracle_pose(kr5, goal_q)
    r = client.plan(start, goal_pose=geometry.pose_goal(TIP, pose7(target)), seed=3, time_limit=10.0,
                    scene=kr5.scene_id)
    assert r.solved, (r.outcome, r.message)
    assert np.array_equal(r.path[0], start)
    assert_meets(kr5, r.path[-1], target)
    check = client.check_path(r.as_path(), scene=kr5.scene_id)
    assert check.free, f"segment {check.segment} is not free"
    # A pose only colliding configurations reach: inside the post.
    inside = np.eye(4)
    inside[:3, 3] = [-0.5, 0.4, 0.5]
    blocked = client.plan(start, goal_pose=geometry.pose_goal(TIP, inside[:3, 3].tolist(), position_only=True,
                                                              region_size=0.01),
                          time_limit=0.5, scene=kr5.scene_id)
    assert blocked.outcome == "invalid_goal" and "goal_pose" in blocked.message


def test_malformed_goals_are_refused_by_name(client: Client, kr5: SceneInfo) -> None:
    with pytest.raises(NotFoundError, match="goal.link: .*no_such_link"):
        client.ik(geometry.pose_goal("no_such_link", [0.5, 0, 0.5]), scene=kr5.scene_id)
    with pytest.raises(InvalidArgumentError, match="region_size"):
        client.ik(geometry.pose_goal(TIP, [0.5, 0, 0.5], region="box"), scene=kr5.scene_id)
    with pytest.raises(InvalidArgumentError, match="orientation"):
        client.ik(geometry.pose_goal(TIP, [0.5, 0, 0.5, 0, 0, 0, 2.0]), scene=kr5.scene_id)
    with pytest.raises(InvalidArgumentError, match="tolerance"):
        client.ik(geometry.pose_goal(TIP, [0.5, 0, 0.5], orientation_tolerance=-1.0), scene=kr5.scene_id)
    with pytest.raises(InvalidArgumentError, match="goal_pose.pose.position"):
        client.plan([0.0] * kr5.dof, goal_pose=geometry.pose_goal(TIP, [math.nan, 0, 0]), scene=kr5.scene_id)
    with pytest.raises(ValueError, match="one of them"):
        client.plan([0.0] * kr5.dof, [0.0] * kr5.dof, goal_pose=geometry.pose_goal(TIP, [0.5, 0, 0.5]))


def test_cli_ik_and_plan_to_a_pose(daemon: support.Daemon, client: Client, kr5: SceneInfo) -> None:
    start, goal_q = free_targets(client, kr5, 2, 21)
    target = oracle_pose(kr5, goal_q)
    pose = ",".join(f"{v:.12g}" for v in pose7(target))
    out = support.run_cli(daemon, "ik", "--scene", kr5.scene_id, "--link", TIP, f"--pose={pose}", "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["found"] and doc["joint_names"] == kr5.joint_names
    assert_meets(kr5, np.array(doc["solution"]), target)
    q0 = ",".join(f"{v:.12g}" for v in start)
    out = support.run_cli(daemon, "plan", "--scene", kr5.scene_id, f"--start={q0}", f"--goal-pose={pose}",
                          "--link", TIP, "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["solved"] and doc["goal_pose"]["link"] == TIP
    assert_meets(kr5, np.array(doc["waypoints"][-1]), target)
    # Human output; an unreachable pose exits 1; a missing --link or an unknown one exits 2 saying why.
    out = support.run_cli(daemon, "ik", "--scene", kr5.scene_id, "--link", TIP, f"--pose={pose}")
    assert out.returncode == 0 and "solution after" in out.stdout, out.stderr
    out = support.run_cli(daemon, "ik", "--scene", kr5.scene_id, "--link", TIP, "--pose=30,0,0", "--search-time=0.2")
    assert out.returncode == 1 and "no solution" in out.stdout
    out = support.run_cli(daemon, "plan", "--scene", kr5.scene_id, f"--start={q0}", f"--goal-pose={pose}")
    assert out.returncode == 2 and "--link" in out.stderr
    out = support.run_cli(daemon, "ik", "--scene", kr5.scene_id, "--link", "hand", f"--pose={pose}")
    assert out.returncode == 2 and "hand" in out.stderr
