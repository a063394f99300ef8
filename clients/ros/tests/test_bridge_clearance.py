"""/joint_states -> ~clearance's tracked pairs, through a real ROS master: along a small-step trajectory
each message's pairs (names, intervals, signed distances, points, normals, gradients per joint, features
kept, methods) equal the Python client's track answers with the bridge's options on a session fed the
same states, so the bridge's horizon, max_pairs and per_link parameters reach proximityd and its session
stays warm; with nothing within the horizon the interval and pair come from ComputeDistance; bad
parameters stop the node, naming them."""
from __future__ import annotations

from typing import Any, Dict, Iterator

import numpy as np
import pytest
import rospy
from sensor_msgs.msg import JointState

import rosenv
from rosenv import KR5_JOINTS

rosenv.need_kr5()

from proximity_msgs.msg import Clearance, ClearancePair  # noqa: E402

#: The tracking bridge's parameters, and the client options they mean.
PARAMS: Dict[str, Any] = {"clearance_horizon": 0.4, "clearance_max_pairs": 3, "clearance_per_link": "true",
                          "clearance_rel_err": 0.02}
OPTIONS = dict(horizon=0.4, max_pairs=3, per_link=True, rel_err=0.02)


@pytest.fixture(scope="module")
def tracking(master: rosenv.RosMaster, daemon: rosenv.Daemon) -> Iterator[rosenv.BridgeProcess]:
    node = rosenv.BridgeProcess(master, name="tracking_bridge", target=daemon.target, params=PARAMS)
    try:
        yield node.wait_ready()
    finally:
        node.stop()


@pytest.fixture(scope="module")
def joint_states(master: rosenv.RosMaster) -> Iterator[Any]:
    pub = rospy.Publisher("/joint_states", JointState, queue_size=1000)
    yield pub
    pub.unregister()


def _stamp(i: int) -> rospy.Time:
    return rospy.Time(2000 + i, 0)


def _subscribers(topic: str) -> list:
    """The nodes subscribed to ``topic``, as the master knows them."""
    import rosgraph
    _pubs, subs, _srvs = rosgraph.Master("/bridge_test_client").getSystemState()
    return next((nodes for name, nodes in subs if name == topic), [])


def _xyz(p: Any) -> np.ndarray:
    return np.array([p.x, p.y, p.z])


def _answer(clear: rosenv.Latest, pub: Any, q: np.ndarray, i: int) -> Clearance:
    js = rosenv.joint_state(KR5_JOINTS, q)
    js.header.stamp = _stamp(i)
    pub.publish(js)
    return clear.wait(lambda m: m.header.stamp == _stamp(i))


def test_tracked_pairs_equal_the_clients_track_answers(tracking: rosenv.BridgeProcess, client: Any,
                                                       joint_states: Any, rng: np.random.Generator) -> None:
    info = client.get_scene("default")
    clear = rosenv.Latest(tracking.service("clearance"), Clearance)
    assert rosenv.eventually(lambda: joint_states.get_num_connections() > 0, 20)
    assert rosenv.eventually(lambda: clear.sub.get_num_connections() > 0, 20)  # no answer lost to the race
    states = info.sample(200, rng)
    start = states[client.check_states(states)][0]
    direction = rng.uniform(-1.0, 1.0, info.dof)
    # Small steps (a controller's), then larger ones, then a jump into collision and back.
    track = [start + 1e-3 * k * direction for k in range(40)] + [start + 2e-2 * k * direction for k in range(40, 70)]
    colliding = states[~client.check_states(states)][0]
    track += [colliding, track[-1]]
    pairs = kept = 0
    with client.session() as oracle:
        for i, q in enumerate(track):
            m = _answer(clear, joint_states, q, i)
            t = oracle.track(q, **OPTIONS)
            where = f"state {i}"
            assert m.scene_id == info.scene_id and m.header.frame_id == "base_link", where
            assert list(m.joint_names) == info.joint_names, where
            assert len(m.pairs) == len(t.pairs) > 0, where
            for got, want in zip(m.pairs, t.pairs):
                assert isinstance(got, ClearancePair)
                assert (got.body_1, got.link_1, got.body_2) == (want.pair.robot, want.pair.link, want.pair.other), where
                assert got.link_2 == (want.pair.other_link if want.pair.self_collision else ""), where
                assert got.body_type_2 == (got.body_type_1 if want.pair.self_collision else 1), where  # WORLD_OBJECT
                assert (got.lower, got.upper, got.signed_distance) == (want.lower, want.upper, want.signed_distance), where
                assert np.array_equal(_xyz(got.point_1), want.point_robot), where
                assert np.array_equal(_xyz(got.point_2), want.point_other), where
                assert np.array_equal(_xyz(got.normal), want.normal), where
                assert np.array_equal(np.array(got.gradient), want.gradient) and len(got.gradient) == info.dof, where
                assert (got.same_features, got.method) == (want.same_features, want.method), where
                pairs += 1
                kept += got.same_features
            # The robot's interval and pair are the tracked ones.
            assert (m.lower, m.upper) == (t.lower, t.upper), where
            assert (m.body_1, m.body_2) == (t.nearest.pair.robot, t.nearest.pair.other), where
            free = client.check_state(q)
            assert m.valid == bool(free.free and free.within_limits), where
            assert m.within_limits == free.within_limits, where
    # Per link: more than max_pairs in all; warm: most pairs keep their features along the small steps.
    assert max(len(m.pairs) for m in clear.all[-len(track):]) > OPTIONS["max_pairs"]
    assert kept > pairs / 2, (kept, pairs)
    assert not clear.all[-2].valid and clear.all[-2].lower == 0.0
    clear.close()


def test_nothing_within_the_horizon_takes_the_interval_from_compute_distance(
        master: rosenv.RosMaster, daemon: rosenv.Daemon, client: Any, joint_states: Any,
        rng: np.random.Generator) -> None:
    node = rosenv.BridgeProcess(master, name="near_bridge", target=daemon.target,
                                params={"clearance_horizon": 1e-4}).wait_ready()
    try:
        info = client.get_scene("default")
        clear = rosenv.Latest(node.service("clearance"), Clearance)
        # Both ends connected before anything is published (this node and the tracking one, if alive).
        assert rosenv.eventually(lambda: "/near_bridge" in _subscribers("/joint_states"), 20)
        assert rosenv.eventually(lambda: clear.sub.get_num_connections() > 0, 20)
        states = info.sample(40, rng)
        states = states[client.check_states(states)][:8]
        empty = 0
        for i, q in enumerate(states):
            m = _answer(clear, joint_states, q, 100 + i)
            t = client.track(q, horizon=1e-4, rel_err=0.05)
            assert len(m.pairs) == len(t.pairs)
            if m.pairs:
                continue
            empty += 1
            d = client.distance(q, rel_err=0.05)
            assert (m.lower, m.upper) == (d.lower, d.upper) and m.lower > 1e-4
            assert (m.body_1, m.body_2) == (d.nearest.pair.robot, d.nearest.pair.other)
            assert m.valid
        assert empty > 0
        clear.close()
    finally:
        node.stop()


@pytest.mark.parametrize("param, value, text", [
    ("clearance_horizon", -1.0, "clearance_horizon must be in (0, 10000]"),
    ("clearance_horizon", "far", "~clearance_horizon must be a number"),
    ("clearance_max_pairs", 0, "clearance_max_pairs must be an integer in [1, 4096]"),
    ("clearance_max_pairs", 5000, "clearance_max_pairs must be an integer in [1, 4096]"),
    ("clearance_per_link", "sometimes", "clearance_per_link must be true or false"),
])
def test_bad_parameters_stop_the_node_naming_them(master: rosenv.RosMaster, daemon: rosenv.Daemon, param: str,
                                                  value: Any, text: str) -> None:
    # A node name of its own: private parameters stay on the master after their node.
    name = "bad_bridge_" + "".join(c if c.isalnum() else "_" for c in f"{param}_{value}")
    node = rosenv.BridgeProcess(master, name=name, target=daemon.target, params={param: value})
    try:
        assert rosenv.eventually(lambda: not node.alive(), 30), "the node must stop"
        assert text in node.output(), node.output()
    finally:
        node.stop()
