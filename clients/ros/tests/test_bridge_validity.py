"""~check_state_validity and ~check_states through rospy, against the Python client's direct answers on
the same proximityd (the oracle), and bad input refused with a clear service error."""
from __future__ import annotations

import math
from typing import Any, Dict

import numpy as np
import pytest
import rospy

import rosenv
from rosenv import KR5_JOINTS

rosenv.need_kr5()


def _random_states(rng: np.random.Generator, info: Any, n: int) -> np.ndarray:
    """Uniform states within the limits, a tenth of them pushed outside a limit."""
    q = info.sample(n, rng)
    out = rng.random(n) < 0.1
    j = rng.integers(0, info.dof, n)
    span = info.upper - info.lower
    q[out, j[out]] = np.where(rng.random(int(out.sum())) < 0.5, info.lower[j[out]] - 0.1 * span[j[out]],
                              info.upper[j[out]] + 0.1 * span[j[out]])
    return q


def test_state_validity_agrees_with_the_client_on_1200_states(srv: Dict[str, Any], client: Any,
                                                               rng: np.random.Generator) -> None:
    info = client.get_scene("default")
    assert info.joint_names == KR5_JOINTS
    states = _random_states(rng, info, 1200)
    direct = client.check_states(states, include_contacts=True)
    free_seen = colliding_seen = outside_seen = 0
    for i, q in enumerate(states):
        order = rng.permutation(info.dof)  # joints by name, in any order
        r = srv["validity"](rosenv.robot_state([KR5_JOINTS[k] for k in order], q[order]), "")
        want_valid = bool(direct.free[i] and direct.within_limits[i])
        assert r.valid == want_valid, f"state {i}: {q.tolist()}"
        assert r.within_limits == bool(direct.within_limits[i])
        assert r.scene_id == info.scene_id
        if direct.free[i]:
            free_seen += 1
            assert r.contacts == []
            assert 0.0 < r.clearance_lower <= r.clearance_upper
        else:
            colliding_seen += 1
            pair = direct.contacts[i]
            # Every colliding pair with its geometry, as ComputeContacts measures it; CheckState's pair among them.
            if colliding_seen <= 150:
                measured = client.contacts(q, max_points=1).contacts
                assert len(r.contacts) == len(measured) >= 1
                for c, m in zip(r.contacts, measured):
                    assert (c.contact_body_1, c.contact_body_2) == (m.pair.robot, m.pair.other)
                    assert c.body_type_2 == (c.ROBOT_LINK if m.pair.self_collision else c.WORLD_OBJECT)
                    assert c.has_geometry is True and c.depth == m.depth >= 0.0
                    normal = np.array([c.normal.x, c.normal.y, c.normal.z])
                    np.testing.assert_allclose(normal, -np.asarray(m.normal), atol=1e-12)  # body 2 -> body 1
                    assert abs(np.linalg.norm(normal) - 1.0) < 1e-9
                    point = np.array([c.position.x, c.position.y, c.position.z])
                    np.testing.assert_allclose(point, m.points[0] if len(m.points) else
                                               0.5 * (m.point_robot + m.point_other), atol=1e-12)
            assert (pair.robot, pair.other) in [(c.contact_body_1, c.contact_body_2) for c in r.contacts]
            assert r.clearance_lower == r.clearance_upper == 0.0
        outside_seen += not direct.within_limits[i]
    # The sample covers every kind of answer.
    assert free_seen > 100 and colliding_seen > 100 and outside_seen > 50


def test_clearance_intervals_agree_with_direct_distances(srv: Dict[str, Any], client: Any,
                                                         rng: np.random.Generator) -> None:
    """Both intervals are certified to hold the true clearance, so they must intersect."""
    info = client.get_scene("default")
    states = info.sample(300, rng)
    free = client.check_states(states)
    checked = 0
    for q in states[free][:60]:
        r = srv["validity"](rosenv.robot_state(KR5_JOINTS, q), "")
        d = client.distance(q, rel_err=0.05)
        assert r.valid
        assert max(r.clearance_lower, d.lower) <= min(r.clearance_upper, d.upper) + 1e-12
        checked += 1
    assert checked == 60


def test_check_states_answers_each_state_like_the_client(srv: Dict[str, Any], client: Any,
                                                         rng: np.random.Generator) -> None:
    info = client.get_scene("default")
    states = _random_states(rng, info, 2000)
    direct = client.check_states(states, include_contacts=True)
    msgs = [rosenv.robot_state(KR5_JOINTS, q) for q in states]
    r = srv["states"](msgs, "")
    assert len(r.valid) == len(r.within_limits) == len(states)
    np.testing.assert_array_equal(np.array(r.valid), direct.free & direct.within_limits)
    np.testing.assert_array_equal(np.array(r.within_limits), direct.within_limits)
    assert list(r.contact_state_index) == sorted(direct.contacts)
    for i, c in zip(r.contact_state_index, r.contacts):
        assert (c.contact_body_1, c.contact_body_2) == direct.contacts[i].names
    assert srv["states"]([], "").valid == []


def test_joints_not_given_come_from_joint_states(srv: Dict[str, Any], client: Any, bridge: Any) -> None:
    """A state naming some joints takes the others from the latest /joint_states (as MoveIt does); with
    none received for them, the call fails naming the missing joints."""
    pub = rospy.Publisher("/joint_states", rosenv.joint_state([], []).__class__, queue_size=10)
    partial = rosenv.robot_state(["shoulder_pitch"], [1.5])
    with pytest.raises(rospy.ServiceException, match="no value for joints shoulder_yaw, elbow_pitch"):
        srv["validity"](partial, "")
    home = [0.0] * 6
    # A joint state arrives: the same request now answers for (0, 1.5, 0, 0, 0, 0).
    assert rosenv.eventually(lambda: pub.get_num_connections() > 0, 20)

    def published() -> bool:
        pub.publish(rosenv.joint_state(KR5_JOINTS, home))
        return _answers(srv, partial)
    assert rosenv.eventually(published, 20, 0.2)
    r = srv["validity"](partial, "")
    full = [0.0, 1.5, 0.0, 0.0, 0.0, 0.0]
    want = client.check_state(full)
    assert r.valid == bool(want.free and want.within_limits)
    pub.unregister()


def test_joints_the_robot_lacks_are_ignored_with_one_warning(srv: Dict[str, Any], client: Any,
                                                             bridge: Any) -> None:
    """A robot state may name joints the robot lacks (a base's wheels): they are ignored, as MoveIt
    does, with one warning per joint in the node's log; the answer is the state's without them."""
    q = [0.3, -0.4, 0.5, 0.2, -0.1, 0.6]
    extra = rosenv.robot_state(["wheel_left"] + KR5_JOINTS + ["wheel_right"], [9.0] + q + [-9.0])
    want = client.check_state(q)
    for _ in range(3):
        assert srv["validity"](extra, "").valid == bool(want.free and want.within_limits)
    assert [v for v in srv["states"]([extra, rosenv.robot_state(KR5_JOINTS, q)], "").valid] == \
        [bool(want.free and want.within_limits)] * 2
    assert rosenv.eventually(lambda: "'wheel_left', 'wheel_right', which the robot lacks" in bridge.output(), 10, 0.2), \
        bridge.output()[-2000:]
    assert bridge.output().count("'wheel_left', 'wheel_right', which the robot lacks") == 1


def _answers(srv: Dict[str, Any], req: Any) -> bool:
    try:
        srv["validity"](req, "")
        return True
    except rospy.ServiceException:
        return False


@pytest.mark.parametrize("names,positions,group,message", [
    (KR5_JOINTS, [0.0, math.nan, 0, 0, 0, 0], "", r"position\[1\] is nan"),
    (KR5_JOINTS, [0.0, math.inf, 0, 0, 0, 0], "", r"position\[1\] is inf"),
    (KR5_JOINTS, [0.0] * 5, "", "6 names but 5 positions"),
    (KR5_JOINTS[:5] + ["shoulder_yaw"], [0.0] * 6, "", "'shoulder_yaw' appears more than once"),
    (KR5_JOINTS, [0.0] * 6, "manipulator", "unknown group_name 'manipulator'"),
])
def test_bad_states_are_refused_with_a_clear_error(srv: Dict[str, Any], names: list, positions: list, group: str,
                                                   message: str) -> None:
    with pytest.raises(rospy.ServiceException, match=message):
        srv["validity"](rosenv.robot_state(names, positions), group)
    with pytest.raises(rospy.ServiceException, match=message.replace("robot_state", "robot_states")):
        srv["states"]([rosenv.robot_state(KR5_JOINTS, [0.0] * 6), rosenv.robot_state(names, positions)], group)
    # The node keeps serving.
    assert srv["validity"](rosenv.robot_state(KR5_JOINTS, [0.0] * 6), "").scene_id
