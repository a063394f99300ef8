"""Between ROS message shapes and proximityd requests, without ROS: the conversion layer that the ROS 1
node and a ROS 2 (rclpy) node share.

Messages come in and go out as plain data shaped like ``ros2 topic echo --yaml`` prints them: dicts
of fields, lists for arrays, ``{"sec": int, "nanosec": int}`` for times and durations. A ROS 1 message
converts to that shape with :func:`proximity_ros.ros1.to_dict`; a ROS 2 one with
``rosidl_runtime_py.message_to_ordereddict``. For convenience every reader also accepts objects with
the same attributes, ROS 1's ``{"secs", "nsecs"}`` durations and plain seconds.

Every reader checks what it reads and raises :class:`BadRequest` with the field's path in the message
(``robot_state.joint_state.position[2] is nan``) rather than letting a wrong value through.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

import numpy as np

from proximity_client import geometry
from proximity_client._stubs import pb
from proximity_client.results import Pair

#: ContactInformation body types (moveit_msgs values).
ROBOT_LINK, WORLD_OBJECT, ROBOT_ATTACHED = 0, 1, 2
#: CollisionObject operations (moveit_msgs values).
ADD, REMOVE, APPEND, MOVE = 0, 1, 2, 3
#: SolidPrimitive types (shape_msgs values).
BOX, SPHERE, CYLINDER, CONE = 1, 2, 3, 4
#: MoveItErrorCodes values used by the bridge.
SUCCESS, PLANNING_FAILED, TIMED_OUT = 1, -1, -6
START_STATE_IN_COLLISION, GOAL_IN_COLLISION = -10, -12

#: Plan outcomes (proximity_client's names) -> MoveItErrorCodes.
PLAN_ERROR_CODES = {
    "solved": SUCCESS,
    "timeout": TIMED_OUT,
    "iteration_limit": PLANNING_FAILED,
    "cancelled": -7,  # PREEMPTED
    "invalid_start": START_STATE_IN_COLLISION,
    "invalid_goal": GOAL_IN_COLLISION,
}

#: planner_id -> proximity planner (OMPL's names; case, "_" and "-" ignored; "" is RRT-Connect).
PLANNER_IDS = {"": "rrt_connect", "rrtconnect": "rrt_connect", "rrt": "rrt", "prm": "prm", "lazyprm": "lazy_prm"}


class BadRequest(ValueError):
    """A message the bridge refuses; the text names the field and what is wrong with it."""


# ---- reading fields --------------------------------------------------------------------------------

def get(msg: Any, name: str, default: Any = None) -> Any:
    """Field ``name`` of a dict-shaped or attribute-shaped message (``default`` when absent)."""
    if isinstance(msg, Mapping):
        return msg.get(name, default)
    return getattr(msg, name, default)


def _seq(value: Any, where: str) -> list:
    if value is None:
        return []
    if isinstance(value, (str, bytes)):
        raise BadRequest(f"{where} must be a list, not a string")
    try:
        return list(value)
    except TypeError:
        raise BadRequest(f"{where} must be a list") from None


def _finite(value: Any, where: str) -> float:
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise BadRequest(f"{where} is not a number ({value!r})") from None
    if not math.isfinite(x):
        raise BadRequest(f"{where} is {x} (values must be finite)")
    return x


def duration_seconds(d: Any, where: str = "duration") -> float:
    """Seconds of a duration: ``{"sec", "nanosec"}`` (ROS 2), ``{"secs", "nsecs"}`` (ROS 1 YAML), an
    object with ``to_sec()`` or those attributes, or a number."""
    if d is None:
        return 0.0
    if isinstance(d, (int, float)) and not isinstance(d, bool):
        return _finite(d, where)
    if hasattr(d, "to_sec"):
        return _finite(d.to_sec(), where)
    for s, ns in (("sec", "nanosec"), ("secs", "nsecs")):
        sec, nsec = get(d, s), get(d, ns)
        if sec is not None or nsec is not None:
            return _finite(sec or 0, f"{where}.{s}") + _finite(nsec or 0, f"{where}.{ns}") * 1e-9
    raise BadRequest(f"{where} is not a duration ({d!r})")


def duration(seconds: float) -> Dict[str, int]:
    """The ROS 2 shape of a duration: whole seconds and nanoseconds in [0, 1e9)."""
    total = int(round(float(seconds) * 1e9))
    sec, nanosec = divmod(total, 1_000_000_000)
    return {"sec": int(sec), "nanosec": int(nanosec)}


# ---- joint states and configurations ---------------------------------------------------------------

def joint_state_values(js: Any, where: str = "joint_state") -> Tuple[List[str], List[float]]:
    """The names and positions of a sensor_msgs/JointState, checked: names are unique non-empty
    strings, one finite position per name."""
    names = _seq(get(js, "name"), f"{where}.name")
    positions = _seq(get(js, "position"), f"{where}.position")
    if len(names) != len(positions):
        raise BadRequest(f"{where}: {len(names)} names but {len(positions)} positions")
    seen: Set[str] = set()
    for i, n in enumerate(names):
        if not isinstance(n, str) or not n:
            raise BadRequest(f"{where}.name[{i}] must be a non-empty string")
        if n in seen:
            raise BadRequest(f"{where}.name[{i}]: joint {n!r} appears more than once")
        seen.add(n)
    return names, [_finite(p, f"{where}.position[{i}]") for i, p in enumerate(positions)]


class JointSpace:
    """The scene's joints (proximityd's order) and the other joints a message may name harmlessly
    (fixed and mimic joints of the URDF, which the scene derives or ignores).

    A robot state's joint_state may also name joints the robot lacks (a mobile base's wheels that the
    URDF fixed, a gripper the scene leaves out): they are ignored, as MoveIt ignores them, and
    ``on_ignored(names, where)`` hears of them. Trajectories stay strict: a trajectory's joint_names
    must all be the robot's."""

    def __init__(self, joint_names: Sequence[str], other_joints: Iterable[str] = (),
                 on_ignored: Optional[Callable[[List[str], str], None]] = None) -> None:
        self.names = list(joint_names)
        self.index = {n: i for i, n in enumerate(self.names)}
        self.other = set(other_joints) - set(self.names)
        self.on_ignored = on_ignored

    @property
    def dof(self) -> int:
        return len(self.names)

    def _unknown(self, names: Iterable[str], where: str) -> None:
        bad = [n for n in names if n not in self.index and n not in self.other]
        if bad:
            raise BadRequest(f"{where}: unknown joint{'s' if len(bad) > 1 else ''} {', '.join(map(repr, bad))}; "
                             f"the scene's joints are {', '.join(self.names)}")

    def ignore_unknown(self, names: Iterable[str], where: str) -> None:
        """Tells ``on_ignored`` of the joints in `names` the robot lacks (a robot state's entries)."""
        bad = [n for n in names if n not in self.index and n not in self.other]
        if bad and self.on_ignored is not None:
            self.on_ignored(bad, where)

    def complete(self, names: Sequence[str], positions: Sequence[float], fallbacks: Sequence[Mapping[str, float]],
                 where: str, strict: bool = False) -> np.ndarray:
        """A full configuration in scene order: the named joints' values, the others from the first
        fallback mapping that has them; BadRequest naming the joints nothing gives. Names the robot
        lacks are ignored (see the class), or refused with `strict`."""
        if strict:
            self._unknown(names, where)
        else:
            self.ignore_unknown(names, where)
        q = np.full(self.dof, np.nan)
        for n, p in zip(names, positions):
            if n in self.index:
                q[self.index[n]] = p
        missing = []
        for i, n in enumerate(self.names):
            if not math.isnan(q[i]):
                continue
            for fb in fallbacks:
                if n in fb:
                    q[i] = fb[n]
                    break
            else:
                missing.append(n)
        if missing:
            raise BadRequest(f"{where}: no value for joint{'s' if len(missing) > 1 else ''} {', '.join(missing)} "
                             "(not in the message, and no /joint_states received for it)")
        return q

    def robot_state(self, rs: Any, fallbacks: Sequence[Mapping[str, float]], where: str = "robot_state") -> np.ndarray:
        """A moveit_msgs/RobotState-shaped message as a full configuration (see :meth:`complete`)."""
        js = get(rs, "joint_state") or {}
        names, positions = joint_state_values(js, f"{where}.joint_state")
        if not names and not get(rs, "is_diff", False) and not any(fallbacks):
            raise BadRequest(f"{where}: empty joint_state (and is_diff false)")
        return self.complete(names, positions, fallbacks, where)

    def as_mapping(self, q: Sequence[float]) -> Dict[str, float]:
        return {n: float(v) for n, v in zip(self.names, q)}


def trajectory_rows(traj: Any, space: JointSpace, fallbacks: Sequence[Mapping[str, float]],
                    where: str = "trajectory") -> Tuple[np.ndarray, np.ndarray]:
    """A trajectory_msgs/JointTrajectory as waypoints (n, dof) in scene order and their
    time_from_start (n,) in seconds, which must not decrease. Joints it does not name come from the
    fallbacks."""
    names = _seq(get(traj, "joint_names"), f"{where}.joint_names")
    for i, n in enumerate(names):
        if not isinstance(n, str) or not n:
            raise BadRequest(f"{where}.joint_names[{i}] must be a non-empty string")
    if len(set(names)) != len(names):
        raise BadRequest(f"{where}.joint_names names a joint more than once")
    points = _seq(get(traj, "points"), f"{where}.points")
    if not points:
        raise BadRequest(f"{where}.points is empty")
    rows = np.empty((len(points), space.dof))
    times = np.empty(len(points))
    for i, point in enumerate(points):
        at = f"{where}.points[{i}]"
        positions = _seq(get(point, "positions"), f"{at}.positions")
        if len(positions) != len(names):
            raise BadRequest(f"{at}.positions has {len(positions)} values for {len(names)} joint_names")
        values = [_finite(p, f"{at}.positions[{k}]") for k, p in enumerate(positions)]
        rows[i] = space.complete(names, values, fallbacks, at, strict=True)
        times[i] = duration_seconds(get(point, "time_from_start"), f"{at}.time_from_start")
        if i and times[i] < times[i - 1]:
            raise BadRequest(f"{at}.time_from_start ({times[i]:g} s) is before the previous point's "
                             f"({times[i - 1]:g} s)")
    return rows, times


# ---- poses and shapes ------------------------------------------------------------------------------

def pose_values(p: Any, where: str = "pose") -> Tuple[float, ...]:
    """(x, y, z, qx, qy, qz, qw) of a geometry_msgs/Pose; an all-zero orientation is the identity
    (as MoveIt reads an unset quaternion)."""
    if p is None:
        return (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0)
    pos, ori = get(p, "position") or {}, get(p, "orientation") or {}
    xyz = [_finite(get(pos, k, 0.0), f"{where}.position.{k}") for k in "xyz"]
    q = [_finite(get(ori, k, 0.0), f"{where}.orientation.{k}") for k in ("x", "y", "z", "w")]
    if not any(q):
        q = [0.0, 0.0, 0.0, 1.0]
    norm = math.sqrt(sum(v * v for v in q))
    if abs(norm - 1.0) > 1e-3:
        raise BadRequest(f"{where}.orientation is not a unit quaternion (norm {norm:g})")
    return tuple(xyz + [v / norm for v in q])


def _qmul(a: Sequence[float], b: Sequence[float]) -> Tuple[float, float, float, float]:
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return (aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
            aw * bw - ax * bx - ay * by - az * bz)


def _qrot(q: Sequence[float], v: Sequence[float]) -> Tuple[float, float, float]:
    x, y, z, _ = _qmul(_qmul(q, (v[0], v[1], v[2], 0.0)), (-q[0], -q[1], -q[2], q[3]))
    return (x, y, z)


def compose(a: Sequence[float], b: Sequence[float]) -> Tuple[float, ...]:
    """X_AC = X_AB * X_BC for poses (x, y, z, qx, qy, qz, qw)."""
    r = _qrot(a[3:], b[:3])
    return (a[0] + r[0], a[1] + r[1], a[2] + r[2]) + _qmul(a[3:], b[3:])


def inverse(a: Sequence[float]) -> Tuple[float, ...]:
    """X_BA of X_AB."""
    qi = (-a[3], -a[4], -a[5], a[6])
    r = _qrot(qi, a[:3])
    return (-r[0], -r[1], -r[2]) + qi


def _primitive(prim: Any, where: str) -> "pb.ObjectPart":
    kind = int(get(prim, "type", 0) or 0)
    dims = [_finite(d, f"{where}.dimensions[{i}]") for i, d in enumerate(_seq(get(prim, "dimensions"), f"{where}.dimensions"))]
    need = {BOX: 3, SPHERE: 1, CYLINDER: 2, CONE: 2}.get(kind)
    if need is None:
        raise BadRequest(f"{where}.type {kind} is not BOX (1), SPHERE (2), CYLINDER (3) or CONE (4)")
    if len(dims) < need:
        raise BadRequest(f"{where}.dimensions has {len(dims)} values; type {kind} needs {need}")
    if any(d <= 0 for d in dims[:need]):
        raise BadRequest(f"{where}.dimensions must be positive, got {dims[:need]}")
    if kind == BOX:
        return geometry.box(dims[:3])
    if kind == SPHERE:
        return geometry.sphere(dims[0])
    if kind == CYLINDER:  # CYLINDER_HEIGHT = 0, CYLINDER_RADIUS = 1
        return geometry.cylinder(radius=dims[1], length=dims[0])
    return geometry.cone(radius=dims[1], length=dims[0])  # CONE_HEIGHT = 0, CONE_RADIUS = 1


def pose_goal(position: Sequence[Any], orientation: Sequence[Any]) -> Tuple["pb.PoseGoal", List[str]]:
    """A proximity pose goal from MoveIt-shaped goal constraints (at most one PositionConstraint and one
    OrientationConstraint, on the same link), and the header frames they name (for the caller to check).
    The position region is one SPHERE, BOX or CYLINDER primitive; with an orientation constraint a box or
    cylinder must be turned as the orientation is (proximity's regions take the target's axes)."""
    position, orientation = _seq(position, "position_constraints"), _seq(orientation, "orientation_constraints")
    if len(position) > 1 or len(orientation) > 1:
        raise BadRequest("give at most one position and one orientation constraint (one link's pose)")
    if not position:
        raise BadRequest("position_constraints is empty: a pose goal needs the link's position "
                         "(an orientation alone is not supported)")
    pc = position[0]
    link = str(get(pc, "link_name", "") or "")
    if not link:
        raise BadRequest("position_constraints[0].link_name is empty")
    frames = [str(get(get(pc, "header") or {}, "frame_id", "") or "")]
    offset = get(pc, "target_point_offset") or {}
    point = [_finite(get(offset, k, 0.0), f"position_constraints[0].target_point_offset.{k}") for k in "xyz"]
    region = get(pc, "constraint_region") or {}
    prims = _seq(get(region, "primitives"), "position_constraints[0].constraint_region.primitives")
    poses = _seq(get(region, "primitive_poses"), "position_constraints[0].constraint_region.primitive_poses")
    if _seq(get(region, "meshes"), "position_constraints[0].constraint_region.meshes"):
        raise BadRequest("position_constraints[0].constraint_region.meshes: mesh regions are not supported; "
                         "give one SPHERE, BOX or CYLINDER primitive")
    if len(prims) != 1 or len(poses) != 1:
        raise BadRequest("position_constraints[0].constraint_region needs exactly one primitive and its pose, "
                         f"got {len(prims)} and {len(poses)}")
    where = "position_constraints[0].constraint_region.primitives[0]"
    kind = int(get(prims[0], "type", 0) or 0)
    dims = [_finite(d, f"{where}.dimensions[{i}]") for i, d in enumerate(_seq(get(prims[0], "dimensions"), f"{where}.dimensions"))]
    need = {BOX: 3, SPHERE: 1, CYLINDER: 2}.get(kind)
    if need is None:
        raise BadRequest(f"{where}.type {kind} is not BOX (1), SPHERE (2) or CYLINDER (3)")
    if len(dims) < need or any(d <= 0 for d in dims[:need]):
        raise BadRequest(f"{where}.dimensions must hold {need} positive values, got {dims}")
    at = pose_values(poses[0], "position_constraints[0].constraint_region.primitive_poses[0]")
    if kind == BOX:
        shape, size = "box", [d / 2 for d in dims[:3]]
    elif kind == SPHERE:
        shape, size = "sphere", dims[0]
    else:  # CYLINDER_HEIGHT = 0, CYLINDER_RADIUS = 1
        shape, size = "cylinder", [dims[1], dims[0] / 2]
    quat, tolerance, position_only = list(at[3:]), None, True
    if orientation:
        oc = orientation[0]
        if str(get(oc, "link_name", "") or "") != link:
            raise BadRequest(f"orientation_constraints[0].link_name {get(oc, 'link_name', '')!r} differs from the "
                             f"position constraint's {link!r}: one link's pose is supported")
        frames.append(str(get(get(oc, "header") or {}, "frame_id", "") or ""))
        q = pose_values({"orientation": get(oc, "orientation") or {}}, "orientation_constraints[0]")[3:]
        if shape != "sphere" and abs(sum(a * b for a, b in zip(q, quat))) < 1 - 1e-9:
            raise BadRequest("a BOX or CYLINDER position region turned otherwise than the orientation constraint "
                             "is not supported (the region's axes are the target orientation's); use a SPHERE or "
                             "turn the region as the orientation")
        quat = list(q)
        tolerance = [_finite(get(oc, f"absolute_{a}_axis_tolerance", 0.0), f"orientation_constraints[0].absolute_{a}_axis_tolerance")
                     for a in "xyz"]
        if any(t <= 0 for t in tolerance):
            raise BadRequest(f"orientation_constraints[0] tolerances must be > 0, got {tolerance}")
        position_only = False
    goal = geometry.pose_goal(link, list(at[:3]) + quat, point_offset=point, region=shape, region_size=size,
                              orientation_tolerance=tolerance, position_only=position_only)
    return goal, frames


def _mesh(mesh: Any, where: str) -> "pb.ObjectPart":
    vertices = _seq(get(mesh, "vertices"), f"{where}.vertices")
    triangles = _seq(get(mesh, "triangles"), f"{where}.triangles")
    if not vertices or not triangles:
        raise BadRequest(f"{where} has no vertices or no triangles")
    v = [[_finite(get(p, k, 0.0), f"{where}.vertices[{i}].{k}") for k in "xyz"] for i, p in enumerate(vertices)]
    t = []
    for i, tri in enumerate(triangles):
        idx = _seq(get(tri, "vertex_indices"), f"{where}.triangles[{i}].vertex_indices")
        if len(idx) != 3 or any(not isinstance(k, (int, np.integer)) or not 0 <= int(k) < len(v) for k in idx):
            raise BadRequest(f"{where}.triangles[{i}].vertex_indices must be 3 indices below {len(v)}")
        t.append([int(k) for k in idx])
    return geometry.mesh(v, t)


def object_parts(obj: Any, where: str = "collision_object") -> List["pb.ObjectPart"]:
    """The shapes of a moveit_msgs/CollisionObject-shaped message, posed in the object frame
    (primitive_poses and mesh_poses, one per shape)."""
    if _seq(get(obj, "planes"), f"{where}.planes"):
        raise BadRequest(f"{where}.planes: infinite planes are not supported by proximityd (use a large box)")
    parts = []
    for shapes, poses, make, label in (("primitives", "primitive_poses", _primitive, "primitives"),
                                       ("meshes", "mesh_poses", _mesh, "meshes")):
        items = _seq(get(obj, shapes), f"{where}.{shapes}")
        at = _seq(get(obj, poses), f"{where}.{poses}")
        if len(items) != len(at):
            raise BadRequest(f"{where}: {len(items)} {label} but {len(at)} {poses}")
        for i, (shape, p) in enumerate(zip(items, at)):
            part = make(shape, f"{where}.{shapes}[{i}]")
            part.pose.CopyFrom(geometry.as_pose(pose_values(p, f"{where}.{poses}[{i}]")))
            parts.append(part)
    return parts


def part_in_frame(part: "pb.ObjectPart", X_NO: Sequence[float]) -> "pb.ObjectPart":
    """``part`` (posed in frame O) posed in frame N instead, given X_NO."""
    p = part.pose
    X_OP = (p.position.x, p.position.y, p.position.z, p.orientation.x, p.orientation.y, p.orientation.z,
            p.orientation.w) if p.HasField("orientation") and any(
        (p.orientation.x, p.orientation.y, p.orientation.z, p.orientation.w)) else (
        p.position.x, p.position.y, p.position.z, 0.0, 0.0, 0.0, 1.0)
    out = pb.ObjectPart()
    out.CopyFrom(part)
    out.pose.CopyFrom(geometry.as_pose(compose(X_NO, X_OP)))
    return out


def wire_pose_values(p: "pb.Pose") -> Tuple[float, ...]:
    """(x, y, z, qx, qy, qz, qw) of a wire Pose (all-zero orientation: identity)."""
    q = (p.orientation.x, p.orientation.y, p.orientation.z, p.orientation.w)
    return (p.position.x, p.position.y, p.position.z) + (q if any(q) else (0.0, 0.0, 0.0, 1.0))


# ---- answers ---------------------------------------------------------------------------------------

def _point(v: Sequence[float]) -> Dict[str, float]:
    return {"x": float(v[0]), "y": float(v[1]), "z": float(v[2])}


def contact_information(pair: Optional[Pair], attached_ids: Iterable[str] = (), frame_id: str = "",
                        stamp: Optional[Mapping[str, int]] = None, geometry: Any = None) -> Dict[str, Any]:
    """A moveit_msgs/ContactInformation-shaped dict naming the pair; with ``geometry`` (a proximity_client
    PairContact: ComputeContacts' answer for the pair) also its contact point (the deepest one), the normal
    from body 2 to body 1 and the penetration depth, and ``has_geometry`` set."""
    attached = set(attached_ids)
    robot = pair.robot if pair else ""
    other = pair.other if pair else ""
    type_1 = ROBOT_ATTACHED if robot in attached else ROBOT_LINK
    if pair is not None and pair.self_collision:
        type_2 = ROBOT_ATTACHED if other in attached else ROBOT_LINK
    else:
        type_2 = WORLD_OBJECT
    position, normal, depth = (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), 0.0
    if geometry is not None:
        points = np.asarray(geometry.points, dtype=float).reshape(-1, 3)
        deepest = points[0] if len(points) else 0.5 * (np.asarray(geometry.point_robot) + np.asarray(geometry.point_other))
        position = tuple(float(v) for v in deepest)
        # proximityd's normal points from the robot side (body 1) to the other side (body 2).
        normal = tuple(-float(v) for v in geometry.normal)
        depth = float(geometry.depth)
    return {"header": {"stamp": dict(stamp or {"sec": 0, "nanosec": 0}), "frame_id": frame_id},
            "position": _point(position), "normal": _point(normal), "depth": depth,
            "has_geometry": geometry is not None,
            "contact_body_1": robot, "body_type_1": type_1, "contact_body_2": other, "body_type_2": type_2}


def body_types(pair: Optional[Pair], attached_ids: Iterable[str]) -> Tuple[str, int, str, int]:
    c = contact_information(pair, attached_ids)
    return c["contact_body_1"], c["body_type_1"], c["contact_body_2"], c["body_type_2"]


def point(v: Sequence[float]) -> Dict[str, float]:
    """A geometry_msgs/Point (or Vector3)-shaped dict of three values."""
    return _point(v)


def clearance_pair(p: Any, attached_ids: Iterable[str] = ()) -> Dict[str, Any]:
    """A proximity_msgs/ClearancePair-shaped dict of a proximity_client TrackedPair (a track query's)."""
    b1, t1, b2, t2 = body_types(p.pair, attached_ids)
    return {"body_1": b1, "body_type_1": t1, "link_1": p.pair.link, "body_2": b2, "body_type_2": t2,
            "link_2": p.pair.other_link if p.pair.self_collision else "",
            "lower": float(p.lower), "upper": float(p.upper), "signed_distance": float(p.signed_distance),
            "point_1": _point(p.point_robot), "point_2": _point(p.point_other), "normal": _point(p.normal),
            "gradient": [float(g) for g in p.gradient], "same_features": bool(p.same_features),
            "method": str(p.method)}


def planner_name(planner_id: str) -> str:
    """proximity's planner for a MoveIt/OMPL planner_id ("RRTConnect", "RRTConnectkConfigDefault",
    "rrt_connect", ""); BadRequest for others."""
    key = str(planner_id or "").lower().replace("_", "").replace("-", "")
    if key.endswith("kconfigdefault"):
        key = key[: -len("kconfigdefault")]
    if key in PLANNER_IDS:
        return PLANNER_IDS[key]
    raise BadRequest(f"planner_id {planner_id!r} is not one of RRTConnect, RRT, PRM, LazyPRM")


def time_waypoints(path: np.ndarray, velocity_limits: Sequence[float], scaling: float = 1.0) -> np.ndarray:
    """time_from_start (s) of each waypoint when the robot stops at every waypoint and moves each
    straight segment in the time its slowest joint needs: with zero velocities at both ends, cubic
    interpolation (what trajectory controllers do given positions and velocities) peaks at 1.5 times
    the mean velocity, so segment i takes max_j 1.5 |dq_j| / (scaling * v_j)."""
    if not 0.0 < scaling <= 1.0:
        raise BadRequest(f"max_velocity_scaling_factor must be in (0, 1], got {scaling}")
    v = np.asarray(velocity_limits, dtype=np.float64) * scaling
    steps = np.abs(np.diff(np.asarray(path, dtype=np.float64), axis=0))
    seg = (1.5 * steps / v).max(axis=1) if steps.size else np.zeros(0)
    return np.concatenate([[0.0], np.cumsum(seg)])


def moveit_joint_limits(limits: Mapping[str, Any]) -> Dict[str, Dict[str, float]]:
    """MoveIt's joint limits (``{joint: {has_velocity_limits, max_velocity, has_acceleration_limits,
    max_acceleration}}``, or the same under a ``joint_limits`` key) as ``{joint: {"max_velocity": v,
    "max_acceleration": a}}``, values switched off or absent left out. Raises BadRequest naming an entry
    that is not a mapping or a value that is not finite and >= 0."""
    entries = limits.get("joint_limits", limits) if isinstance(limits, Mapping) else None
    if not isinstance(entries, Mapping):
        raise BadRequest("joint limits must be a mapping {joint: {max_velocity, max_acceleration}}")
    out: Dict[str, Dict[str, float]] = {}
    for name, e in entries.items():
        if not isinstance(e, Mapping):
            raise BadRequest(f"joint_limits.{name} is not a mapping")
        limit = {}
        for kind in ("velocity", "acceleration"):
            if f"max_{kind}" in e and e.get(f"has_{kind}_limits", True):
                value = _finite(e[f"max_{kind}"], f"joint_limits.{name}.max_{kind}")
                if value < 0:
                    raise BadRequest(f"joint_limits.{name}.max_{kind} must be >= 0, got {value}")
                limit[f"max_{kind}"] = value
        out[str(name)] = limit
    return out


def transform_points(X: Sequence[float], points: np.ndarray) -> np.ndarray:
    """Points (n, 3) of frame F in frame W, given X_WF as (x, y, z, qx, qy, qz, qw); float32 kept."""
    x, y, z, w = X[3:]
    r = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                  [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                  [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])
    out = np.asarray(points, dtype=np.float64) @ r.T + np.array(X[:3], dtype=np.float64)
    return out.astype(np.asarray(points).dtype, copy=False)


def joint_trajectory(joint_names: Sequence[str], path: np.ndarray, times: Sequence[float], frame_id: str = "",
                     stamp: Optional[Mapping[str, int]] = None, velocities: Optional[np.ndarray] = None,
                     accelerations: Optional[np.ndarray] = None) -> Dict[str, Any]:
    """A trajectory_msgs/JointTrajectory-shaped dict: zero velocities at every point and no accelerations,
    unless ``velocities`` and ``accelerations`` (rows as ``path``'s) are given."""
    n = len(joint_names)
    return {"header": {"stamp": dict(stamp or {"sec": 0, "nanosec": 0}), "frame_id": frame_id},
            "joint_names": list(joint_names),
            "points": [{"positions": [float(x) for x in row],
                        "velocities": [0.0] * n if velocities is None else [float(x) for x in velocities[k]],
                        "accelerations": [] if accelerations is None else [float(x) for x in accelerations[k]],
                        "effort": [], "time_from_start": duration(t)}
                       for k, (row, t) in enumerate(zip(path, times))]}


#: sensor_msgs/PointField datatypes -> NumPy type codes (byte order added by the message's is_bigendian).
POINT_FIELD_TYPES = {1: "i1", 2: "u1", 3: "i2", 4: "u2", 5: "i4", 6: "u4", 7: "f4", 8: "f8"}


def point_cloud2_points(msg: Any, where: str = "point_cloud") -> Tuple[np.ndarray, int]:
    """The x, y, z of a sensor_msgs/PointCloud2-shaped message as an (n, 3) float64 array, and how many
    points were dropped because a coordinate is NaN (a dense cloud's missing returns). Each field is read
    at its ``offset`` with its ``datatype``, points ``point_step`` apart in rows ``row_step`` apart, in
    the byte order ``is_bigendian`` gives. ``data`` may be bytes or a list of byte values."""
    height = _count(get(msg, "height", 0), f"{where}.height")
    width = _count(get(msg, "width", 0), f"{where}.width")
    point_step = _count(get(msg, "point_step", 0), f"{where}.point_step")
    row_step = _count(get(msg, "row_step", 0), f"{where}.row_step")
    order = ">" if bool(get(msg, "is_bigendian", False)) else "<"
    fields = {}
    for i, f in enumerate(_seq(get(msg, "fields", []), f"{where}.fields")):
        fields.setdefault(str(get(f, "name", "")), (i, f))
    missing = [c for c in "xyz" if c not in fields]
    if missing:
        raise BadRequest(f"{where}.fields has no {', '.join(missing)} (fields: "
                         f"{', '.join(fields) or 'none'})")
    n = height * width
    if n and point_step == 0:
        raise BadRequest(f"{where}.point_step is 0")
    if height > 1 or n:
        if row_step < width * point_step:
            raise BadRequest(f"{where}.row_step {row_step} is less than width x point_step = {width} x {point_step}")
    names, formats, offsets = [], [], []
    for c in "xyz":
        i, f = fields[c]
        fw = f"{where}.fields[{i}] ({c})"
        code = POINT_FIELD_TYPES.get(get(f, "datatype", 0))
        if code is None:
            raise BadRequest(f"{fw}.datatype {get(f, 'datatype', 0)!r} is not a PointField type (1 to 8)")
        offset = _count(get(f, "offset", 0), f"{fw}.offset")
        if int(get(f, "count", 1) or 0) < 1:
            raise BadRequest(f"{fw}.count is {get(f, 'count', 1)!r}")
        if offset + int(code[1]) > point_step:
            raise BadRequest(f"{fw}: offset {offset} + {code[1]} bytes is past point_step {point_step}")
        names.append(c)
        formats.append(order + code)
        offsets.append(offset)
    data = get(msg, "data", b"")
    if not isinstance(data, (bytes, bytearray, memoryview)):
        try:
            data = bytes(bytearray(data))
        except (TypeError, ValueError):
            raise BadRequest(f"{where}.data is not bytes") from None
    need = row_step * height
    if len(data) != need:
        raise BadRequest(f"{where}.data has {len(data)} bytes; row_step x height = {row_step} x {height} = {need}")
    if n == 0:
        return np.zeros((0, 3)), 0
    dt = np.dtype({"names": names, "formats": formats, "offsets": offsets, "itemsize": point_step})
    rows = np.frombuffer(data, dtype=np.uint8).reshape(height, row_step)[:, :width * point_step]
    rec = np.ascontiguousarray(rows).reshape(-1).view(dt)
    points = np.stack([rec[c].astype(np.float64) for c in "xyz"], axis=1)
    nan = np.isnan(points).any(axis=1)
    points = points[~nan]
    if not np.isfinite(points).all():
        raise BadRequest(f"{where}: {int((~np.isfinite(points)).any(axis=1).sum())} point(s) have infinite "
                         "coordinates")
    return points, int(nan.sum())


def _count(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise BadRequest(f"{where} must be a non-negative integer, got {value!r}")
    return int(value)


__all__ = ["BadRequest", "JointSpace", "get", "duration", "duration_seconds", "joint_state_values",
           "trajectory_rows", "pose_values", "compose", "inverse", "object_parts", "part_in_frame",
           "wire_pose_values", "contact_information", "body_types", "point", "clearance_pair", "planner_name",
           "time_waypoints",
           "joint_trajectory", "moveit_joint_limits", "transform_points", "pose_goal", "PLAN_ERROR_CODES", "point_cloud2_points", "POINT_FIELD_TYPES"]
