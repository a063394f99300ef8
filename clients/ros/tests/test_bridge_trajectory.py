"""~check_trajectory and ~plan through rospy. Oracles: the Python client's direct CheckPath, CLEAR at
the reported collision time, dense discrete checks (1e-3 rad) of everything reported free, a probe
object placed on the robot's surface in mid-segment, and velocity limits read from the URDF here."""
from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from typing import Any, Dict, List, Tuple

import numpy as np
import pytest
import rospy
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

import rosenv
from rosenv import KR5_JOINTS, KR5_URDF

rosenv.need_kr5()

DENSE = 1e-3


def _trajectory(rows: np.ndarray, times: List[float], names: List[str] = KR5_JOINTS) -> JointTrajectory:
    return JointTrajectory(joint_names=list(names), points=[
        JointTrajectoryPoint(positions=[float(x) for x in r], time_from_start=rospy.Duration.from_sec(t))
        for r, t in zip(rows, times)])


def _dense_free(client: Any, a: np.ndarray, b: np.ndarray, scene: str = "default") -> bool:
    return bool(client.check_motion(a, b, mode="discrete", resolution=DENSE, scene=scene).free)


def _velocity_limits() -> Dict[str, float]:
    root = ET.parse(KR5_URDF).getroot()
    return {j.get("name"): float(j.find("limit").get("velocity")) for j in root.findall("joint")
            if j.find("limit") is not None}


def test_random_trajectories_match_the_certified_path_check(srv: Dict[str, Any], client: Any,
                                                            rng: np.random.Generator) -> None:
    info = client.get_scene("default")
    seen = {True: 0, False: 0}
    for k in range(40):
        n = 4
        rows = np.clip(info.sample(1, rng) + np.cumsum(rng.uniform(-0.5, 0.5, (n, info.dof)), axis=0),
                       info.lower, info.upper)
        times = np.cumsum(rng.uniform(0.2, 2.0, n)) - 0.2
        r = srv["trajectory"](rosenv.robot_state([], []), _trajectory(rows, list(times)), "")
        direct = client.check_path(rows)
        assert r.valid == direct.free, f"trajectory {k}"
        seen[r.valid] += 1
        if r.valid:
            assert r.first_invalid_segment == -1 and r.contacts == []
            assert r.t_collide.to_sec() == -1.0 and r.segment_t_collide == -1.0
            assert all(_dense_free(client, rows[i], rows[i + 1]) for i in range(n - 1))
            continue
        s = r.first_invalid_segment
        assert s == direct.segment
        assert (r.segment_t_free, r.segment_t_collide) == (direct.motion.t_free, direct.motion.t_collide)
        t0, t1 = times[s], times[min(s + 1, n - 1)]
        assert r.t_free.to_sec() == pytest.approx(t0 + direct.motion.t_free * (t1 - t0), abs=2e-9)
        assert r.t_collide.to_sec() == pytest.approx(t0 + direct.motion.t_collide * (t1 - t0), abs=2e-9)
        assert r.t_free <= r.t_collide
        assert r.time_of_first_contact <= r.t_collide
        # Independent checks: the state at t_collide collides, everything before t_free is free.
        q_hit = rows[s] + r.segment_t_collide * (rows[min(s + 1, n - 1)] - rows[s])
        assert not client.check_state(q_hit).free
        for i in range(s):
            assert _dense_free(client, rows[i], rows[i + 1])
        if r.segment_t_free > 0:
            q_free = rows[s] + r.segment_t_free * (rows[s + 1] - rows[s])
            assert _dense_free(client, rows[s], q_free)
        assert len(r.contacts) == 1 and r.contacts[0].contact_body_1 == direct.motion.contact.robot
        assert str(s) in r.message
    assert seen[True] >= 5 and seen[False] >= 5


def _free_trajectory(client: Any, rng: np.random.Generator) -> Tuple[np.ndarray, List[float]]:
    info = client.get_scene("default")
    while True:
        start = info.sample(1, rng)[0]
        rows = np.array([start, start + rng.uniform(-0.3, 0.3, info.dof), start + rng.uniform(-0.6, 0.6, info.dof)])
        rows = np.clip(rows, info.lower, info.upper)
        if client.check_path(rows).free:
            return rows, [0.0, 1.0, 3.0]


def test_a_trajectory_through_an_object_fails_on_the_right_segment(srv: Dict[str, Any], client: Any, bridge: Any,
                                                                    rng: np.random.Generator) -> None:
    """A small sphere put on the robot's surface halfway along segment 1 (where ComputeDistance's witness
    point lies) makes that segment, and no earlier one, collide no later than its middle."""
    from proximity_msgs.msg import CollisionObject, SceneStatus
    from geometry_msgs.msg import Pose
    from shape_msgs.msg import SolidPrimitive
    status = rosenv.Latest(bridge.service("scene"), SceneStatus)
    pub = rospy.Publisher("/collision_object", CollisionObject, queue_size=10, latch=True)
    for _attempt in range(20):
        rows, times = _free_trajectory(client, rng)
        mid = 0.5 * (rows[1] + rows[2])
        p = client.distance(mid).nearest.point_robot
        pose = Pose()
        pose.position.x, pose.position.y, pose.position.z = (float(v) for v in p)
        pose.orientation.w = 1.0
        probe = CollisionObject(id="probe", operation=CollisionObject.ADD, pose=pose,
                                primitives=[SolidPrimitive(type=SolidPrimitive.SPHERE, dimensions=[0.02])],
                                primitive_poses=[Pose(orientation=pose.orientation)])
        probe.header.frame_id = "base_link"
        pub.publish(probe)
        st = status.wait(lambda m: "probe" in m.object_ids and m.updates_applied > 2 * _attempt)
        if not client.check_motion(rows[0], rows[1], scene=st.scene_id).free:  # the probe also blocks segment 0
            pub.publish(CollisionObject(id="probe", operation=CollisionObject.REMOVE))
            status.wait(lambda m: "probe" not in m.object_ids)
            continue
        r = srv["trajectory"](rosenv.robot_state([], []), _trajectory(rows, times), "")
        assert not r.valid
        assert r.first_invalid_segment == 1
        assert r.segment_t_collide <= 0.5 + 1e-9
        assert times[1] <= r.t_free.to_sec() <= r.t_collide.to_sec() <= times[1] + 0.5 * (times[2] - times[1]) + 1e-8
        assert r.time_of_first_contact <= r.t_collide
        assert [(c.contact_body_2, c.body_type_2) for c in r.contacts] == [("probe", 1)]
        assert r.scene_id == st.scene_id
        # Removed, the same trajectory passes.
        pub.publish(CollisionObject(id="probe", operation=CollisionObject.REMOVE))
        status.wait(lambda m: "probe" not in m.object_ids)
        assert srv["trajectory"](rosenv.robot_state([], []), _trajectory(rows, times), "").valid
        break
    else:
        pytest.fail("no trajectory found whose probe leaves segment 0 free")
    pub.unregister()
    status.close()


def test_joints_a_trajectory_leaves_out_come_from_the_start_state(srv: Dict[str, Any], client: Any,
                                                                  rng: np.random.Generator) -> None:
    rows, times = _free_trajectory(client, rng)
    fixed = {"wrist_pitch": float(rows[0][4]), "wrist_roll": float(rows[0][5])}
    partial = rows.copy()
    partial[:, 4], partial[:, 5] = fixed["wrist_pitch"], fixed["wrist_roll"]
    r = srv["trajectory"](rosenv.robot_state(list(fixed), list(fixed.values())),
                          _trajectory(partial[:, :4], times, KR5_JOINTS[:4]), "")
    assert r.valid == client.check_path(partial).free


@pytest.mark.parametrize("edit,message", [
    (lambda t: setattr(t.points[2], "time_from_start", rospy.Duration(0.5)), r"points\[2\].time_from_start"),
    (lambda t: t.points[1].positions.pop(), r"points\[1\].positions has 5 values for 6 joint_names"),
    (lambda t: t.points[0].positions.__setitem__(3, math.nan), r"points\[0\].positions\[3\] is nan"),
    (lambda t: t.joint_names.__setitem__(0, "base_yaw"), "unknown joint 'base_yaw'"),
    (lambda t: t.points.clear(), "points is empty"),
])
def test_bad_trajectories_are_refused(srv: Dict[str, Any], client: Any, rng: np.random.Generator, edit: Any,
                                      message: str) -> None:
    rows, times = _free_trajectory(client, rng)
    traj = _trajectory(rows, times)
    for p in traj.points:
        p.positions = list(p.positions)
    edit(traj)
    with pytest.raises(rospy.ServiceException, match=message):
        srv["trajectory"](rosenv.robot_state([], []), traj, "")
    assert srv["trajectory"](rosenv.robot_state([], []), _trajectory(rows, times), "").valid


def _plan(srv: Dict[str, Any], start: np.ndarray, goal: np.ndarray, **kw: Any) -> Any:
    from proximity_msgs.srv import PlanRequest
    req = PlanRequest(start_state=rosenv.robot_state(KR5_JOINTS, start), goal=rosenv.joint_state(KR5_JOINTS, goal))
    for k, v in kw.items():
        setattr(req, k, v)
    return srv["plan"](req)


def test_plan_gives_a_certified_trajectory_timed_by_the_velocity_limits(srv: Dict[str, Any], client: Any,
                                                                        rng: np.random.Generator) -> None:
    info = client.get_scene("default")
    limits = _velocity_limits()
    v = np.array([limits[j] for j in KR5_JOINTS])
    states = info.sample(400, rng)
    free = states[client.check_states(states)]
    start = np.zeros(6)
    solved = 0
    for goal in free[:4]:
        r = _plan(srv, start, goal, seed=7, allowed_planning_time=10.0)
        assert r.error_code.val == r.error_code.SUCCESS, r.message
        traj = r.trajectory
        assert list(traj.joint_names) == KR5_JOINTS
        path = np.array([p.positions for p in traj.points])
        np.testing.assert_array_equal(path[0], start)
        np.testing.assert_allclose(path[-1], goal, atol=1e-12)
        t = np.array([p.time_from_start.to_sec() for p in traj.points])
        assert t[0] == 0 and np.all(np.diff(t) > 0)
        # Stop at every waypoint; the slowest joint of each segment sets its time (1.5 x for cubic peaks).
        want = (1.5 * np.abs(np.diff(path, axis=0)) / v).max(axis=1)
        np.testing.assert_allclose(np.diff(t), want, rtol=1e-6, atol=2e-9)
        assert all(list(p.velocities) == [0.0] * 6 for p in traj.points)
        assert r.valid and client.check_path(path).free
        for a, b in zip(path[:-1], path[1:]):
            assert _dense_free(client, a, b)
        # Half the velocity: the same path (same seed) in twice the time.
        slow = _plan(srv, start, goal, seed=7, allowed_planning_time=10.0, max_velocity_scaling_factor=0.5)
        np.testing.assert_array_equal(np.array([p.positions for p in slow.trajectory.points]), path)
        np.testing.assert_allclose([p.time_from_start.to_sec() for p in slow.trajectory.points], 2 * t, atol=2e-9)
        solved += 1
    assert solved == 4


@pytest.mark.parametrize("planner_id", ["RRTConnect", "RRTConnectkConfigDefault", "RRT", "PRM", "LazyPRM", "rrt_connect"])
def test_planner_ids_in_ompl_names(srv: Dict[str, Any], client: Any, planner_id: str) -> None:
    goal = np.array([0.5, 0.2, 0.1, 0.0, 0.3, 0.0])
    assert client.check_state(goal).free
    r = _plan(srv, np.zeros(6), goal, planner_id=planner_id, seed=3, allowed_planning_time=10.0)
    assert r.error_code.val == 1 and r.valid


def test_a_colliding_goal_is_an_error_code_not_an_exception(srv: Dict[str, Any], client: Any) -> None:
    goal = np.array([0.0, 1.5, 0.0, 0.0, 0.0, 0.0])
    assert not client.check_state(goal).free
    r = _plan(srv, np.zeros(6), goal, seed=1)
    assert r.error_code.val == r.error_code.GOAL_IN_COLLISION
    assert r.trajectory.points == [] and not r.valid
    assert "goal collides" in r.message


@pytest.mark.parametrize("kw,message", [
    ({"planner_id": "CHOMP"}, "planner_id 'CHOMP'"),
    ({"max_velocity_scaling_factor": 1.5}, "max_velocity_scaling_factor"),
    ({"group_name": "arm"}, "unknown group_name 'arm'"),
    ({"allowed_planning_time": -1.0}, "allowed_planning_time"),
])
def test_bad_plan_requests_are_refused(srv: Dict[str, Any], kw: Dict[str, Any], message: str) -> None:
    with pytest.raises(rospy.ServiceException, match=message):
        _plan(srv, np.zeros(6), np.array([0.5, 0.2, 0.1, 0.0, 0.3, 0.0]), **kw)


def _pose_constraints(link: str, pose7: np.ndarray, box: bool = False) -> Tuple[Any, Any]:
    from geometry_msgs.msg import Pose, Quaternion
    from proximity_msgs.msg import BoundingVolume, OrientationConstraint, PositionConstraint
    from shape_msgs.msg import SolidPrimitive
    at = Pose()
    at.position.x, at.position.y, at.position.z = (float(v) for v in pose7[:3])
    at.orientation.x, at.orientation.y, at.orientation.z, at.orientation.w = (float(v) for v in pose7[3:])
    prim = SolidPrimitive(type=SolidPrimitive.BOX, dimensions=[2e-4, 2e-4, 2e-4]) if box else \
        SolidPrimitive(type=SolidPrimitive.SPHERE, dimensions=[1e-4])
    pc = PositionConstraint(link_name=link, constraint_region=BoundingVolume(primitives=[prim], primitive_poses=[at]),
                            weight=1.0)
    oc = OrientationConstraint(link_name=link, orientation=Quaternion(*[float(v) for v in pose7[3:]]),
                               absolute_x_axis_tolerance=1e-3, absolute_y_axis_tolerance=1e-3,
                               absolute_z_axis_tolerance=1e-3, weight=1.0)
    return pc, oc


def test_plan_to_position_and_orientation_constraints(srv: Dict[str, Any], client: Any,
                                                      rng: np.random.Generator) -> None:
    from proximity_msgs.srv import PlanRequest
    info = client.get_scene("default")
    states = info.sample(200, rng)
    goals = states[client.check_states(states)][:2]
    tip = info.link_names[-1]
    for k, goal in enumerate(goals):
        pose = client.link_poses(goal).poses[0, info.link_names.index(tip)]
        pc, oc = _pose_constraints(tip, pose, box=k == 1)
        req = PlanRequest(start_state=rosenv.robot_state(KR5_JOINTS, np.zeros(6)), position_constraints=[pc],
                          orientation_constraints=[oc], seed=5, allowed_planning_time=10.0)
        r = srv["plan"](req)
        assert r.error_code.val == r.error_code.SUCCESS, r.message
        assert r.valid
        path = np.array([p.positions for p in r.trajectory.points])
        np.testing.assert_array_equal(path[0], np.zeros(6))
        end = client.link_poses(path[-1]).poses[0, info.link_names.index(tip)]
        assert np.linalg.norm(end[:3] - pose[:3]) <= 2e-4
        assert abs(float(np.dot(end[3:], pose[3:]))) >= math.cos(1e-3)
        assert client.check_path(path).free
    # Refused by name: both kinds of goal, a mesh region, two links, an unknown frame.
    pc, oc = _pose_constraints(tip, np.array([0.5, 0, 0.5, 0, 0, 0, 1.0]))
    both = PlanRequest(start_state=rosenv.robot_state(KR5_JOINTS, np.zeros(6)),
                       goal=rosenv.joint_state(KR5_JOINTS, np.zeros(6)), position_constraints=[pc])
    with pytest.raises(rospy.ServiceException, match="not both"):
        srv["plan"](both)
    oc.link_name = "other"
    with pytest.raises(rospy.ServiceException, match="one link's pose"):
        srv["plan"](PlanRequest(start_state=rosenv.robot_state(KR5_JOINTS, np.zeros(6)), position_constraints=[pc],
                                orientation_constraints=[oc]))
    pc.header.frame_id = "nowhere"
    with pytest.raises(rospy.ServiceException, match="nowhere"):
        srv["plan"](PlanRequest(start_state=rosenv.robot_state(KR5_JOINTS, np.zeros(6)), position_constraints=[pc]))


def test_plans_with_joint_limits_are_timed_time_optimally(master: Any, daemon: Any, client: Any, tmp_path: Any,
                                                          rng: np.random.Generator) -> None:
    # A second bridge with MoveIt's joint_limits.yaml (one joint without an acceleration: the default holds).
    limits = {j: 1.0 + 0.25 * k for k, j in enumerate(KR5_JOINTS)}
    lines = ["joint_limits:"]
    for k, j in enumerate(KR5_JOINTS):
        lines += [f"  {j}:", "    has_acceleration_limits: " + ("false" if k == 2 else "true"),
                  f"    max_acceleration: {limits[j]}"]
    limits[KR5_JOINTS[2]] = 0.8
    (tmp_path / "joint_limits.yaml").write_text("\n".join(lines) + "\n")
    node = rosenv.BridgeProcess(master, name="proximity_bridge_timed", target=daemon.target,
                                params={"joint_limits_file": str(tmp_path / "joint_limits.yaml"),
                                        "default_acceleration": 0.8, "path_tolerance": 0.1})
    try:
        timed = rosenv.proxies(node.wait_ready())
        info = client.get_scene("default")
        states = info.sample(200, rng)
        goal = states[client.check_states(states)][0]
        v = np.array([_velocity_limits()[j] for j in KR5_JOINTS])
        a = np.array([limits[j] for j in KR5_JOINTS])
        for scale in (1.0, 0.5):
            r = _plan(timed, np.zeros(6), goal, seed=7, allowed_planning_time=10.0,
                      max_velocity_scaling_factor=scale, max_acceleration_scaling_factor=scale)
            assert r.error_code.val == r.error_code.SUCCESS and r.valid, r.message
            pts = r.trajectory.points
            q = np.array([p.positions for p in pts])
            qd = np.array([p.velocities for p in pts])
            qdd = np.array([p.accelerations for p in pts])
            t = np.array([p.time_from_start.to_sec() for p in pts])
            np.testing.assert_array_equal(q[0], np.zeros(6))
            np.testing.assert_allclose(q[-1], goal, atol=1e-12)
            assert np.all(np.diff(t) > 0)
            assert np.all(np.abs(qd) <= scale * v * (1 + 1e-9)) and np.all(np.abs(qdd) <= scale * a * (1 + 1e-9))
            assert np.abs(qdd).max() > 0.5 * scale * a.min()  # accelerations are given, not zeros
            # The samples follow the certified path or its certified blends (~path_tolerance): free by the
            # direct check, densely; the planned path with the same request, through the client, is timed alike.
            assert client.check_path(q).free
            same = client.plan(np.zeros(6), goal, seed=7, time_limit=10.0, joint_limits={
                j: {"max_acceleration": limits[j]} for j in KR5_JOINTS if j != KR5_JOINTS[2]},
                default_acceleration=0.8, velocity_scaling=scale, acceleration_scaling=scale, path_tolerance=0.1)
            if len(same.path) > 2:
                assert same.trajectory.blended_corners > 0
            assert t[-1] == pytest.approx(same.trajectory.duration, abs=1e-8)
    finally:
        node.stop()
