"""collision_object (ADD, MOVE, APPEND, REMOVE with CollisionObject.pose semantics), refusals, and
/joint_states -> ~clearance, through a real ROS master. Oracle: the robot's own surface point at a state
(ComputeDistance's witness) becomes a probe's position, so each pose rule decides whether that state
collides; answers are also compared with the Python client's on the scene the bridge reports."""
from __future__ import annotations

from typing import Any, Dict, Iterator, Sequence

import numpy as np
import pytest
import rospy
from geometry_msgs.msg import Pose
from sensor_msgs.msg import JointState
from shape_msgs.msg import SolidPrimitive

import rosenv
from rosenv import KR5_JOINTS

rosenv.need_kr5()

from proximity_msgs.msg import Clearance, CollisionObject, SceneStatus  # noqa: E402
from proximity_ros import convert  # noqa: E402


@pytest.fixture(scope="module")
def status(bridge: Any) -> Iterator[rosenv.Latest]:
    s = rosenv.Latest(bridge.service("scene"), SceneStatus)
    s.wait(lambda m: bool(m.scene_id))
    yield s
    s.close()


@pytest.fixture(scope="module")
def objects(master: Any) -> Iterator[Any]:
    pub = rospy.Publisher("/collision_object", CollisionObject, queue_size=100)
    yield pub
    pub.unregister()


def _pose(X: Sequence[float]) -> Pose:
    p = Pose()
    p.position.x, p.position.y, p.position.z = (float(v) for v in X[:3])
    p.orientation.x, p.orientation.y, p.orientation.z, p.orientation.w = (float(v) for v in X[3:])
    return p


def _random_pose(rng: np.random.Generator, scale: float = 1.0) -> tuple:
    q = rng.normal(size=4)
    q /= np.linalg.norm(q)
    return tuple(rng.uniform(-scale, scale, 3)) + tuple(q)


def _object(oid: str, op: int, X: Sequence[float], spheres: Sequence[Sequence[float]] = (), frame: str = "base_link",
            radius: float = 0.02) -> CollisionObject:
    """Spheres centred at the given points of the object frame, the object frame at X."""
    o = CollisionObject(id=oid, operation=op, pose=_pose(X))
    o.header.frame_id = frame
    for c in spheres:
        o.primitives.append(SolidPrimitive(type=SolidPrimitive.SPHERE, dimensions=[radius]))
        o.primitive_poses.append(_pose(tuple(c) + (0.0, 0.0, 0.0, 1.0)))
    return o


class _Scene:
    """Publishes collision objects and waits for the bridge to apply (or refuse) each."""

    def __init__(self, pub: Any, status: rosenv.Latest) -> None:
        self.pub, self.status = pub, status

    def send(self, msg: CollisionObject) -> SceneStatus:
        before = self.status.msg.updates_applied + self.status.msg.updates_refused
        assert rosenv.eventually(lambda: self.pub.get_num_connections() > 0, 20)
        self.pub.publish(msg)
        return self.status.wait(lambda m: m.updates_applied + m.updates_refused > before)


def _valid(srv: Dict[str, Any], client: Any, q: np.ndarray, scene_id: str) -> bool:
    """The bridge's answer, checked against the client's on the bridge's scene."""
    r = srv["validity"](rosenv.robot_state(KR5_JOINTS, q), "")
    assert r.scene_id == scene_id
    direct = client.check_state(q, scene=scene_id)
    assert r.valid == bool(direct.free and direct.within_limits)
    return bool(r.valid)


def _free_state_and_point(client: Any, rng: np.random.Generator) -> tuple:
    info = client.get_scene("default")
    while True:
        q = info.sample(1, rng)[0]
        if client.check_state(q).free:
            return q, np.array(client.distance(q, exclude_self=True).nearest.point_robot)


def test_object_pose_semantics_add_move_append_remove(srv: Dict[str, Any], client: Any, status: rosenv.Latest,
                                                      objects: Any, rng: np.random.Generator) -> None:
    scene = _Scene(objects, status)
    for _round in range(3):
        q, p = _free_state_and_point(client, rng)
        X = _random_pose(rng)
        # ADD: a sphere placed (through the object's rotated frame) on the robot's surface point.
        st = scene.send(_object("probe", CollisionObject.ADD, X, [convert.compose(convert.inverse(X), tuple(p) + (0, 0, 0, 1))[:3]]))
        assert "probe" in st.object_ids and st.last_error == ""
        assert not _valid(srv, client, q, st.scene_id)
        r = srv["validity"](rosenv.robot_state(KR5_JOINTS, q), "")
        assert (r.contacts[0].contact_body_2, r.contacts[0].body_type_2) == ("probe", 1)
        # MOVE: the frame 2 m up carries the sphere away.
        X_up = (X[0], X[1], X[2] + 2.0) + tuple(X[3:])
        st = scene.send(_object("probe", CollisionObject.MOVE, X_up))
        assert _valid(srv, client, q, st.scene_id)
        # APPEND with another frame: the new sphere lands on the point, the old one stays up.
        Y = _random_pose(rng)
        st = scene.send(_object("probe", CollisionObject.APPEND, Y, [convert.compose(convert.inverse(Y), tuple(p) + (0, 0, 0, 1))[:3]]))
        assert not _valid(srv, client, q, st.scene_id)
        # The appended sphere rides with the object frame: move it 2 m further up and both leave.
        st = scene.send(_object("probe", CollisionObject.MOVE, (X_up[0], X_up[1], X_up[2] + 2.0) + tuple(X[3:])))
        assert _valid(srv, client, q, st.scene_id)
        # Back where the appended sphere sits on the point.
        st = scene.send(_object("probe", CollisionObject.MOVE, X_up))
        assert not _valid(srv, client, q, st.scene_id)
        # ADD of an existing id replaces it (MoveIt): one sphere far away only.
        st = scene.send(_object("probe", CollisionObject.ADD, X, [(5.0, 5.0, 5.0)]))
        assert _valid(srv, client, q, st.scene_id)
        st = scene.send(_object("probe", CollisionObject.REMOVE, (0, 0, 0, 0, 0, 0, 1)))
        assert "probe" not in st.object_ids
        assert _valid(srv, client, q, st.scene_id)


def test_objects_in_a_link_frame_are_posed_at_the_joint_states(srv: Dict[str, Any], client: Any,
                                                               status: rosenv.Latest, objects: Any) -> None:
    rng = np.random.default_rng(21)
    scene = _Scene(objects, status)
    q, p = _free_state_and_point(client, rng)
    link = "forearm"
    js = rospy.Publisher("/joint_states", JointState, queue_size=10)
    assert rosenv.eventually(lambda: js.get_num_connections() > 0, 20)
    X_WL = client.link_poses(q).pose(link)  # the link's pose at q, by proximityd's forward kinematics
    # The object frame given in the link frame: the sphere at the robot's surface point p, written in
    # the link's coordinates at q (MoveIt transforms such objects into the planning frame at the current state).
    X_LO = convert.compose(convert.inverse(tuple(X_WL)), tuple(p) + (0.0, 0.0, 0.0, 1.0))

    def placed() -> bool:
        js.publish(rosenv.joint_state(KR5_JOINTS, q))
        st = scene.send(_object("in_link", CollisionObject.ADD, X_LO, [(0.0, 0.0, 0.0)], frame=link))
        return "in_link" in st.object_ids and not _valid(srv, client, q, st.scene_id)
    assert rosenv.eventually(placed, 20, 0.2), status.msg.last_error
    # It stays in the world where it was placed: the world object at p by the client answers the same.
    from proximity_client import geometry as g
    world = client.update_world(add=[g.collision_object("in_link", [g.sphere(0.02, tuple(p))])], scene="default")
    for _ in range(10):
        q2 = client.get_scene("default").sample(1, rng)[0]
        direct = client.check_state(q2, scene=world.scene_id)
        assert _valid(srv, client, q2, status.msg.scene_id) == bool(direct.free and direct.within_limits)
    scene.send(_object("in_link", CollisionObject.REMOVE, (0, 0, 0, 0, 0, 0, 1)))


def test_objects_in_a_tf_frame_are_posed_through_tf(srv: Dict[str, Any], client: Any, status: rosenv.Latest,
                                                    objects: Any) -> None:
    import tf2_ros
    from geometry_msgs.msg import TransformStamped
    rng = np.random.default_rng(22)
    scene = _Scene(objects, status)
    q, p = _free_state_and_point(client, rng)
    # A camera mount somewhere in the planning frame, broadcast on /tf_static as a robot's launch file does.
    X_WC = _random_pose(rng)
    t = TransformStamped()
    t.header.stamp = rospy.Time.now()
    t.header.frame_id, t.child_frame_id = "base_link", "mount_camera"
    t.transform.translation.x, t.transform.translation.y, t.transform.translation.z = X_WC[:3]
    t.transform.rotation.x, t.transform.rotation.y, t.transform.rotation.z, t.transform.rotation.w = X_WC[3:]
    broadcaster = tf2_ros.StaticTransformBroadcaster()
    broadcaster.sendTransform(t)
    X_CO = convert.compose(convert.inverse(X_WC), tuple(p) + (0.0, 0.0, 0.0, 1.0))

    def placed() -> bool:
        st = scene.send(_object("seen", CollisionObject.ADD, X_CO, [(0.0, 0.0, 0.0)], frame="mount_camera"))
        return "seen" in st.object_ids and not _valid(srv, client, q, st.scene_id)
    assert rosenv.eventually(placed, 20, 0.3), status.msg.last_error
    scene.send(_object("seen", CollisionObject.REMOVE, (0, 0, 0, 0, 0, 0, 1)))


def test_meshes_boxes_cylinders_and_cones(srv: Dict[str, Any], client: Any, status: rosenv.Latest, objects: Any,
                                          rng: np.random.Generator) -> None:
    """Each shape type centred on the robot's surface point makes the state collide."""
    from geometry_msgs.msg import Point
    from shape_msgs.msg import Mesh, MeshTriangle
    scene = _Scene(objects, status)
    q, p = _free_state_and_point(client, rng)
    X = tuple(p) + (0.0, 0.0, 0.0, 1.0)
    shapes = {
        "box": SolidPrimitive(type=SolidPrimitive.BOX, dimensions=[0.03, 0.04, 0.05]),
        "cylinder": SolidPrimitive(type=SolidPrimitive.CYLINDER, dimensions=[0.05, 0.02]),
        "cone": SolidPrimitive(type=SolidPrimitive.CONE, dimensions=[0.05, 0.03]),
    }
    for name, prim in shapes.items():
        o = _object(name, CollisionObject.ADD, X)
        o.primitives, o.primitive_poses = [prim], [_pose((0, 0, 0, 0, 0, 0, 1))]
        st = scene.send(o)
        assert name in st.object_ids, st.last_error
        assert not _valid(srv, client, q, st.scene_id)
        st = scene.send(_object(name, CollisionObject.REMOVE, X))
        assert _valid(srv, client, q, st.scene_id)
    # A closed tetrahedron mesh around the point (a surface: its faces must cross the robot).
    s = 0.04
    verts = [(s, s, s), (s, -s, -s), (-s, s, -s), (-s, -s, s)]
    mesh = Mesh(vertices=[Point(*v) for v in verts],
                triangles=[MeshTriangle(vertex_indices=t) for t in ((0, 1, 2), (0, 3, 1), (0, 2, 3), (1, 3, 2))])
    o = _object("tetra", CollisionObject.ADD, X)
    o.meshes, o.mesh_poses = [mesh], [_pose((0, 0, 0, 0, 0, 0, 1))]
    st = scene.send(o)
    assert "tetra" in st.object_ids, st.last_error
    assert not _valid(srv, client, q, st.scene_id)
    scene.send(_object("tetra", CollisionObject.REMOVE, X))


@pytest.mark.parametrize("make,message", [
    (lambda: _object("bad", CollisionObject.ADD, (0, 0, 0, 0, 0, 0, 1), [(0, 0, 0)], frame="camera_link"),
     "frame 'camera_link' is neither the planning frame"),
    (lambda: _object("bad", CollisionObject.MOVE, (0, 0, 0, 0, 0, 0, 1)), "MOVE: no world object 'bad'"),
    (lambda: _object("bad", CollisionObject.REMOVE, (0, 0, 0, 0, 0, 0, 1)), "REMOVE: no world object 'bad'"),
    (lambda: _object("bad", CollisionObject.ADD, (0, 0, 0, 0, 0, 0, 1)), "has no primitives or meshes"),
    (lambda: _object("bad", CollisionObject.ADD, (0, 0, 0, 0, 0, 0, 1), [(0, 0, 0)], radius=float("nan")),
     r"dimensions\[0\] is nan"),
    (lambda: _object("bad", 7, (0, 0, 0, 0, 0, 0, 1), [(0, 0, 0)]), "operation 7"),
    (lambda: _object("table", CollisionObject.APPEND, (0, 0, 0, 0, 0, 0, 1), [(0, 0, 0)]), "built-in scene"),
    (lambda: _object("shoulder", CollisionObject.ADD, (0, 0, 0, 0, 0, 0, 1), [(0, 0, 0)]), "robot link's name"),
])
def test_refused_objects_are_logged_and_change_nothing(status: rosenv.Latest, objects: Any, make: Any,
                                                       message: str) -> None:
    scene = _Scene(objects, status)
    before = status.msg
    st = scene.send(make())
    assert st.updates_refused == before.updates_refused + 1
    assert st.scene_id == before.scene_id and list(st.object_ids) == list(before.object_ids)
    assert __import__("re").search(message, st.last_error), st.last_error


def test_planes_are_refused(status: rosenv.Latest, objects: Any) -> None:
    from shape_msgs.msg import Plane
    o = _object("floor", CollisionObject.ADD, (0, 0, 0, 0, 0, 0, 1))
    o.planes, o.plane_poses = [Plane(coef=[0, 0, 1, 0])], [_pose((0, 0, 0, 0, 0, 0, 1))]
    st = _Scene(objects, status).send(o)
    assert "planes are not supported" in st.last_error and "floor" not in st.object_ids


def _stamp(i: int) -> rospy.Time:
    return rospy.Time(1000 + i, 0)


def test_clearance_follows_the_latest_joint_state(bridge: Any, client: Any, status: rosenv.Latest,
                                                  rng: np.random.Generator) -> None:
    info = client.get_scene(status.msg.scene_id)
    clear = rosenv.Latest(bridge.service("clearance"), Clearance)
    pub = rospy.Publisher("/joint_states", JointState, queue_size=1000)
    assert rosenv.eventually(lambda: pub.get_num_connections() > 0, 20)
    # Both connections up before the first state: an answer published before the subscriber connects is
    # lost (rospy does not latch it), and a loaded machine connects slowly.
    assert rosenv.eventually(lambda: clear.sub.get_num_connections() > 0, 20)
    states = info.sample(40, rng)
    for i, q in enumerate(states):
        js = rosenv.joint_state(KR5_JOINTS, q)
        js.header.stamp = _stamp(i)
        pub.publish(js)
        m = clear.wait(lambda m, i=i: m.header.stamp == _stamp(i))
        d = client.distance(q, rel_err=0.05, scene=info.scene_id)
        free = client.check_state(q, scene=info.scene_id)
        assert m.scene_id == info.scene_id and m.header.frame_id == "base_link"
        assert m.valid == bool(free.free and free.within_limits)
        assert m.within_limits == free.within_limits
        assert max(m.lower, d.lower) <= min(m.upper, d.upper) + 1e-12
        if free.free:
            assert m.lower > 0 and m.body_1 and m.body_2
    # A burst: answers come in stamp order, stale states are dropped, the last state is answered.
    first = clear.count
    n = 300
    for i in range(n):
        js = rosenv.joint_state(KR5_JOINTS, states[i % len(states)])
        js.header.stamp = _stamp(100 + i)
        pub.publish(js)
    last = clear.wait(lambda m: m.header.stamp == _stamp(100 + n - 1))
    answered = [m.header.stamp for m in clear.all[first:]]
    assert answered == sorted(answered) and len(set(answered)) == len(answered)
    assert len(answered) <= n
    d = client.distance(states[(n - 1) % len(states)], rel_err=0.05, scene=info.scene_id)
    assert max(last.lower, d.lower) <= min(last.upper, d.upper) + 1e-12
    pub.unregister()
    clear.close()


def test_remove_with_an_empty_id_clears_the_world(srv: Dict[str, Any], client: Any, status: rosenv.Latest,
                                                  objects: Any) -> None:
    q = np.array([0.0, 1.5, 0.0, 0.0, 0.0, 0.0])  # the forearm on the table
    assert not _valid(srv, client, q, status.msg.scene_id)
    st = _Scene(objects, status).send(_object("", CollisionObject.REMOVE, (0, 0, 0, 0, 0, 0, 1)))
    assert list(st.object_ids) == []
    assert _valid(srv, client, q, st.scene_id) == bool(client.check_state(q, scene=st.scene_id).free)
    assert "table" not in client.get_scene(st.scene_id).object_ids
