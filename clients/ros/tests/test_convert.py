"""The conversion layer without ROS running: ROS 2 message shapes (the dicts `ros2 topic echo --yaml`
prints) in and out, pose algebra against rotation matrices, waypoint timing against sampled cubic
interpolation, URDF/SRDF reading, genpy round trips, and package crawling against rospkg."""
from __future__ import annotations

import math
import re
import os
from pathlib import Path
from typing import Any, Dict, List

import numpy as np
import pytest
import yaml

import rosenv  # noqa: F401  (paths to the sources and generated code)
from proximity_ros import convert
from proximity_ros.convert import BadRequest, JointSpace
from proximity_ros.robot import RobotDescriptionError, describe

# Shaped exactly as `ros2 topic echo --yaml` prints (ROS 2 Humble field names and duration layout).
ROS2_TRAJECTORY = """
header:
  stamp:
    sec: 12
    nanosec: 500000000
  frame_id: world
joint_names:
- b
- a
points:
- positions: [0.0, 1.0]
  velocities: []
  accelerations: []
  effort: []
  time_from_start:
    sec: 0
    nanosec: 0
- positions: [0.5, 1.5]
  velocities: []
  accelerations: []
  effort: []
  time_from_start:
    sec: 1
    nanosec: 250000000
"""

ROS2_COLLISION_OBJECT = """
header:
  stamp: {sec: 0, nanosec: 0}
  frame_id: world
pose:
  position: {x: 1.0, y: 0.0, z: 0.5}
  orientation: {x: 0.0, y: 0.0, z: 0.7071067811865476, w: 0.7071067811865476}
id: crate
type: {key: '', db: ''}
primitives:
- type: 3
  dimensions: [0.4, 0.1]
- type: 1
  dimensions: [0.1, 0.2, 0.3]
primitive_poses:
- position: {x: 0.0, y: 0.0, z: 0.2}
  orientation: {x: 0.0, y: 0.0, z: 0.0, w: 1.0}
- position: {x: 0.1, y: 0.0, z: 0.0}
  orientation: {x: 0.0, y: 0.0, z: 0.0, w: 0.0}
meshes:
- triangles:
  - vertex_indices: [0, 1, 2]
  vertices:
  - {x: 0.0, y: 0.0, z: 0.0}
  - {x: 1.0, y: 0.0, z: 0.0}
  - {x: 0.0, y: 1.0, z: 0.0}
mesh_poses:
- position: {x: 0.0, y: 0.0, z: 0.0}
  orientation: {x: 0.0, y: 0.0, z: 0.0, w: 1.0}
planes: []
plane_poses: []
subframe_names: []
subframe_poses: []
operation: 0
"""


def test_ros2_trajectory_in_scene_order() -> None:
    doc = yaml.safe_load(ROS2_TRAJECTORY)
    space = JointSpace(["a", "b", "c"])
    rows, times = convert.trajectory_rows(doc, space, [{"c": 7.0}])
    np.testing.assert_array_equal(rows, [[1.0, 0.0, 7.0], [1.5, 0.5, 7.0]])
    np.testing.assert_array_equal(times, [0.0, 1.25])
    with pytest.raises(BadRequest, match="no value for joint c"):
        convert.trajectory_rows(doc, space, [{}])


def test_ros2_collision_object_shapes_and_poses() -> None:
    doc = yaml.safe_load(ROS2_COLLISION_OBJECT)
    parts = convert.object_parts(doc)
    assert [p.shape.WhichOneof("shape") for p in parts] == ["cylinder", "box", "mesh"]
    cyl, box, mesh = parts
    assert (cyl.shape.cylinder.radius, cyl.shape.cylinder.length) == (0.1, 0.4)  # HEIGHT = 0, RADIUS = 1
    assert (box.shape.box.size.x, box.shape.box.size.y, box.shape.box.size.z) == (0.1, 0.2, 0.3)
    assert convert.wire_pose_values(box.pose) == (0.1, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0)  # zero quaternion: identity
    assert list(mesh.shape.mesh.triangles) == [0, 1, 2] and len(mesh.shape.mesh.vertices) == 9
    assert convert.pose_values(doc["pose"])[:3] == (1.0, 0.0, 0.5)


@pytest.mark.parametrize("edit,message", [
    (lambda d: d["primitives"][0].update(type=9), "type 9"),
    (lambda d: d["primitives"][1].update(dimensions=[0.1, 0.2]), "needs 3"),
    (lambda d: d["primitives"][1].update(dimensions=[0.1, -0.2, 0.3]), "must be positive"),
    (lambda d: d["primitive_poses"].pop(), "2 primitives but 1 primitive_poses"),
    (lambda d: d["meshes"][0]["triangles"][0].update(vertex_indices=[0, 1, 3]), "3 indices below 3"),
    (lambda d: d["pose"]["orientation"].update(w=2.0), "not a unit quaternion"),
    (lambda d: d["primitive_poses"][0]["position"].update(x=float("nan")), r"primitive_poses\[0\].position.x is nan"),
    (lambda d: d["planes"].append({"coef": [0, 0, 1, 0]}), "planes are not supported"),
])
def test_bad_collision_objects(edit: Any, message: str) -> None:
    doc = yaml.safe_load(ROS2_COLLISION_OBJECT)
    edit(doc)
    with pytest.raises(BadRequest, match=message):
        convert.object_parts(doc)
        convert.pose_values(doc["pose"])


def test_durations_in_every_shape() -> None:
    assert convert.duration_seconds({"sec": 2, "nanosec": 500_000_000}) == 2.5
    assert convert.duration_seconds({"secs": 1, "nsecs": 1}) == pytest.approx(1.000000001)
    assert convert.duration_seconds(0.75) == 0.75
    assert convert.duration_seconds(None) == 0.0
    for t in (0.0, 1.25, 3.999999999, 12345.000000001):
        d = convert.duration(t)
        assert 0 <= d["nanosec"] < 1_000_000_000
        assert convert.duration_seconds(d) == pytest.approx(t, abs=1e-9)
    with pytest.raises(BadRequest, match="not a duration"):
        convert.duration_seconds({"seconds": 1})
    with pytest.raises(BadRequest, match="is inf"):
        convert.duration_seconds(math.inf)


def _rotation(q: np.ndarray) -> np.ndarray:
    x, y, z, w = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def _matrix(X: Any) -> np.ndarray:
    M = np.eye(4)
    M[:3, :3] = _rotation(np.asarray(X[3:]))
    M[:3, 3] = X[:3]
    return M


def test_pose_algebra_matches_homogeneous_matrices() -> None:
    rng = np.random.default_rng(18)
    for _ in range(500):
        qa, qb = rng.normal(size=4), rng.normal(size=4)
        a = tuple(rng.uniform(-2, 2, 3)) + tuple(qa / np.linalg.norm(qa))
        b = tuple(rng.uniform(-2, 2, 3)) + tuple(qb / np.linalg.norm(qb))
        np.testing.assert_allclose(_matrix(convert.compose(a, b)), _matrix(a) @ _matrix(b), atol=1e-12)
        np.testing.assert_allclose(_matrix(convert.inverse(a)), np.linalg.inv(_matrix(a)), atol=1e-12)


def test_timing_keeps_every_joint_within_its_velocity_limit() -> None:
    """Sampled cubic interpolation with zero end velocities: the peak speed of the governing joint equals
    its (scaled) limit and no joint exceeds its own."""
    rng = np.random.default_rng(5)
    tau = np.linspace(0, 1, 2001)
    s_dot = 6 * tau - 6 * tau ** 2  # d/dtau of 3 tau^2 - 2 tau^3
    for _ in range(100):
        n, dof = rng.integers(2, 8), rng.integers(1, 8)
        path = rng.uniform(-3, 3, (n, dof))
        v = rng.uniform(0.5, 8.0, dof)
        scaling = rng.uniform(0.1, 1.0)
        t = convert.time_waypoints(path, v, scaling)
        assert t[0] == 0 and np.all(np.diff(t) > 0)
        for i in range(n - 1):
            dt = t[i + 1] - t[i]
            peak = np.abs(path[i + 1] - path[i])[:, None] * s_dot.max() / dt
            assert np.all(peak.max(axis=1) <= v * scaling * (1 + 1e-9))
            assert np.any(np.isclose(peak.max(axis=1), v * scaling, rtol=1e-9))
    with pytest.raises(BadRequest, match="max_velocity_scaling_factor"):
        convert.time_waypoints(np.zeros((2, 1)), [1.0], 0.0)


def test_joint_space_completion_and_refusals() -> None:
    space = JointSpace(["a", "b", "c"], other_joints=["mimic", "fixed"])
    q = space.robot_state({"joint_state": {"name": ["c", "mimic"], "position": [3.0, 9.0]}}, [{"a": 1.0}, {"a": 5, "b": 2.0}])
    np.testing.assert_array_equal(q, [1.0, 2.0, 3.0])
    # A joint the robot lacks is ignored with word to on_ignored (MoveIt ignores such entries); the
    # strict form (goals, trajectories) refuses it by name.
    heard = []
    lenient = JointSpace(["a", "b", "c"], on_ignored=lambda names, where: heard.append((names, where)))
    q = lenient.robot_state({"joint_state": {"name": ["wheel", "c", "b", "a"], "position": [7.0, 3.0, 2.0, 1.0]}}, [{}])
    np.testing.assert_array_equal(q, [1.0, 2.0, 3.0])
    assert heard == [(["wheel"], "robot_state")]
    with pytest.raises(BadRequest, match="no value for joint a"):
        lenient.robot_state({"joint_state": {"name": ["wheel", "b", "c"], "position": [7.0, 2.0, 3.0]}}, [{}])
    with pytest.raises(BadRequest, match="unknown joint 'z'"):
        space.complete(["z"], [0.0], [{"a": 1.0, "b": 2.0, "c": 3.0}], "goal", strict=True)
    with pytest.raises(BadRequest, match="unknown joint 'z'"):
        convert.trajectory_rows({"joint_names": ["z"], "points": [{"positions": [0.0], "time_from_start": 0.0}]},
                                space, [{"a": 1.0, "b": 2.0, "c": 3.0}])
    with pytest.raises(BadRequest, match="empty joint_state"):
        space.robot_state({"joint_state": {"name": [], "position": []}, "is_diff": False}, [{}])
    with pytest.raises(BadRequest, match="must be a list, not a string"):
        convert.joint_state_values({"name": "abc", "position": [1, 2, 3]})


def test_contacts_and_planner_names() -> None:
    from proximity_client.results import Pair
    c = convert.contact_information(Pair(False, "palm", "table"), ["tool"], "world")
    assert (c["contact_body_1"], c["body_type_1"], c["contact_body_2"], c["body_type_2"]) == ("palm", 0, "table", 1)
    c = convert.contact_information(Pair(True, "tool", "forearm"), ["tool"])
    assert (c["body_type_1"], c["body_type_2"]) == (2, 0)
    assert [convert.planner_name(n) for n in ("", "RRTConnect", "RRTConnectkConfigDefault", "LazyPRM", "rrt", "PRM")] == \
        ["rrt_connect", "rrt_connect", "rrt_connect", "lazy_prm", "rrt", "prm"]
    with pytest.raises(BadRequest, match="STOMP"):
        convert.planner_name("STOMP")


URDF = """<robot name="r">
  <link name="base"/><link name="l1"/><link name="l2"/><link name="l3"/><link name="f1"/><link name="f2"/>
  <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/><limit lower="-1" upper="1" velocity="2"/></joint>
  <joint name="j2" type="continuous"><parent link="l1"/><child link="l2"/><limit velocity="3"/></joint>
  <joint name="j3" type="prismatic"><parent link="l2"/><child link="l3"/><limit lower="0" upper="1" velocity="0"/></joint>
  <joint name="g1" type="prismatic"><parent link="l3"/><child link="f1"/><limit lower="0" upper="1" velocity="1"/></joint>
  <joint name="g2" type="prismatic"><parent link="l3"/><child link="f2"/><mimic joint="g1"/><limit lower="0" upper="1" velocity="1"/></joint>
</robot>"""
SRDF = """<robot name="r"><virtual_joint name="v" type="fixed" parent_frame="odom" child_link="base"/>
  <group name="arm"><chain base_link="base" tip_link="l3"/></group>
  <group name="hand"><link name="f1"/><link name="f2"/></group>
  <group name="all"><group name="arm"/><group name="hand"/></group>
  <group name="wrist"><joint name="j2"/></group></robot>"""


def test_urdf_and_srdf_reading() -> None:
    d = describe(URDF, SRDF)
    assert d.root_link == "base" and d.planning_frame == "odom"
    assert d.groups == {"arm": ["j1", "j2", "j3"], "hand": ["g1"], "all": ["j1", "j2", "j3", "g1"], "wrist": ["j2"]}
    assert [d.velocity_limit(j) for j in ("j1", "j2", "j3")] == [2.0, 3.0, None]
    assert d.group_joints("hand", ["j1", "j2", "j3", "g1"]) == ["g1"]
    assert describe(URDF).planning_frame == "base"
    with pytest.raises(RobotDescriptionError, match="unknown group_name 'legs'; known groups: all, arm, hand, wrist"):
        d.group_joints("legs", [])
    with pytest.raises(RobotDescriptionError, match="not valid XML"):
        describe("<robot")
    with pytest.raises(RobotDescriptionError, match="2 root links"):
        describe("<robot name='x'><link name='a'/><link name='b'/></robot>")
    with pytest.raises(RobotDescriptionError, match="contains itself"):
        describe(URDF, "<robot><group name='g'><group name='g'/></group></robot>")
    with pytest.raises(RobotDescriptionError, match="not below base_link"):
        describe(URDF, "<robot><group name='g'><chain base_link='l3' tip_link='l1'/></group></robot>")


def _random_message(cls: type, rng: np.random.Generator, depth: int = 0) -> Any:
    """A genpy message with random values in every field (arrays of 0-2 elements)."""
    import genpy
    from proximity_ros.ros1 import _element_class
    msg = cls()
    for name, t in zip(msg.__slots__, msg._slot_types):
        base, is_array = t.split("[", 1)[0], t.endswith("]")
        count = int(rng.integers(0, 3)) if t.endswith("[]") else (int(t[t.index("[") + 1:-1]) if is_array else 1)

        def one() -> Any:
            if base in ("time", "duration"):
                return (genpy.Time if base == "time" else genpy.Duration)(int(rng.integers(0, 1000)), int(rng.integers(0, 10**9)))
            if base == "string":
                return "".join(rng.choice(list("abcxyz_"), 5))
            if base == "bool":
                return bool(rng.integers(0, 2))
            if base.startswith("float"):
                return float(rng.normal())
            if base in ("byte", "int8", "uint8", "char", "int16", "uint16", "int32", "uint32", "int64", "uint64"):
                return int(rng.integers(0, 100))
            return _random_message(_element_class(base), rng, depth + 1)
        setattr(msg, name, [one() for _ in range(count)] if is_array else one())
    return msg


def test_genpy_round_trips_through_plain_data() -> None:
    import io
    from proximity_msgs import msg as m, srv as s
    from proximity_ros import ros1
    rng = np.random.default_rng(3)
    classes = [m.CollisionObject, m.AttachedCollisionObject, m.AllowedCollisionMatrix, m.Clearance, m.SceneStatus,
               m.RobotState, s.CheckTrajectoryRequest, s.CheckTrajectoryResponse, s.PlanRequest, s.PlanResponse,
               s.GetStatesValidityResponse]
    for cls in classes:
        for _ in range(20):
            a = _random_message(cls, rng)
            data = ros1.to_dict(a)
            b = ros1.fill(cls(), data)
            ba, bb = io.BytesIO(), io.BytesIO()
            a.serialize(ba)
            b.serialize(bb)
            assert ba.getvalue() == bb.getvalue(), cls.__name__


def _tree(rng: np.random.Generator, root: Path, names: List[str]) -> None:
    """A random workspace: packages (package.xml with a name unlike the folder, metapackages, rosbuild
    manifest.xml), nested folders, hidden folders, CATKIN_IGNORE, rospack_nosubdirs, symbolic links."""
    def folder(path: Path, depth: int) -> None:
        path.mkdir(parents=True, exist_ok=True)
        kind = rng.choice(["package", "meta", "manifest", "plain", "plain", "ignore", "nosub"]) if depth else "plain"
        name = str(rng.choice(names))
        if kind == "package":
            (path / "package.xml").write_text(f"<package format='2'><name> {name}\n</name></package>")
        elif kind == "meta":
            (path / "package.xml").write_text(f"<package><name>{name}</name><export><metapackage/></export></package>")
        elif kind == "manifest":
            (path / "manifest.xml").write_text("<package/>")
        elif kind == "ignore":
            (path / "CATKIN_IGNORE").write_text("")
        elif kind == "nosub":
            (path / "rospack_nosubdirs").write_text("")
        if depth < 3:
            for i in range(int(rng.integers(0, 4))):
                prefix = "." if rng.random() < 0.15 else ""
                child = path / f"{prefix}{rng.choice(names)}_{depth}{i}"
                folder(child, depth + 1)
    folder(root, 0)


def test_package_crawl_finds_what_rospack_finds(tmp_path: Path) -> None:
    import rospkg
    from proximity_client.bundle import _crawl
    rng = np.random.default_rng(11)
    names = ["alpha", "beta", "gamma", "delta", "eps"]
    found = 0
    for k in range(30):
        roots = []
        for r in range(int(rng.integers(1, 4))):
            root = tmp_path / f"case{k}" / f"ws{r}"
            _tree(rng, root, names)
            roots.append(str(root))
        # A symbolic link into another root (rospack follows links).
        if len(roots) > 1:
            os.symlink(roots[1], Path(roots[0]) / "linked")
        ours = {n: str(p) for n, p in _crawl(os.pathsep.join(roots)).items()}
        rp = rospkg.RosPack(ros_paths=roots)
        theirs = {n: rp.get_path(n) for n in rp.list()}
        assert ours == theirs, f"case {k}"
        found += len(theirs)
    assert found > 30  # the cases hold packages to find


# ---- sensor_msgs/PointCloud2 -----------------------------------------------------------------------

def _cloud2(points: np.ndarray, layout: List[Any], big: bool = False, height: int = 1, pad: int = 0,
            step_pad: int = 0) -> Dict[str, Any]:
    """A PointCloud2-shaped dict written with NumPy: ``layout`` is (name, datatype, numpy code) per field
    in order, x y z among them (other fields filled with 7), ``step_pad`` bytes after each point and
    ``pad`` bytes after each row."""
    order = ">" if big else "<"
    names = [f[0] for f in layout]
    dt = np.dtype({"names": names, "formats": [order + f[2] for f in layout],
                   "offsets": list(np.cumsum([0] + [np.dtype(f[2]).itemsize for f in layout[:-1]])),
                   "itemsize": sum(np.dtype(f[2]).itemsize for f in layout) + step_pad})
    n = len(points)
    width = n // height
    rec = np.zeros(n, dtype=dt)
    for name in names:
        rec[name] = points[:, "xyz".index(name)] if name in ("x", "y", "z") else 7
    rows = rec.tobytes()
    row_bytes = width * dt.itemsize
    data = b"".join(rows[r * row_bytes:(r + 1) * row_bytes] + b"\xab" * pad for r in range(height))
    return {"header": {"frame_id": "base_link"}, "height": height, "width": width, "is_bigendian": big,
            "point_step": dt.itemsize, "row_step": row_bytes + pad, "is_dense": False, "data": data,
            "fields": [{"name": f[0], "offset": int(dt.fields[f[0]][1]), "datatype": f[1], "count": 1}
                       for f in layout]}


def test_point_cloud2_fields_by_offset_datatype_and_byte_order() -> None:
    rng = np.random.default_rng(2)
    p = rng.uniform(-2, 2, size=(60, 3))
    f32 = p.astype(np.float32).astype(np.float64)
    layouts = [
        ([("x", 7, "f4"), ("y", 7, "f4"), ("z", 7, "f4")], f32),
        ([("rgb", 6, "u4"), ("z", 8, "f8"), ("intensity", 7, "f4"), ("x", 8, "f8"), ("ring", 4, "u2"), ("y", 8, "f8")], p),
        ([("y", 7, "f4"), ("x", 7, "f4"), ("t", 2, "u1"), ("z", 7, "f4")], f32),
    ]
    for layout, expect in layouts:
        for big in (False, True):
            for height, pad, step_pad in ((1, 0, 0), (3, 5, 4), (6, 0, 3)):
                msg = _cloud2(p, layout, big, height, pad, step_pad)
                got, nan = convert.point_cloud2_points(msg)
                assert nan == 0
                np.testing.assert_array_equal(got, expect)
                # The same from a list of byte values (ROS 2's shape) and with the other byte order refused
                # by its values (a wrong reading gives other numbers).
                np.testing.assert_array_equal(convert.point_cloud2_points({**msg, "data": list(msg["data"])})[0],
                                              expect)
                with np.errstate(all="ignore"):
                    try:
                        flipped = convert.point_cloud2_points({**msg, "is_bigendian": not big})[0]
                    except BadRequest:  # swapped bytes read as infinities: refused, also not the points
                        flipped = None
                assert flipped is None or flipped.shape != expect.shape or not np.array_equal(flipped, expect)
    ints = rng.integers(-100, 100, size=(10, 3))
    got, _ = convert.point_cloud2_points(_cloud2(ints.astype(float), [("x", 3, "i2"), ("y", 5, "i4"), ("z", 1, "i1")],
                                                 big=True))
    np.testing.assert_array_equal(got, ints)


def test_point_cloud2_nan_points_dropped_and_bad_messages_named() -> None:
    p = np.arange(30, dtype=float).reshape(10, 3)
    p[[1, 7], [2, 0]] = np.nan
    got, nan = convert.point_cloud2_points(_cloud2(p, [("x", 7, "f4"), ("y", 7, "f4"), ("z", 7, "f4")], height=2))
    assert nan == 2
    np.testing.assert_array_equal(got, np.delete(p, [1, 7], axis=0))
    good = _cloud2(np.zeros((4, 3)), [("x", 7, "f4"), ("y", 7, "f4"), ("z", 7, "f4")])
    bad = {
        "data has 47 bytes; row_step x height = 48 x 1 = 48": {"data": good["data"][:-1]},
        "fields has no z (fields: x, y)": {"fields": good["fields"][:2]},
        "fields[2] (z).datatype 9 is not a PointField type": {"fields": good["fields"][:2] + [
            {**good["fields"][2], "datatype": 9}]},
        "fields[2] (z): offset 10 + 4 bytes is past point_step 12": {"fields": good["fields"][:2] + [
            {**good["fields"][2], "offset": 10}]},
        "row_step 40 is less than width x point_step = 4 x 12": {"row_step": 40, "data": good["data"][:40]},
        "point_step must be a non-negative integer, got -1": {"point_step": -1},
        "point_step is 0": {"point_step": 0},
        "1 point(s) have infinite coordinates": {"data": np.array([0, 0, 0, np.inf, 0, 0, 0, 0, 0, 0, 0, 0],
                                                                  dtype="<f4").tobytes()},
    }
    for words, edit in bad.items():
        with pytest.raises(BadRequest, match=re.escape(f"point_cloud.{words}") if "infinite" not in words
                           else re.escape(words)):
            convert.point_cloud2_points({**good, **edit})


def test_pose_goal_from_constraints() -> None:
    def pc(kind: int, dims: list, q: list = (0, 0, 0, 1), link: str = "tool", frame: str = "") -> dict:
        pose = {"position": {"x": 0.4, "y": -0.1, "z": 0.3}, "orientation": dict(zip("xyzw", q))}
        return {"header": {"frame_id": frame}, "link_name": link, "target_point_offset": {"x": 0.0, "y": 0.0, "z": 0.1},
                "constraint_region": {"primitives": [{"type": kind, "dimensions": dims}], "primitive_poses": [pose]}}

    def oc(q: list, link: str = "tool") -> dict:
        return {"link_name": link, "orientation": dict(zip("xyzw", q)), "absolute_x_axis_tolerance": 0.1,
                "absolute_y_axis_tolerance": 0.2, "absolute_z_axis_tolerance": 0.3}

    turned = [0.0, 0.0, math.sin(0.3), math.cos(0.3)]
    goal, frames = convert.pose_goal([pc(3, [0.2, 0.05], turned, frame="world")], [oc(turned)])
    assert frames == ["world", ""]
    assert goal.link == "tool" and goal.region == 2 and not goal.position_only
    assert (goal.region_size.x, goal.region_size.z) == pytest.approx((0.05, 0.1))  # radius, half the height
    assert (goal.orientation_tolerance.x, goal.orientation_tolerance.z) == pytest.approx((0.1, 0.3))
    assert goal.point_offset.z == pytest.approx(0.1) and goal.pose.orientation.z == pytest.approx(math.sin(0.3))
    box, _ = convert.pose_goal([pc(1, [0.2, 0.4, 0.6])], [])
    assert box.position_only and (box.region_size.x, box.region_size.y, box.region_size.z) == pytest.approx((0.1, 0.2, 0.3))
    for position, orientation, message in [
        ([], [oc(turned)], "position_constraints is empty"),
        ([pc(4, [0.1, 0.1])], [], "is not BOX"),
        ([pc(2, [-1.0])], [], "positive"),
        ([pc(1, [0.1, 0.1, 0.1])], [oc(turned)], "turned otherwise"),
        ([pc(2, [0.1])], [oc(turned, link="other")], "one link's pose"),
        ([pc(2, [0.1]), pc(2, [0.1])], [], "at most one"),
    ]:
        with pytest.raises(convert.BadRequest, match=message):
            convert.pose_goal(position, orientation)
