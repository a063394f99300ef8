"""~point_cloud_topic: sensor_msgs/PointCloud2 messages kept as one world object ("sensed") through a real
ROS master, proximityd and the bridge node. Oracle: the robot's own surface point at a free state
(ComputeDistance's witness) with a few points around it must make that state invalid through the bridge's
~check_state_validity, which the Python client confirms on the scene the bridge reports; a cloud far away
makes it valid again. Link frames are posed by the link's pose at /joint_states; malformed messages are
refused on ~scene and the node keeps going; a burst of clouds ends at the newest."""
from __future__ import annotations

from typing import Any, Dict, Iterator, Sequence, Tuple

import numpy as np
import pytest
import rospy
from sensor_msgs.msg import JointState, PointCloud2, PointField

import rosenv
from rosenv import KR5_JOINTS

rosenv.need_kr5()

from proximity_msgs.msg import SceneStatus  # noqa: E402

TOPIC = "/camera/depth/points"


@pytest.fixture(scope="module")
def bridge(master: Any, daemon: Any) -> Iterator[rosenv.BridgeProcess]:
    node = rosenv.BridgeProcess(master, target=daemon.target,
                                params={"point_cloud_topic": TOPIC, "point_cloud_radius": 0.01,
                                        "point_cloud_voxel_size": 0.0})
    try:
        yield node.wait_ready()
    finally:
        node.stop()


@pytest.fixture(scope="module")
def status(bridge: Any) -> Iterator[rosenv.Latest]:
    s = rosenv.Latest(bridge.service("scene"), SceneStatus)
    s.wait(lambda m: bool(m.scene_id))
    yield s
    s.close()


@pytest.fixture(scope="module")
def clouds(master: Any) -> Iterator[Any]:
    pub = rospy.Publisher(TOPIC, PointCloud2, queue_size=100)
    assert rosenv.eventually(lambda: pub.get_num_connections() > 0, 20)
    yield pub
    pub.unregister()


def _cloud(points: np.ndarray, frame: str = "base_link", big: bool = False, height: int = 1,
           row_pad: int = 0) -> PointCloud2:
    """x y z as float32 among an rgb (uint32) and an intensity (float64) field, rows padded by row_pad."""
    order = ">" if big else "<"
    dt = np.dtype({"names": ["rgb", "x", "y", "z", "intensity"],
                   "formats": [order + "u4", order + "f4", order + "f4", order + "f4", order + "f8"],
                   "offsets": [0, 4, 8, 12, 16], "itemsize": 28})
    n = len(points)
    rec = np.zeros(n, dtype=dt)
    rec["x"], rec["y"], rec["z"] = points[:, 0], points[:, 1], points[:, 2]
    rec["rgb"], rec["intensity"] = 0xFF8000, 0.5
    width = n // height
    raw = rec.tobytes()
    data = b"".join(raw[r * width * 28:(r + 1) * width * 28] + b"\0" * row_pad for r in range(height))
    msg = PointCloud2(height=height, width=width, is_bigendian=big, point_step=28, row_step=width * 28 + row_pad,
                      is_dense=False, data=data,
                      fields=[PointField(name="rgb", offset=0, datatype=PointField.UINT32, count=1),
                              PointField(name="x", offset=4, datatype=PointField.FLOAT32, count=1),
                              PointField(name="y", offset=8, datatype=PointField.FLOAT32, count=1),
                              PointField(name="z", offset=12, datatype=PointField.FLOAT32, count=1),
                              PointField(name="intensity", offset=16, datatype=PointField.FLOAT64, count=1)])
    msg.header.frame_id = frame
    return msg


def _send(pub: Any, status: rosenv.Latest, msg: PointCloud2) -> Tuple[SceneStatus, bool]:
    """Publishes a cloud and waits until the bridge applied or refused it: the status and whether it was
    applied (``last_error`` keeps the last refusal's text)."""
    applied, refused = status.msg.updates_applied, status.msg.updates_refused
    pub.publish(msg)
    st = status.wait(lambda m: m.updates_applied + m.updates_refused > applied + refused)
    return st, st.updates_applied > applied


def _valid(srv: Dict[str, Any], client: Any, q: np.ndarray, scene_id: str) -> bool:
    """The bridge's answer, checked against the client's on the bridge's scene."""
    r = srv["validity"](rosenv.robot_state(KR5_JOINTS, q), "")
    assert r.scene_id == scene_id
    direct = client.check_state(q, scene=scene_id)
    assert r.valid == bool(direct.free and direct.within_limits)
    return bool(r.valid)


def _free_state_and_point(client: Any, rng: np.random.Generator) -> Tuple[np.ndarray, np.ndarray, str]:
    """A free state, the robot's surface point nearest the world there, and the link it is on."""
    info = client.get_scene("default")
    while True:
        q = info.sample(1, rng)[0]
        if client.check_state(q).free:
            d = client.distance(q, exclude_self=True).nearest
            if d.upper > 0.05:  # clear of the workcell: the cloud, not the table, decides
                return q, np.array(d.point_robot), d.pair.link


def _around(p: np.ndarray, rng: np.random.Generator, n: int = 12, spread: float = 0.004) -> np.ndarray:
    return p + rng.uniform(-spread, spread, size=(n, 3))


def _quat_matrix(q: Sequence[float]) -> np.ndarray:
    x, y, z, w = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def test_a_cloud_on_the_robot_invalidates_and_a_far_one_frees(srv: Dict[str, Any], client: Any,
                                                              status: rosenv.Latest, clouds: Any) -> None:
    rng = np.random.default_rng(11)
    q, p, _ = _free_state_and_point(client, rng)
    assert _valid(srv, client, q, status.msg.scene_id)
    pts = _around(p, rng)
    pts[[2, 5]] = np.nan  # missing returns
    st, ok = _send(clouds, status, _cloud(pts, height=2, row_pad=6))
    assert ok and "sensed" in st.object_ids, st.last_error
    assert not _valid(srv, client, q, st.scene_id)
    r = srv["validity"](rosenv.robot_state(KR5_JOINTS, q), "")
    assert any(c.contact_body_2 == "sensed" and c.body_type_2 == 1 for c in r.contacts)
    # The next frame sees nothing near the robot: the same object, replaced.
    version = st.version
    st, ok = _send(clouds, status, _cloud(_around(p + np.array([0.0, 0.0, 5.0]), rng), big=True))
    assert ok and st.version == version + 1 and st.object_ids.count("sensed") == 1
    assert _valid(srv, client, q, st.scene_id)
    # Back on the robot, big endian this time.
    st, ok = _send(clouds, status, _cloud(_around(p, rng), big=True))
    assert not _valid(srv, client, q, st.scene_id)
    # A frame with no points (all NaN) removes the object.
    st, ok = _send(clouds, status, _cloud(np.full((4, 3), np.nan)))
    assert "sensed" not in st.object_ids and _valid(srv, client, q, st.scene_id)


def test_a_cloud_in_a_link_frame_is_posed_at_the_joint_states(srv: Dict[str, Any], client: Any,
                                                             status: rosenv.Latest, clouds: Any) -> None:
    rng = np.random.default_rng(12)
    q, p, link = _free_state_and_point(client, rng)
    link = link or "forearm"
    # No /joint_states yet: a cloud in a link frame cannot be posed, and says which joints are missing.
    st, ok = _send(clouds, status, _cloud(_around(np.zeros(3), rng), frame=link))
    assert not ok and "no value for joints shoulder_yaw" in st.last_error, st.last_error
    js = rospy.Publisher("/joint_states", JointState, queue_size=10)
    assert rosenv.eventually(lambda: js.get_num_connections() > 0, 20)
    js.publish(rosenv.joint_state(KR5_JOINTS, q))
    X = client.link_poses(q).pose(link)
    R, t = _quat_matrix(X[3:]), np.array(X[:3])
    local = (_around(p, rng) - t) @ R  # the points in the link's frame at q

    def applied() -> bool:
        js.publish(rosenv.joint_state(KR5_JOINTS, q))  # again: the first may beat the connection
        st, ok = _send(clouds, status, _cloud(local, frame=link))
        return ok and not _valid(srv, client, q, st.scene_id)
    assert rosenv.eventually(applied, 20, 0.2), status.msg.last_error
    # Posed at q, they stay where they were sensed: the robot moved away (another free state) is clear of them
    # exactly when the client says so for world points at the same place.
    world = client.update_world(replace=[_world_cloud(local @ R.T + t)], scene="default")
    for _ in range(20):
        q2 = client.get_scene("default").sample(1, rng)[0]
        assert _valid(srv, client, q2, status.msg.scene_id) == bool(
            client.check_state(q2, scene=world.scene_id).free and client.check_state(q2, scene=world.scene_id)
            .within_limits)


def test_a_cloud_in_a_tf_frame_is_moved_into_the_planning_frame(srv: Dict[str, Any], client: Any,
                                                                status: rosenv.Latest, clouds: Any) -> None:
    import tf2_ros
    from geometry_msgs.msg import TransformStamped
    rng = np.random.default_rng(14)
    q, p, _ = _free_state_and_point(client, rng)
    # A depth camera's optical frame, broadcast on /tf_static: a random pose in the planning frame.
    quat = rng.normal(size=4)
    quat /= np.linalg.norm(quat)
    t_wc = rng.uniform(-1.0, 1.0, 3)
    t = TransformStamped()
    t.header.stamp = rospy.Time.now()
    t.header.frame_id, t.child_frame_id = "base_link", "depth_optical_frame"
    t.transform.translation.x, t.transform.translation.y, t.transform.translation.z = (float(v) for v in t_wc)
    t.transform.rotation.x, t.transform.rotation.y, t.transform.rotation.z, t.transform.rotation.w = (float(v) for v in quat)
    broadcaster = tf2_ros.StaticTransformBroadcaster()
    broadcaster.sendTransform(t)
    R = _quat_matrix(quat)
    world = _around(p, rng)
    local = (world - t_wc) @ R  # the points as the camera sees them

    def applied() -> bool:
        st, ok = _send(clouds, status, _cloud(local, frame="depth_optical_frame"))
        return ok and not _valid(srv, client, q, st.scene_id)
    assert rosenv.eventually(applied, 20, 0.3), status.msg.last_error
    # In the world where the camera saw them: the same answers as the client's world cloud at those points.
    ref = client.update_world(replace=[_world_cloud(local @ R.T + t_wc)], scene="default")
    for _ in range(20):
        q2 = client.get_scene("default").sample(1, rng)[0]
        direct = client.check_state(q2, scene=ref.scene_id)
        assert _valid(srv, client, q2, status.msg.scene_id) == bool(direct.free and direct.within_limits)


def _world_cloud(points: np.ndarray) -> Any:
    """The library's cloud of the bridge's object (same id, radius, float32 points) in the world frame."""
    from proximity_client import geometry
    return geometry.point_cloud("sensed", points.astype(np.float32), radius=0.01, voxel_size=0.0)


def test_malformed_clouds_are_refused_and_the_node_goes_on(bridge: Any, srv: Dict[str, Any], client: Any,
                                                           status: rosenv.Latest, clouds: Any) -> None:
    rng = np.random.default_rng(13)
    q, p, _ = _free_state_and_point(client, rng)
    st, ok = _send(clouds, status, _cloud(_around(p, rng)))
    assert not _valid(srv, client, q, st.scene_id)
    scene_id, refused = st.scene_id, st.updates_refused
    bad = _cloud(_around(p + 5.0, rng))
    bad.data = bad.data[:-3]
    st, ok = _send(clouds, status, bad)
    assert not ok and st.updates_refused == refused + 1 and "point cloud 'sensed'" in st.last_error
    assert "data has" in st.last_error and st.scene_id == scene_id
    nofield = _cloud(_around(p + 5.0, rng))
    nofield.fields = nofield.fields[:2]
    st, ok = _send(clouds, status, nofield)
    assert not ok and "fields has no y, z" in st.last_error and st.scene_id == scene_id
    st, ok = _send(clouds, status, _cloud(_around(p + 5.0, rng), frame="camera_optical_frame"))
    assert not ok and "frame 'camera_optical_frame' is neither the planning frame" in st.last_error
    assert st.scene_id == scene_id and bridge.alive()
    assert not _valid(srv, client, q, scene_id)  # the last good cloud still stands
    # A burst: the newest cloud wins (stale ones may be skipped), here far away.
    before = status.msg.version
    for k in range(30):
        clouds.publish(_cloud(_around(p if k < 29 else p + 5.0, rng, n=2000)))
    def settled_free() -> bool:
        # While the burst is applied the scene may change between the status and the query: only an
        # answer on the scene the status names counts.
        r = srv["validity"](rosenv.robot_state(KR5_JOINTS, q), "")
        if status.msg.version <= before or r.scene_id != status.msg.scene_id:
            return False
        direct = client.check_state(q, scene=r.scene_id)
        assert r.valid == bool(direct.free and direct.within_limits)
        return bool(r.valid)

    assert rosenv.eventually(settled_free, 60, 0.2)
    assert status.msg.version - before <= 30
    # /joint_states and ~check_state_validity answered throughout; the node is still up.
    assert bridge.alive()
