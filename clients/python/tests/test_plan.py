"""Planning through the client and the CLI against a real daemon: returned paths run exactly from start to
goal and are certified free by check_path and, independently, by proximity-scene's in-process LINK; the
same seed gives the same path; colliding ends, an unsolvable problem, deadlines and bad requests give the
documented answers and exceptions."""
from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Tuple

import numpy as np
import pytest

import support
from proximity_client import (Client, DeadlineExceededError, InvalidArgumentError, NotFoundError, PlanResult,
                              SceneInfo, geometry, kinematics)

PLANAR_URDF = support.REPO / "tests" / "data" / "robots" / "planar_2link.urdf"
PLANAR_SRDF = support.REPO / "tests" / "data" / "robots" / "planar_2link.srdf"


@pytest.fixture(scope="module")
def problem(client: Client, info: SceneInfo) -> Tuple[np.ndarray, np.ndarray]:
    """Two free configurations whose straight certified motion collides (short hops between random states)."""
    rng = np.random.default_rng(2718)
    for _ in range(200):
        a, b = info.sample(64, rng), info.sample(64, rng)
        q1 = a + rng.uniform(0.2, 0.6, (64, 1)) * (b - a)
        ok = client.check_states(a) & client.check_states(q1)
        for i in np.flatnonzero(ok):
            m = client.check_motion(a[i], q1[i])
            if not m.free and not m.undecided:
                return a[i], q1[i]
    raise AssertionError("sampling found no colliding motion between free states")


@pytest.fixture(scope="module")
def colliding_state(client: Client, info: SceneInfo) -> np.ndarray:
    rng = np.random.default_rng(31)
    states = info.sample(200, rng)
    return states[np.flatnonzero(~client.check_states(states))[0]]


def assert_free_path(client: Client, r: PlanResult, start: np.ndarray, goal: np.ndarray, info: SceneInfo) -> None:
    assert r.solved and bool(r), (r.outcome, r.message)
    assert r.joint_names == info.joint_names
    assert r.path.shape[1] == info.dof and r.path.shape[0] >= 2
    assert np.array_equal(r.path[0], start), "the path does not start exactly at the start"
    assert np.array_equal(r.path[-1], goal), "the path does not end exactly at the goal"
    check = client.check_path(r.as_path())
    assert check.free, f"check_path: segment {check.segment} is not free"
    # Independent of the daemon: the core in process (proximity-scene), certified, segment by segment.
    expect = support.tool_motions(r.path[:-1], r.path[1:], "certified")
    assert [e["free"] for e in expect] == [True] * (len(r.path) - 1)
    length = float(np.linalg.norm(np.diff(r.path, axis=0), axis=1).sum())
    assert r.stats.length == pytest.approx(length, rel=1e-9)
    assert r.stats.length <= r.stats.raw_length * (1 + 1e-12)
    assert r.stats.iterations > 0 and r.stats.state_checks > 0 and r.stats.motion_checks > 0


def test_plan_solves_with_a_certified_free_path(client: Client, info: SceneInfo, daemon: support.Daemon,
                                                problem: Tuple[np.ndarray, np.ndarray]) -> None:
    start, goal = problem
    r = client.plan(start, goal, seed=5)
    assert r.planner == "rrt_connect" and r.message == ""
    assert_free_path(client, r, start, goal, info)
    samples = support.metric_samples(support.fetch(daemon.metrics_url))
    plans = [s.value for s in samples["proximity_queries_total"] if s.labels.get("kind") == "plan"]
    assert plans and plans[0] >= 1


@pytest.mark.parametrize("planner", ["rrt", "prm", "lazy_prm", "RRTConnect"])
def test_every_planner_and_every_form_of_the_ends(client: Client, info: SceneInfo, planner: str,
                                                  problem: Tuple[np.ndarray, np.ndarray]) -> None:
    start, goal = problem
    by_name = {n: float(v) for n, v in reversed(list(zip(info.joint_names, start)))}
    r = client.plan(by_name, goal.tolist(), planner=planner, seed=9, time_limit=20.0)
    assert r.planner == ("rrt_connect" if planner == "RRTConnect" else planner)
    assert_free_path(client, r, start, goal, info)
    # The same paths through the streaming validator, certified.
    assert all(p.free for p in client.validate_paths([r.as_path()], progress=False))


def test_the_same_seed_gives_the_same_path(client: Client, problem: Tuple[np.ndarray, np.ndarray]) -> None:
    start, goal = problem
    for planner in ("rrt_connect", "prm"):
        a = client.plan(start, goal, planner=planner, seed=42)
        b = client.plan(start, goal, planner=planner, seed=42)
        assert a.solved, a.message
        assert np.array_equal(a.path, b.path), planner
        assert a.stats.iterations == b.stats.iterations


def test_simplify_off_returns_the_raw_path(client: Client, info: SceneInfo,
                                           problem: Tuple[np.ndarray, np.ndarray]) -> None:
    start, goal = problem
    r = client.plan(start, goal, simplify=False, seed=3)
    assert_free_path(client, r, start, goal, info)
    assert r.path.shape[0] == r.stats.raw_waypoints
    assert r.stats.length == r.stats.raw_length and r.stats.simplify_time == 0.0


def test_a_colliding_start_or_goal_is_an_outcome(client: Client, info: SceneInfo, colliding_state: np.ndarray,
                                                 problem: Tuple[np.ndarray, np.ndarray]) -> None:
    contact = client.check_state(colliding_state).contact
    assert contact is not None
    r = client.plan(colliding_state, problem[1])
    assert r.outcome == "invalid_start" and not r.solved and not r
    assert r.path.shape == (0, info.dof)
    assert r.message == f"start collides: {contact}"
    r = client.plan(problem[0], colliding_state)
    assert r.outcome == "invalid_goal" and r.message == f"goal collides: {contact}"


def test_a_goal_outside_the_joint_limits_is_an_error_not_a_collision(client: Client, info: SceneInfo,
                                                                    problem: Tuple[np.ndarray, np.ndarray]) -> None:
    """A start or goal outside the joint limits is a request to fix (INVALID_ARGUMENT naming the end, the
    joint and its limits); a colliding one is a planning outcome naming the contact."""
    start, goal = problem
    j = next(i for i, l in enumerate(info.limits) if not l.continuous)
    lim = info.limits[j]
    outside = goal.copy()
    outside[j] = lim.upper + 0.25
    for s, g, end in ((start, outside, "goal"), (outside, goal, "start")):
        with pytest.raises(InvalidArgumentError) as e:
            client.plan(s, g)
        text = str(e.value)
        assert f"{end}: q[{j}] = " in text and f"for joint '{lim.joint_name}' is outside its limits [" in text, text
        assert "collides" not in text


@pytest.fixture(scope="module")
def blocked(client: Client) -> str:
    """The planar two-link arm with a box on its upper link's line at shoulder = 0: the upper link moves
    with the shoulder alone, so shoulder < 0 and shoulder > 0 are not connected."""
    s = client.create_scene(urdf_path=str(PLANAR_URDF), srdf_path=str(PLANAR_SRDF),
                            objects=[geometry.collision_object("barrier", [geometry.box([0.1, 0.1, 0.1])],
                                                               at=[0.5, 0.0, 0.1])])
    for elbow in (-2.5, -1.0, 0.0, 1.0, 2.5):
        r = client.check_state([0.0, elbow], scene=s.scene_id)
        assert not r.free and r.contact is not None and r.contact.names == ("upper", "barrier")
    assert client.check_state([-1.5, 0.3], scene=s.scene_id).free
    assert client.check_state([1.5, -0.3], scene=s.scene_id).free
    return s.scene_id


def test_an_unsolvable_problem_times_out_without_an_error(client: Client, blocked: str) -> None:
    r = client.plan([-1.5, 0.3], [1.5, -0.3], time_limit=0.2, scene=blocked)
    assert r.outcome == "timeout" and not r.solved
    assert r.path.shape == (0, 2) and "time limit" in r.message
    r = client.plan([-1.5, 0.3], [1.5, -0.3], time_limit=30.0, max_iterations=100, scene=blocked)
    assert r.outcome == "iteration_limit"


def test_named_states_are_ends(client: Client, blocked: str) -> None:
    r = client.plan("home", [1.5, -0.3], scene=blocked)
    assert r.outcome == "invalid_start" and r.message == "start collides: upper x barrier (world)"
    r = client.plan("bent", [1.5, -0.3], scene=blocked)
    assert r.solved, r.message
    assert r.path[0].tolist() == [0.5, -1.25] and (r.path[:, 0] > 0).all()


def test_the_deadline_stops_the_planner(client: Client, daemon: support.Daemon, blocked: str) -> None:
    def plan_calls(code: str) -> float:
        samples = support.metric_samples(support.fetch(daemon.metrics_url))
        return sum(s.value for s in samples["grpc_server_handled_total"]
                   if s.labels.get("grpc_method") == "Plan" and s.labels.get("grpc_code") == code)

    stopped_before = plan_calls("DeadlineExceeded") + plan_calls("Canceled")
    ok_before = plan_calls("OK")
    t0 = time.monotonic()
    with pytest.raises(DeadlineExceededError):
        client.plan([-1.5, 0.3], [1.5, -0.3], time_limit=30.0, timeout=0.5, scene=blocked)
    # The server ends the call itself at the deadline: well before the 30 s time limit would.
    assert support.eventually(lambda: plan_calls("DeadlineExceeded") + plan_calls("Canceled") > stopped_before,
                              timeout=15.0), "the planner ran on past the call's deadline"
    assert plan_calls("OK") == ok_before
    assert time.monotonic() - t0 < 30.0


def test_bad_requests_raise_and_name_the_field(client: Client, info: SceneInfo,
                                               problem: Tuple[np.ndarray, np.ndarray]) -> None:
    start, goal = problem
    scenes = client.list_scenes()

    def expect(exc: type, needle: str, **kwargs) -> None:
        args = {"start": start, "goal": goal, **kwargs}
        with pytest.raises(exc) as e:
            client.plan(**args)
        assert needle in e.value.details, e.value.details

    nan_start = start.copy()
    nan_start[1] = math.nan
    expect(InvalidArgumentError, "start", start=nan_start)
    expect(InvalidArgumentError, info.joint_names[1], start=nan_start)
    expect(InvalidArgumentError, f"goal.positions: expected {info.dof} values", goal=goal[:5])
    # A joint the robot lacks is ignored (as MoveIt reads joint states); every joint it has is still required.
    expect(InvalidArgumentError, f"joint '{info.joint_names[0]}' is missing", goal={"bogus": 0.0})
    expect(InvalidArgumentError, "time_limit", time_limit=-1.0)
    expect(InvalidArgumentError, "--max-plan-seconds", time_limit=1e6, timeout=10.0)
    expect(InvalidArgumentError, "range", range=-0.5)
    expect(InvalidArgumentError, "resolution", mode="discrete", resolution=-1.0)
    expect(InvalidArgumentError, "max_iterations", max_iterations=-3)
    expect(NotFoundError, "f" * 64, scene="f" * 64)
    with pytest.raises(ValueError):
        client.plan(start, goal, planner="astar")
    with pytest.raises(ValueError):
        client.plan(start, goal, mode="sampled")
    assert support.same_scenes(client.list_scenes(), scenes)
    assert client.plan(start, goal).solved


def test_cli_plan_then_validate(daemon: support.Daemon, info: SceneInfo, tmp_path: Path,
                                problem: Tuple[np.ndarray, np.ndarray], colliding_state: np.ndarray) -> None:
    start, goal = problem
    out = tmp_path / "plan.json"
    q = lambda v: ",".join(repr(float(x)) for x in v)  # noqa: E731
    named = ",".join(f"{n}={float(x)!r}" for n, x in zip(info.joint_names, goal))
    p = support.run_cli(daemon, "plan", "--scene", "default",
                        f"--start={q(start)}", f"--goal={named}", "--seed", "4", "--out", str(out))
    assert p.returncode == 0, (p.stdout, p.stderr)
    assert "solved" in p.stdout and out.is_file()
    doc = json.loads(out.read_text())
    assert doc["joint_names"] == info.joint_names
    assert doc["waypoints"][0] == start.tolist() and doc["waypoints"][-1] == goal.tolist()
    v = support.run_cli(daemon, "validate", "--scene", "default", str(out))
    assert v.returncode == 0, (v.stdout, v.stderr)
    assert "1 of 1 path(s) valid" in v.stdout

    j = support.run_cli(daemon, "plan", "--scene", "default",
                        f"--start={q(start)}", f"--goal={q(goal)}", "--seed", "4", "--json",
                "--planner", "prm", "--time-limit", "10")
    assert j.returncode == 0, j.stderr
    res = json.loads(j.stdout)
    assert res["outcome"] == "solved" and res["planner"] == "prm" and res["stats"]["iterations"] > 0
    assert res["waypoints"][0] == start.tolist()

    bad = tmp_path / "none.json"
    n = support.run_cli(daemon, "plan", "--scene", "default",
                        f"--start={q(colliding_state)}", f"--goal={q(goal)}", "--out", str(bad))
    assert n.returncode == 1, (n.stdout, n.stderr)
    assert "INVALID_START" in n.stdout and not bad.exists()

    e = support.run_cli(daemon, "plan", "--scene", "default",
                        f"--start={q(start)}", f"--goal={q(goal)}", "--time-limit", "-1")
    # The flag the user typed, not the request's field name.
    assert e.returncode == 2 and "INVALID_ARGUMENT" in e.stderr and "--time-limit must be" in e.stderr
    e = support.run_cli(daemon, "plan", "--scene", "default",
                        f"--start={q(start)}", "--goal=a1=,x")
    assert e.returncode == 2 and "--goal" in e.stderr


TURNTABLE = """<robot name="turntable">
  <link name="base"><collision><geometry><box size="0.2 0.2 0.1"/></geometry></collision></link>
  <joint name="spin" type="continuous"><parent link="base"/><child link="arm"/><origin xyz="0 0 0.1"/>
    <axis xyz="0 0 1"/><limit effort="1" velocity="2"/></joint>
  <link name="arm"><collision><origin xyz="0.3 0 0"/><geometry><box size="0.4 0.05 0.05"/></geometry></collision></link>
</robot>"""


@pytest.mark.parametrize("blocked_at_pi", [False, True])
def test_a_continuous_joint_ends_exactly_at_the_goal_given(client: Client, daemon: support.Daemon, tmp_path: Path,
                                                           blocked_at_pi: bool) -> None:
    """From 3.0 to -3.0 rad a continuous joint turns 0.283 rad through pi (the short way, as every motion
    query reads it); with pi blocked the planner goes round through 0. Either way the last waypoint is the
    goal's value as given (-3.0, not its unwrapped 3.2832), the path checks free, and the times follow the
    short-turn rule."""
    objects = [geometry.collision_object("post", [geometry.box([0.02, 0.02, 0.2])], at=[-0.4, 0.0, 0.1])] \
        if blocked_at_pi else []
    s = client.create_scene(urdf=TURNTABLE, objects=objects)
    assert s.limits[0].continuous
    assert client.check_state([math.pi], scene=s.scene_id).free is (not blocked_at_pi)
    r = client.plan([3.0], [-3.0], time_limit=10.0, seed=5, scene=s.scene_id)
    assert r.solved, r.message
    assert r.path[0].tolist() == [3.0] and r.path[-1].tolist() == [-3.0], r.path.ravel().tolist()
    assert client.check_path(r.as_path(), scene=s.scene_id).free
    turns = kinematics.shortest_turn(np.diff(r.path[:, 0]))
    if blocked_at_pi:
        assert r.path.shape[0] > 2 and abs(turns.sum() + 6.0) < 1e-9, r.path.ravel().tolist()  # round through 0
        assert (r.path[1:-1, 0] < 3.0).all() and (r.path[1:-1, 0] > -3.0).all()
    else:
        assert r.path.shape[0] == 2 and abs(turns.sum() - (2 * math.pi - 6.0)) < 1e-12
    # Each segment lasts its short turn at 2 rad/s (the last one included, though its values differ by ~2 pi).
    np.testing.assert_allclose(r.time_from_start, np.concatenate([[0.0], np.cumsum(np.abs(turns) / 2.0)]),
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(kinematics.time_from_start(r.path, [2.0], [True]), r.time_from_start, rtol=1e-12)
    # The same through the CLI's path file.
    out = tmp_path / "spin.json"
    p = support.run_cli(daemon, "plan", "--scene", s.scene_id, "--start=3.0", "--goal=-3.0", "--seed", "5",
                        "--time-limit", "10", "--out", str(out))
    assert p.returncode == 0, (p.stdout, p.stderr)
    assert json.loads(out.read_text())["waypoints"] == r.path.tolist()


def test_cli_plan_moves_only_the_group(daemon: support.Daemon, client: Client, tmp_path: Path) -> None:
    """`proximity plan --group`: only the group's joints move (planar_2link's "wrist" is the elbow); a goal
    that moves another joint is refused naming the group."""
    s = client.create_scene(urdf_path=str(PLANAR_URDF), srdf_path=str(PLANAR_SRDF))
    out = tmp_path / "wrist.json"
    p = support.run_cli(daemon, "plan", "--scene", s.scene_id, "--start=0.5,-1.0", "--goal=0.5,1.5", "--group",
                        "wrist", "--seed", "2", "--out", str(out), "--json")
    assert p.returncode == 0, (p.stdout, p.stderr)
    doc = json.loads(p.stdout)
    assert doc["outcome"] == "solved" and doc["group"] == "wrist"
    path = np.array(json.loads(out.read_text())["waypoints"])
    assert (path[:, 0] == 0.5).all() and path[0, 1] == -1.0 and path[-1, 1] == 1.5
    bad = support.run_cli(daemon, "plan", "--scene", s.scene_id, "--start=0.5,-1.0", "--goal=0.7,1.5", "--group",
                          "wrist")
    assert bad.returncode == 2 and "group 'wrist'" in bad.stderr and "'shoulder'" in bad.stderr, bad.stderr
    unknown = support.run_cli(daemon, "plan", "--scene", s.scene_id, "--start=0.5,-1.0", "--goal=0.5,1.5",
                              "--group", "legs")
    assert unknown.returncode == 2 and "'legs'" in unknown.stderr, unknown.stderr
