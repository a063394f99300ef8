"""A robot from the parameter server (robot_description, robot_description_semantic) whose meshes are
package:// URIs found through ROS_PACKAGE_PATH by package.xml name; SRDF groups; attached objects and
allowed-collision matrices; a changed description; a missing or broken one; no proximityd.

Oracle: proximityd scene ids hash content, so the scene the bridge builds must have the id of the same
robot, objects and pairs created directly with the Python client (meshes located by rospkg, ROS's own
package crawler), and its answers must equal the client's on that scene."""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, Dict, Iterator

import numpy as np
import pytest
import rospy

import rosenv
from rosenv import KR5_JOINTS, KR5_URDF

rosenv.need_kr5()

from proximity_client import geometry  # noqa: E402
from proximity_ros import convert  # noqa: E402
from proximity_msgs.msg import (AllowedCollisionEntry, AllowedCollisionMatrix, AttachedCollisionObject,  # noqa: E402
                                CollisionObject, SceneStatus)

SRDF = """<?xml version="1.0"?>
<robot name="KR5sixxR650WP_description">
  <virtual_joint name="mount" type="fixed" parent_frame="workcell" child_link="world"/>
  <group name="manipulator"><chain base_link="base_link" tip_link="palm"/></group>
  <group name="wrist"><joint name="wrist_pitch"/><joint name="wrist_roll"/></group>
  <group name="arm"><joint name="shoulder_yaw"/><link name="elbow"/><group name="wrist"/></group>
  <group_state name="home" group="manipulator">
    <joint name="shoulder_yaw" value="0"/><joint name="shoulder_pitch" value="0"/><joint name="elbow_pitch" value="0"/>
    <joint name="elbow_roll" value="0"/><joint name="wrist_pitch" value="0"/><joint name="wrist_roll" value="0"/>
  </group_state>
  <disable_collisions link1="base_link" link2="bicep" reason="Never"/>
</robot>
"""


@pytest.fixture(scope="module")
def packages(tmp_path_factory: pytest.TempPathFactory) -> Dict[str, Any]:
    """Two ROS_PACKAGE_PATH roots: the first holds kr5_description in a folder of another name, and a
    folder named kr5_description that is another package; the second a decoy kr5_description whose
    meshes are broken (rospack takes the first root's)."""
    base = tmp_path_factory.mktemp("ros_packages")
    root1, root2 = base / "ws1" / "src", base / "ws2" / "src"
    good = root1 / "robots" / "kuka_kr5_folder"
    shutil.copytree(KR5_URDF.parent / "meshes", good / "meshes")
    (good / "package.xml").write_text("<package format='2'><name>kr5_description</name><version>1.0.0</version>"
                                      "<description>KR5</description><maintainer email='a@b.c'>a</maintainer>"
                                      "<license>BSD</license></package>")
    other = root1 / "kr5_description"
    other.mkdir(parents=True)
    (other / "package.xml").write_text("<package><name>not_the_robot</name></package>")
    decoy = root2 / "kr5_description"
    (decoy / "meshes").mkdir(parents=True)
    (decoy / "package.xml").write_text("<package><name>kr5_description</name></package>")
    for m in (good / "meshes").iterdir():
        (decoy / "meshes" / m.name).write_text("solid broken\n")
    urdf = KR5_URDF.read_text().replace('filename="meshes/', 'filename="package://kr5_description/meshes/')
    assert urdf.count("package://kr5_description/") >= 7
    ros_package_path = f"{base / 'ws1' / 'src'}:{base / 'ws2' / 'src'}"
    import rospkg
    found = Path(rospkg.RosPack(ros_paths=ros_package_path.split(":")).get_path("kr5_description"))
    assert found == good
    return {"urdf": urdf, "ros_package_path": ros_package_path, "package_dir": str(found)}


@pytest.fixture(scope="module")
def robot_bridge(master: Any, daemon: Any, packages: Dict[str, Any]) -> Iterator[rosenv.BridgeProcess]:
    rospy.set_param("/robot_description", packages["urdf"])
    rospy.set_param("/robot_description_semantic", SRDF)
    node = rosenv.BridgeProcess(master, name="kr5_bridge", target=daemon.target,
                                params={"param_poll_period": 0.2},
                                env={"ROS_PACKAGE_PATH": packages["ros_package_path"]}, cwd="/")
    try:
        yield node.wait_ready()
    finally:
        node.stop()


@pytest.fixture(scope="module")
def status(robot_bridge: rosenv.BridgeProcess) -> Iterator[rosenv.Latest]:
    s = rosenv.Latest(robot_bridge.service("scene"), SceneStatus)
    s.wait(lambda m: bool(m.scene_id))
    yield s
    s.close()


@pytest.fixture(scope="module")
def rsrv(robot_bridge: rosenv.BridgeProcess) -> Dict[str, Any]:
    return rosenv.proxies(robot_bridge)


def _direct(client: Any, packages: Dict[str, Any], srdf: str = SRDF, **kw: Any) -> Any:
    """The same scene created directly: meshes where rospkg finds the package, uploaded by the client."""
    from proximity_client.bundle import bundle_from_text
    b = bundle_from_text(packages["urdf"], srdf, "/", {"kr5_description": packages["package_dir"]}, "")
    return client.create_scene(urdf=b.urdf, srdf=b.srdf, files=b.files, **kw)


def test_the_parameter_robot_is_the_same_scene_as_created_directly(rsrv: Dict[str, Any], status: rosenv.Latest,
                                                                   client: Any, packages: Dict[str, Any],
                                                                   rng: np.random.Generator) -> None:
    st = status.msg
    info = _direct(client, packages)
    assert st.scene_id == info.scene_id
    assert st.planning_frame == "workcell"
    assert list(st.group_names) == ["arm", "manipulator", "wrist"]
    assert list(st.joint_names) == KR5_JOINTS
    states = info.sample(300, rng)
    direct = client.check_states(states, scene=info.scene_id)
    got = rsrv["states"]([rosenv.robot_state(KR5_JOINTS, q) for q in states], "manipulator")
    np.testing.assert_array_equal(np.array(got.valid), direct)
    assert 0 < direct.sum() < len(states)


def test_groups(rsrv: Dict[str, Any]) -> None:
    home = rosenv.robot_state(KR5_JOINTS, [0.0] * 6)
    for g in ("", "manipulator", "wrist", "arm"):
        assert rsrv["validity"](home, g).scene_id
    with pytest.raises(rospy.ServiceException, match="unknown group_name 'gripper'; known groups: arm, manipulator, wrist"):
        rsrv["validity"](home, "gripper")
    from proximity_msgs.srv import PlanRequest
    goal = rosenv.joint_state(["wrist_pitch"], [0.5])
    # A group of two of the six joints: planned alone, the others held at the start's values.
    w = rsrv["plan"](PlanRequest(start_state=home, goal=goal, group_name="wrist", seed=1))
    assert w.error_code.val == 1 and w.valid, w.message
    assert list(w.trajectory.joint_names) == ["wrist_pitch", "wrist_roll"]
    assert w.trajectory.points[-1].positions[0] == pytest.approx(0.5)
    with pytest.raises(rospy.ServiceException, match="joint 'shoulder_pitch' is not in group 'wrist'"):
        rsrv["plan"](PlanRequest(start_state=home, goal=rosenv.joint_state(["shoulder_pitch"], [0.3]),
                                 group_name="wrist"))
    r = rsrv["plan"](PlanRequest(start_state=home, goal=goal, group_name="manipulator", seed=1))
    assert r.error_code.val == 1 and r.valid
    assert r.trajectory.header.frame_id == "workcell"
    assert r.trajectory.points[-1].positions[4] == pytest.approx(0.5)


def _send(pub: Any, status: rosenv.Latest, msg: Any) -> SceneStatus:
    before = status.msg.updates_applied + status.msg.updates_refused
    assert rosenv.eventually(lambda: pub.get_num_connections() > 0, 20)
    pub.publish(msg)
    return status.wait(lambda m: m.updates_applied + m.updates_refused > before)


def _box_object(oid: str, frame: str, size: tuple, X: tuple, op: int = CollisionObject.ADD) -> CollisionObject:
    from geometry_msgs.msg import Pose
    from shape_msgs.msg import SolidPrimitive
    o = CollisionObject(id=oid, operation=op)
    o.header.frame_id = frame
    o.pose.position.x, o.pose.position.y, o.pose.position.z = X[:3]
    o.pose.orientation.x, o.pose.orientation.y, o.pose.orientation.z, o.pose.orientation.w = X[3:]
    o.primitives = [SolidPrimitive(type=SolidPrimitive.BOX, dimensions=list(size))]
    o.primitive_poses = [Pose()]  # all-zero orientation: identity
    return o


def test_object_frames(status: rosenv.Latest, client: Any, packages: Dict[str, Any]) -> None:
    """Objects are given in the planning frame (the SRDF's virtual joint parent) or the URDF root link,
    which the scene puts at the same place; a link frame needs the joint states; an unknown frame is refused."""
    pub = rospy.Publisher("/collision_object", CollisionObject, queue_size=10)
    X = (0.5, 0.0, 0.1, 0.0, 0.0, 0.0, 1.0)
    st = _send(pub, status, _box_object("table", "workcell", (0.5, 1.0, 0.05), X))
    assert st.object_ids == ["table"]
    # An UpdateWorld on the robot's scene: the id of the same update made directly.
    table = geometry.collision_object("table", [geometry.box((0.5, 1.0, 0.05), at=(0, 0, 0, 0, 0, 0, 1))], at=X)
    assert st.scene_id == client.update_world(add=[table], scene=_direct(client, packages).scene_id).scene_id
    st = _send(pub, status, _box_object("table", "/world", (0.5, 1.0, 0.05), X, CollisionObject.MOVE))
    assert st.last_error == "" and st.object_ids == ["table"]
    # A link frame is posed at the current /joint_states: none yet, so refused naming the joints missing.
    st = _send(pub, status, _box_object("box2", "palm", (0.1, 0.1, 0.1), X))
    assert "in frame 'palm': no value for joints shoulder_yaw" in st.last_error, st.last_error
    st = _send(pub, status, _box_object("box2", "camera", (0.1, 0.1, 0.1), X))
    assert "frame 'camera' is neither the planning frame ('workcell' or 'world')" in st.last_error, st.last_error
    st = _send(pub, status, _box_object("table", "", (0, 0, 0), X, CollisionObject.REMOVE))
    assert list(st.object_ids) == []
    pub.unregister()


def test_attached_objects_and_allowed_pairs(rsrv: Dict[str, Any], status: rosenv.Latest, client: Any,
                                            packages: Dict[str, Any], rng: np.random.Generator) -> None:
    base_id = _direct(client, packages).scene_id  # the robot alone, created (not an UpdateWorld chain)
    pub = rospy.Publisher("/attached_collision_object", AttachedCollisionObject, queue_size=10)
    X = (0.0, 0.0, 0.12, 0.0, 0.0, 0.0, 1.0)
    tool = AttachedCollisionObject(link_name="palm", touch_links=["wrist"],
                                   object=_box_object("tool", "palm", (0.04, 0.04, 0.2), X))
    st = _send(pub, status, tool)
    assert st.attached_object_ids == ["tool"], st.last_error
    info = _direct(client, packages, attached=[geometry.attached_object(
        "tool", "palm", [geometry.box((0.04, 0.04, 0.2), at=X)], touch_links=["wrist"])])
    assert st.scene_id == info.scene_id
    # States where the tool hits the robot: the bridge names it as an attached body.
    states = info.sample(400, rng)
    res = client.check_states(states, include_contacts=True, scene=info.scene_id)
    hits = [i for i, c in res.contacts.items() if "tool" in c.names]
    assert hits
    r = rsrv["validity"](rosenv.robot_state(KR5_JOINTS, states[hits[0]]), "")
    c = r.contacts[0]
    assert not r.valid and ("tool", 2) in [(c.contact_body_1, c.body_type_1), (c.contact_body_2, c.body_type_2)]
    # Detached: back to the scene without it (the same content, the same id).
    tool.object.operation = CollisionObject.REMOVE
    st = _send(pub, status, tool)
    assert list(st.attached_object_ids) == [] and st.scene_id == base_id
    bad = AttachedCollisionObject(link_name="gripper", object=_box_object("x", "gripper", (0.1, 0.1, 0.1), X))
    st = _send(pub, status, bad)
    assert "link_name 'gripper' is not a link" in st.last_error and st.scene_id == base_id
    # Attaching by id alone needs a world object of that id: refused, nothing changes.
    st = _send(pub, status, AttachedCollisionObject(link_name="palm", object=CollisionObject(id="tool")))
    assert "there is no world object 'tool'" in st.last_error and st.scene_id == base_id
    pub.unregister()

    # An allowed pair: a self-colliding state's pair allowed, the same scene as with that pair directly.
    acm = rospy.Publisher(f"{status.sub.resolved_name.rsplit('/', 1)[0]}/allowed_collision_matrix",
                          AllowedCollisionMatrix, queue_size=10)
    selfhits = [i for i, c in res.contacts.items() if c.self_collision and "tool" not in c.names]
    assert selfhits
    pair = res.contacts[selfhits[0]].names
    m = AllowedCollisionMatrix(entry_names=list(pair),
                               entry_values=[AllowedCollisionEntry(enabled=[False, True]),
                                             AllowedCollisionEntry(enabled=[True, False])])
    st = _send(acm, status, m)
    assert st.last_error == "" or "allowed" not in st.last_error
    assert st.scene_id == _direct(client, packages, allowed_pairs=[tuple(sorted(pair))]).scene_id
    r = rsrv["validity"](rosenv.robot_state(KR5_JOINTS, states[selfhits[0]]), "")
    assert all({c.contact_body_1, c.contact_body_2} != set(pair) for c in r.contacts)
    st = _send(acm, status, AllowedCollisionMatrix())
    assert st.scene_id == base_id
    st = _send(acm, status, AllowedCollisionMatrix(entry_names=["a", "b"], entry_values=[AllowedCollisionEntry()]))
    assert "2 entry_names but 1 entry_values" in st.last_error and st.scene_id == base_id
    acm.unregister()


def _validity_at_current(rsrv: Dict[str, Any]) -> Any:
    """The bridge's answer at its current joint state (an empty diff), None while it has none."""
    try:
        return rsrv["validity"](rosenv.robot_state([], []).__class__(is_diff=True), "")
    except rospy.ServiceException:
        return None


def test_a_world_object_attached_by_id_stays_in_place_and_detaches_back_into_the_world(
        rsrv: Dict[str, Any], status: rosenv.Latest, client: Any, packages: Dict[str, Any],
        rng: np.random.Generator) -> None:
    """MoveIt's attach by id: the world object leaves the world and is carried by the link from where it
    is at the current joint state; detached, it goes back into the world where the link holds it then.
    Oracle: the same box attached with its shapes in the link frame (and, detached, the same box added
    to the world at the link's pose from proximityd's forward kinematics) answers alike on sampled
    states."""
    objects = rospy.Publisher("/collision_object", CollisionObject, queue_size=10)
    attach = rospy.Publisher("/attached_collision_object", AttachedCollisionObject, queue_size=10)
    joints = rospy.Publisher("/joint_states", rosenv.joint_state([], []).__class__, queue_size=10)
    base = _direct(client, packages)
    X = (0.0, 0.0, 0.12, 0.0, 0.0, 0.0, 1.0)  # the cup in the palm frame
    box = [geometry.box((0.04, 0.04, 0.2), at=X)]
    carried = _direct(client, packages, attached=[geometry.attached_object("cup", "palm", box, touch_links=["wrist"])])
    states = carried.sample(400, rng)
    free = client.check_states(states, scene=carried.scene_id)
    base_free = client.check_states(states, scene=base.scene_id)
    q0 = states[np.flatnonzero(free)[0]]
    q1 = states[np.flatnonzero(~free & base_free)[0]]  # the cup hits the arm, the arm alone is free

    def world_cup_at(q: np.ndarray) -> Any:
        X_WP = tuple(client.link_poses(q, scene=base.scene_id).pose("palm"))
        return _direct(client, packages, objects=[geometry.collision_object("cup", [geometry.box((0.04, 0.04, 0.2))],
                                                                            at=convert.compose(X_WP, X))])

    def same_answers(scene_id: str, want: Any) -> None:
        got = client.check_states(states, scene=scene_id)
        assert np.array_equal(got, client.check_states(states, scene=want.scene_id))

    # The cup in the world where the palm holds it at q0 (an UpdateWorld version: compared by answers).
    X_W0 = convert.compose(tuple(client.link_poses(q0, scene=base.scene_id).pose("palm")), X)
    st = _send(objects, status, _box_object("cup", "workcell", (0.04, 0.04, 0.2), X_W0))
    assert list(st.object_ids) == ["cup"], st.last_error
    same_answers(st.scene_id, world_cup_at(q0))

    # No /joint_states yet: attaching by id cannot place it, and says which joints it lacks.
    by_id = AttachedCollisionObject(link_name="palm", touch_links=["wrist"], object=CollisionObject(id="cup"))
    before = st.scene_id
    st = _send(attach, status, by_id)
    assert "no value for joints shoulder_yaw" in st.last_error and st.scene_id == before

    # At q0 it attaches where it is: the scene answers as the cup attached with its shapes.
    assert rosenv.eventually(lambda: joints.get_num_connections() > 0, 20)

    def at(q: np.ndarray, valid: Any) -> Any:
        """Publishes q until the bridge answers at its current state (``valid`` when given: the answer
        that tells q from the state before)."""
        def published() -> bool:
            joints.publish(rosenv.joint_state(KR5_JOINTS, q))
            r = _validity_at_current(rsrv)
            return r is not None and (valid is None or r.valid == valid)
        return published
    assert rosenv.eventually(at(q0, None), 20, 0.2)
    st = _send(attach, status, by_id)
    assert list(st.attached_object_ids) == ["cup"] and list(st.object_ids) == [], st.last_error
    same_answers(st.scene_id, carried)

    # Carried to q1 (where the cup hits the arm) and detached: back into the world where the palm holds it.
    assert rosenv.eventually(at(q1, False), 20, 0.2)
    by_id.object.operation = CollisionObject.REMOVE
    st = _send(attach, status, by_id)
    assert list(st.attached_object_ids) == [] and list(st.object_ids) == ["cup"]
    same_answers(st.scene_id, world_cup_at(q1))
    st = _send(objects, status, _box_object("cup", "", (0, 0, 0), X, CollisionObject.REMOVE))
    assert list(st.object_ids) == [] and list(st.attached_object_ids) == []
    same_answers(st.scene_id, base)
    for p in (objects, attach, joints):
        p.unregister()


def test_a_changed_description_recreates_the_scene_and_keeps_objects(status: rosenv.Latest, client: Any,
                                                                     packages: Dict[str, Any]) -> None:
    pub = rospy.Publisher("/collision_object", CollisionObject, queue_size=10)
    X = (0.6, 0.0, 0.1, 0.0, 0.0, 0.0, 1.0)
    st = _send(pub, status, _box_object("crate", "workcell", (0.2, 0.2, 0.2), X))
    assert st.object_ids == ["crate"]
    srdf2 = SRDF.replace('reason="Never"/>', 'reason="Never"/>\n  <disable_collisions link1="shoulder" link2="forearm" reason="User"/>')
    rospy.set_param("/robot_description_semantic", srdf2)
    want = _direct(client, packages, srdf=srdf2, objects=[geometry.collision_object(
        "crate", [geometry.box((0.2, 0.2, 0.2), at=(0, 0, 0, 0, 0, 0, 1))], at=X)]).scene_id
    st = status.wait(lambda m: m.scene_id == want)
    assert st.object_ids == ["crate"]
    rospy.set_param("/robot_description_semantic", SRDF)
    _send(pub, status, _box_object("crate", "", (0, 0, 0), X, CollisionObject.REMOVE))
    status.wait(lambda m: m.scene_id == _direct(client, packages).scene_id)
    pub.unregister()


def test_a_missing_or_broken_description_is_a_clear_error(master: Any, daemon: Any, packages: Dict[str, Any]) -> None:
    node = rosenv.BridgeProcess(master, name="waiting_bridge", target=daemon.target,
                                params={"robot": "parameter", "robot_description": "/later_description",
                                        "param_poll_period": 0.2},
                                env={"ROS_PACKAGE_PATH": packages["ros_package_path"]}).wait_ready()
    try:
        srv = rosenv.proxies(node)
        home = rosenv.robot_state(KR5_JOINTS, [0.0] * 6)
        with pytest.raises(rospy.ServiceException, match="parameter /later_description is not set"):
            srv["validity"](home, "")
        rospy.set_param("/later_description", "<robot name='x'><link name='a'>")
        assert rosenv.eventually(lambda: "not valid XML" in _error(srv, home), 20)
        rospy.set_param("/later_description", packages["urdf"].replace("kr5_description", "missing_pkg"))
        assert rosenv.eventually(lambda: "missing_pkg" in _error(srv, home), 20)
        rospy.set_param("/later_description", packages["urdf"])
        assert rosenv.eventually(lambda: _error(srv, home) == "", 20)
        assert node.alive()
    finally:
        node.stop()


def _error(srv: Dict[str, Any], req: Any) -> str:
    try:
        srv["validity"](req, "")
        return ""
    except rospy.ServiceException as e:
        return str(e)


def test_no_proximityd_is_a_clear_error_and_the_node_keeps_running(master: Any) -> None:
    target = f"127.0.0.1:{rosenv.free_port()}"
    node = rosenv.BridgeProcess(master, name="lonely_bridge", target=target,
                                params={"timeout": 2.0, "robot": "default"}).wait_ready()
    try:
        srv = rosenv.proxies(node)
        for _ in range(2):
            with pytest.raises(rospy.ServiceException, match=f"proximityd at {target}.*UNAVAILABLE"):
                srv["validity"](rosenv.robot_state(KR5_JOINTS, [0.0] * 6), "")
        assert node.alive()
    finally:
        node.stop()
